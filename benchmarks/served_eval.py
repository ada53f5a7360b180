"""Served evaluation throughput vs the inference server's own ceiling (issue 39, item 7).

    .venv/bin/python benchmarks/served_eval.py [--calls 8] [--concurrency 1 2 4] [--run /path/to/project/copy]

Against llama-cpp-python's server (``make llm-server``; the script starts its own in a temporary folder) serving
SmolLM2-135M, with role requests as an evaluation sends them (the ``question_detector`` role's prompt over distinct
agent turns, ``json_object`` + schema, decoding constrained by grammar):

- ``ceiling``: the server alone, raw HTTP requests (no litellm, no client) at each concurrency: calls/s and
  completion tokens/s. The server decodes one request at a time, so the concurrency where calls/s stops rising is
  where the server, not the client, is the bottleneck.
- ``client``: the same requests through the project's client (``LLMClient.map_structured``: litellm, retries,
  validation, accounting) at each concurrency; ``client_overhead_ms`` is the client's own cost per call, measured
  against the mock provider (no server, no sleep).
- ``served_run`` (``--run``, ``--run-wall-s``): the calls/s and tokens/s of a finished served evaluation in a project
  copy, from the per-row role usage of its outputs (provider calls, tokens, summed call latency, wall time).

Results go to stdout and ``benchmarks/results/served_eval/<UTC date>.json``, with the machine's load average: on a
shared 2-core machine every figure moves with what else runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel

ROOT = Path(__file__).resolve().parents[1]
OUT = Path(__file__).parent / "results" / "served_eval"
ROLE = "question_detector"
TURNS = [
    "What is the weekly demand for rye bread?", "READY_TO_MODEL. Maximise weekly profit.",
    "1. How many ovens do you run? 2. How long is one batch?", "Which products must be made every day?",
    "Is overtime allowed, and at what cost?", "What should the plan minimise?",
    "How many loaves fit in one batch? Is that the same for rye?", "Do orders have to be met in full?",
]


def role_messages(n: int, start: int = 0) -> list[list[dict]]:
    """``n`` distinct requests (turn numbers ``start + 1 ...``): no two measurements send the same prompt."""
    from tasks.domains.optimization.context import OPTIMIZATION_CONTEXT
    from tasks.roles.question_detector import SPEC as spec

    return [spec.messages(spec.input_model(turn=f"{TURNS[i % len(TURNS)]} (turn {i + 1})"), OPTIMIZATION_CONTEXT)
            for i in range(start, start + n)]


def _post(base: str, body: dict) -> dict:
    req = urllib.request.Request(f"{base}/chat/completions", data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as resp:
        return json.loads(resp.read())


async def _raw(base: str, messages: list[list[dict]], fmt: dict, max_tokens: int, concurrency: int) -> dict:
    gate = asyncio.Semaphore(concurrency)

    async def one(msgs):
        async with gate:
            started = time.perf_counter()
            body = {"model": "x", "messages": msgs, "max_tokens": max_tokens, "temperature": 0.0,
                    "response_format": fmt}
            reply = await asyncio.to_thread(_post, base, body)
            return time.perf_counter() - started, reply["usage"]

    started = time.perf_counter()
    done = await asyncio.gather(*(one(m) for m in messages))
    return _figures(time.perf_counter() - started, [d[0] for d in done],
                    sum(d[1]["completion_tokens"] for d in done), sum(d[1]["prompt_tokens"] for d in done),
                    len(messages), concurrency)


def _figures(wall: float, latencies: list[float], completion: int, prompt: int, calls: int, concurrency: int) -> dict:
    return {"concurrency": concurrency, "calls": calls, "wall_s": round(wall, 2),
            "calls_per_s": round(calls / wall, 3), "completion_tokens_per_s": round(completion / wall, 2),
            "prompt_tokens_per_s": round(prompt / wall, 1),
            "latency_s_median": round(statistics.median(latencies), 2) if latencies else None}


def through_client(base: str, messages: list[list[dict]], max_tokens: int, concurrency: int) -> dict:
    from tasks.llm.client import LLMClient
    from tasks.llm.records import RoleConfig, RoleFailure
    from tasks.llm.server import SERVED_ROLE
    from tasks.roles.question_detector import SPEC

    client = LLMClient(use_cache=False)
    cfg = RoleConfig.model_validate({**SERVED_ROLE, "api_base": base, "max_tokens": max_tokens,
                                     "max_regenerations": 0, "concurrency": concurrency})
    started = time.perf_counter()
    outs = client.map_structured(role=ROLE, cfg=cfg, messages=messages, schema=SPEC.output_model,
                                 progress=False)
    wall = time.perf_counter() - started
    usage = client.accounting.snapshot()[ROLE]
    figures = _figures(wall, [], usage["completion_tokens"], usage["prompt_tokens"], len(messages), concurrency)
    mean_latency = usage["latency_s"] / max(1, usage["provider_calls"])
    figures.update(parsed=sum(not isinstance(o, RoleFailure) for o in outs), failures=usage["failures"],
                   latency_s_mean=round(mean_latency, 2))
    return figures


class _Answer(BaseModel):
    value: int


def client_overhead_ms(calls: int = 200) -> float:
    """The client's own cost per call: litellm + validation + accounting against the mock provider (no server)."""
    from tasks.llm.client import LLMClient
    from tasks.llm.providers import ensure_registered
    from tasks.llm.providers.mock import MockScript, register
    from tasks.llm.records import RoleConfig

    ensure_registered()
    model = register("served-bench-overhead", MockScript(rule=lambda m: json.dumps({"value": len(m)})))
    client = LLMClient(use_cache=False)
    cfg = RoleConfig(backend="llm", model=model, concurrency=1)
    messages = [[{"role": "user", "content": str(i)}] for i in range(calls)]
    client.map_structured(role="warmup", cfg=cfg, messages=messages[:5], schema=_Answer, progress=False)
    started = time.perf_counter()
    client.map_structured(role="overhead", cfg=cfg, messages=messages, schema=_Answer, progress=False)
    return round((time.perf_counter() - started) / calls * 1000, 2)


def served_run(copy: Path, wall_s: float | None = None) -> dict:
    """calls/s and tokens/s of a finished served evaluation in a project copy, from the per-row role usage its
    outputs keep (``data/eval/swe/rows.jsonl``; ``data/eval/<domain>/episodes.jsonl`` for episode domains): per
    second of summed call time (the server's busy time when calls do not overlap) and, with ``wall_s`` (the stage's
    wall time), per second of wall time."""
    out: dict = {}
    for path in sorted((copy / "data" / "eval").glob("*/*.jsonl")):
        calls = tokens = prompt = 0
        busy = 0.0
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            usage = record.get("usage") or (record.get("episode") or {}).get("usage") or {}
            for row in usage.values():
                calls += int(row.get("calls", 0))
                tokens += int(row.get("completion_tokens", 0))
                prompt += int(row.get("prompt_tokens", 0))
                busy += float(row.get("latency_s", 0.0))
        if not calls:
            continue
        figures = {"provider_calls": calls, "prompt_tokens": prompt, "completion_tokens": tokens,
                   "summed_call_latency_s": round(busy, 1), "calls_per_s_of_call_time": round(calls / busy, 3),
                   "completion_tokens_per_s_of_call_time": round(tokens / busy, 2)}
        if wall_s:
            figures.update(wall_s=wall_s, calls_per_s_of_wall=round(calls / wall_s, 3),
                           completion_tokens_per_s_of_wall=round(tokens / wall_s, 2))
        out[f"{path.parent.name}/{path.name}"] = figures
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=8, help="requests per measurement")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--run", type=Path, default=None, help="a project copy that ran a served evaluation")
    parser.add_argument("--run-wall-s", type=float, default=None, help="that evaluation's wall time (seconds)")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from tasks.llm import server
    from tasks.llm.client import json_object_schema_format
    from tasks.roles.question_detector import SPEC

    if not server.installed():
        print("llama-cpp-python is not installed (pip install -e '.[serve]')", file=sys.stderr)
        return 1
    load_before = os.getloadavg()
    folder = Path(tempfile.mkdtemp(prefix="served-bench-"))
    started = time.perf_counter()
    base = server.start(folder)
    result: dict = {"machine": {"cpus": os.cpu_count(), "loadavg_before": [round(x, 2) for x in load_before],
                                "note": "shared 2-core machine; other agents' jobs ran during the measurement"},
                    "server": {"kind": "llama-cpp-python server", "model": server.SERVED_ROLE["model"],
                               "ready_s": round(time.perf_counter() - started, 2)},
                    "role": ROLE, "max_tokens": args.max_tokens,
                    "client_overhead_ms_per_call": client_overhead_ms()}
    try:
        fmt = json_object_schema_format(SPEC.output_model)
        asyncio.run(_raw(base, role_messages(1, 10_000), fmt, args.max_tokens, 1))  # warm-up, not counted
        result["ceiling"], result["client"] = [], []
        for n, c in enumerate(args.concurrency):  # raw and client alternate, so load changes hit both alike
            result["ceiling"].append(asyncio.run(_raw(base, role_messages(args.calls, 2 * n * args.calls), fmt,
                                                      args.max_tokens, c)))
            result["client"].append(through_client(base, role_messages(args.calls, (2 * n + 1) * args.calls),
                                                   args.max_tokens, c))
    finally:
        server.stop(folder)
    if args.run:
        result["served_run"] = served_run(args.run, args.run_wall_s)
    result["machine"]["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(result, indent=2))
    if not args.no_write:
        OUT.mkdir(parents=True, exist_ok=True)
        path = OUT / f"{datetime.now(UTC):%Y-%m-%d}.json"
        path.write_text(json.dumps(result, indent=2) + "\n")
        print(f"written: {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""LLM client performance: cache-hit cost, concurrent throughput against the mock provider, SmolLM2 load time.

    .venv/bin/python benchmarks/llm_client.py [--calls 1000] [--latency 0.2] [--concurrency 32] [--smollm2]

Targets (issue 3): a cache hit costs <= 2 ms; 1,000 mock calls with 200 ms latency at concurrency 32 finish within
1.25x of the ideal 6.25 s; a SmolLM2 load from the converted safetensors folder takes < 2 s.
Figures go to stdout and benchmarks/out/llm_client.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pydantic import BaseModel

from tasks import store
from tasks.llm.cache import CallCache
from tasks.llm.client import LLMClient
from tasks.llm.providers import ensure_registered
from tasks.llm.records import RoleConfig

OUT = Path(__file__).parent / "out" / "llm_client.json"


class Answer(BaseModel):
    value: int


def _double(messages: list[dict]) -> str:
    return json.dumps({"value": 2 * int(messages[-1]["content"])})


def bench_throughput(calls: int, latency: float, concurrency: int) -> dict:
    from tasks.llm.providers.mock import MockScript, register

    model = register("bench-throughput", MockScript(rule=_double, latency_s=latency))
    client = LLMClient(use_cache=False)
    cfg = RoleConfig(backend="llm", model=model, concurrency=concurrency)
    client.map_structured(role="warmup", cfg=cfg, messages=[[{"role": "user", "content": "0"}]], schema=Answer)
    messages = [[{"role": "user", "content": str(i)}] for i in range(calls)]
    started = time.perf_counter()
    outs = client.map_structured(role="bench", cfg=cfg, messages=messages, schema=Answer, progress=False)
    elapsed = time.perf_counter() - started
    assert outs == [Answer(value=2 * i) for i in range(calls)]
    ideal = calls / concurrency * latency
    return {"calls": calls, "latency_s": latency, "concurrency": concurrency, "elapsed_s": round(elapsed, 3),
            "ideal_s": ideal, "ratio": round(elapsed / ideal, 3), "target_ratio": 1.25, "ok": elapsed <= 1.25 * ideal}


def bench_cache_hit(n: int = 500) -> dict:
    from tasks.llm.providers.mock import MockScript, register

    model = register("bench-cache", MockScript(rule=_double))
    with tempfile.TemporaryDirectory() as tmp:
        client = LLMClient(CallCache(Path(tmp) / "calls.sqlite"))
        cfg = RoleConfig(backend="llm", model=model)
        messages = [[{"role": "system", "content": "double"}, {"role": "user", "content": str(i)}] for i in range(n)]
        client.map_structured(role="fill", cfg=cfg, messages=messages, schema=Answer, progress=False)
        per_call = []
        for msgs in messages:  # one call at a time: the full path a single cached role request takes
            started = time.perf_counter()
            client.map_structured(role="hit", cfg=cfg, messages=[msgs], schema=Answer, progress=False)
            per_call.append(time.perf_counter() - started)
        batch_started = time.perf_counter()
        client.map_structured(role="hit-batch", cfg=cfg, messages=messages, schema=Answer, progress=False)
        batch = (time.perf_counter() - batch_started) / n
        hits = client.accounting.snapshot()["hit"]["cache_hits"]
    assert hits == n
    median = statistics.median(per_call)
    return {"hits": n, "median_ms_single": round(median * 1e3, 3),
            "p95_ms_single": round(sorted(per_call)[int(0.95 * n)] * 1e3, 3),
            "mean_ms_in_batch": round(batch * 1e3, 3), "target_ms": 2.0, "ok": median <= 0.002}


def bench_smollm2() -> dict:
    from tasks.llm.smollm2_weights import convert

    started = time.perf_counter()
    folder = convert()
    convert_s = time.perf_counter() - started
    code = (
        "import time,torch;from transformers import AutoModelForCausalLM,AutoTokenizer;"
        f"t=time.perf_counter();AutoTokenizer.from_pretrained({str(folder)!r});"
        f"AutoModelForCausalLM.from_pretrained({str(folder)!r},dtype=torch.float32);print(time.perf_counter()-t)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    load = float(proc.stdout.split()[-1])
    return {"convert_or_reuse_s": round(convert_s, 2), "load_from_safetensors_s": round(load, 2), "target_s": 2.0,
            "ok": load < 2.0}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--smollm2", action="store_true", help="also time the SmolLM2 load (converts once if needed)")
    args = parser.parse_args()
    ensure_registered()
    figures = {"cache_hit": bench_cache_hit(),
               "throughput": bench_throughput(args.calls, args.latency, args.concurrency)}
    if args.smollm2:
        figures["smollm2"] = bench_smollm2()
    for name, row in figures.items():
        print(f"{name:11s} " + "  ".join(f"{k}={v}" for k, v in row.items()))
    store.atomic_write_json(OUT, figures)
    return 0 if all(row["ok"] for row in figures.values()) else 1


if __name__ == "__main__":
    sys.exit(main())

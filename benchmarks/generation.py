"""Generation speed of the questioner policies: batched ``LocalPolicy.ask_many`` against plain one-at-a-time
``model.generate``, and the evaluate@swe policy workload with one competing CPU-bound process against without.

    .venv/bin/python benchmarks/generation.py [--limit 8] [--max-new-tokens 128] [--batch-size 8] [--repeats 3]
                                              [--cases 8] [--pinned] [--skip-throughput] [--skip-contention]

(a) Throughput. The prompts are the held-out SFT rows' incomplete issues (``data/sft/heldout.jsonl``), else the
project's sample issues masked as construct@swe masks them (``--limit`` of them). The base SmolLM2 (``--adapter``
for a trained one) answers them twice per repeat: ``ask_many`` (batched, sorted by length, KV cache, stopped at the
end of each answer) and a loop of plain ``model.generate`` calls, one prompt each, with the same greedy settings and
``max_new_tokens`` and no stopping criteria. Both count the tokens of what they return (the returned text,
tokenised again), so tokens generated past the end of an answer count for neither. Printed: median seconds and
tokens/s of each, their ratio (target >= 1), and how many answers equal the plain answer cut where ask_many cuts.

(b) Contention. The evaluate@swe policy rows of ``params.yaml`` (``evaluate.swe.methods`` of kind ``policy``; one
whose adapter is missing is left out, the base model always runs) generate for ``--cases`` held-out cases
(``data/cases/swe/cases.jsonl``, else the masked samples) in the stage's batches (``evaluate.swe.batch_size``), each
repeat in a fresh process (``--worker``), so each repeat chooses torch's threads as the stage would. Alone, then
with a ``python -c 'while True: pass'`` process this script starts first and kills by its PID afterwards. Printed:
median generation seconds of each and the slowdown (target <= 2x). ``--pinned`` adds a contended run with torch's
threads pinned to every usable core (``CLARIFYFLOW_TORCH_THREADS``), what torch would take without the choice.

Figures go to ``benchmarks/out/generation.json``. Timings need a machine that is otherwise idle.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "benchmarks" / "out" / "generation.json"
HELDOUT = ROOT / "data" / "sft" / "heldout.jsonl"
CASES = ROOT / "data" / "cases" / "swe" / "cases.jsonl"
SAMPLES = ROOT / "data" / "samples" / "swe" / "issues.jsonl"


def sample_cases():
    from tasks.domains.swe import mask_issue
    from tasks.params import SweConstructParams
    from tasks.swe_samples import load_samples

    cfg = SweConstructParams()
    return [case for issue in load_samples(SAMPLES) for case in mask_issue(issue, cfg)[0]]


def heldout_prompts(limit: int) -> tuple[list[str], str]:
    """Incomplete issues of the held-out SFT rows, else of the masked samples; and where they came from."""
    if HELDOUT.is_file():
        rows = [json.loads(line) for line in HELDOUT.read_text(encoding="utf-8").splitlines() if line.strip()]
        prompts = [r["incomplete_issue"] for r in rows if r.get("incomplete_issue")]
        if prompts:
            return prompts[:limit], str(HELDOUT.relative_to(ROOT))
    prompts = list(dict.fromkeys(c.brief.content for c in sample_cases()))
    return prompts[:limit], f"{SAMPLES.relative_to(ROOT)} (masked)"


def heldout_cases(limit: int):
    from tasks.records import Case
    from tasks.splits import select
    from tasks.store import read_jsonl

    if CASES.is_file():
        cases = select(read_jsonl(CASES, Case), "heldout")
        if cases:
            return sorted(cases, key=lambda c: c.case_id)[:limit], str(CASES.relative_to(ROOT))
    return sample_cases()[:limit], f"{SAMPLES.relative_to(ROOT)} (masked)"


def n_tokens(tokenizer, texts: list[str]) -> int:
    return sum(len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts)


def plain_answers(policy, prompts: list[str], max_new_tokens: int) -> list[str]:
    """One ``model.generate`` per prompt: greedy, the same ``max_new_tokens``, no stopping criteria."""
    import torch

    tok, out = policy.tokenizer, []
    for prompt in prompts:
        enc = tok(policy._render(prompt), return_tensors="pt", add_special_tokens=False).to(policy.model.device)
        with torch.no_grad():
            ids = policy.model.generate(**enc, max_new_tokens=max_new_tokens, do_sample=False,
                                        pad_token_id=tok.pad_token_id)
        out.append(tok.decode(ids[0, enc["input_ids"].shape[1]:], skip_special_tokens=True).strip())
    return out


def throughput(args: argparse.Namespace) -> dict:
    import torch

    from tasks.training.policy import LocalPolicy, cut_answer
    from tasks.training.profiles import SMOLLM2

    prompts, source = heldout_prompts(args.limit)
    policy = LocalPolicy.from_adapter(args.base or SMOLLM2, args.adapter, device=None,
                                      max_new_tokens=args.max_new_tokens, batch_size=args.batch_size, progress=False)
    calls = {"ask_many": lambda: policy.ask_many(prompts),
             "plain": lambda: plain_answers(policy, prompts, args.max_new_tokens)}
    timings: dict[str, list[float]] = {k: [] for k in calls}
    answers: dict[str, list[str]] = {}
    for repeat in range(args.repeats):
        for name in list(calls) if repeat % 2 == 0 else list(calls)[::-1]:  # alternate the order against drift
            started = time.perf_counter()
            answers[name] = calls[name]()
            timings[name].append(time.perf_counter() - started)
    batched, plain = answers["ask_many"], answers["plain"]
    s = policy.settings
    tokens = {"ask_many": n_tokens(policy.tokenizer, batched), "plain": n_tokens(policy.tokenizer, plain)}
    median = {k: statistics.median(v) for k, v in timings.items()}
    rate = {k: tokens[k] / median[k] if median[k] > 0 else 0.0 for k in median}
    same = sum(b == cut_answer(p, s.stop, s.stop_at_list_end) for b, p in zip(batched, plain))
    result = {
        "prompts": len(prompts), "source": source, "model": policy.name, "max_new_tokens": args.max_new_tokens,
        "batch_size": args.batch_size, "repeats": args.repeats, "torch_threads": torch.get_num_threads(),
        "seconds": {k: [round(x, 3) for x in v] for k, v in timings.items()},
        "median_seconds": {k: round(v, 3) for k, v in median.items()}, "tokens": tokens,
        "tokens_per_second": {k: round(v, 2) for k, v in rate.items()},
        "ratio": round(rate["ask_many"] / rate["plain"], 3) if rate["plain"] else None, "target_ratio": 1.0,
        "answers_equal_to_plain_cut": same,
    }
    print(f"(a) {len(prompts)} prompts from {source}, {policy.name}, max_new_tokens {args.max_new_tokens}, "
          f"batch {args.batch_size}, {result['torch_threads']} torch threads, {args.repeats} repeats")
    for k in ("ask_many", "plain"):
        print(f"    {k:9s} median {median[k]:7.2f} s  {tokens[k]:6d} tokens  {rate[k]:7.1f} tokens/s")
    print(f"    ratio {result['ratio']} (target >= 1); {same}/{len(prompts)} answers equal the plain answer cut "
          "where ask_many cuts")
    return result


# ---- (b) contention ------------------------------------------------------------------------------------------------


def policy_entries() -> tuple[list[dict], list[str], int]:
    """evaluate@swe's policy rows (name, options), the ones left out (adapter missing), and the stage batch size."""
    from tasks.evaluation.question_inputs import QuestionSettings
    from tasks.params import load_params

    settings = QuestionSettings.model_validate(load_params(ROOT / "params.yaml").evaluate["swe"])
    rows, skipped = [], []
    for entry in settings.methods:
        if entry.kind != "policy":
            continue
        adapter = entry.options.get("adapter")
        if adapter and not (ROOT / adapter / "adapter_config.json").is_file():
            skipped.append(f"{entry.name} ({adapter} missing)")
            continue
        rows.append({"name": entry.name, "options": dict(entry.options)})
    return rows, skipped, settings.batch_size


def worker(spec_path: Path) -> int:
    """One evaluate@swe policy workload in this process: every policy row over the cases, in the stage's batches."""
    import torch

    from tasks.clarifiers.question_methods import QuestionContext, build_method
    from tasks.records import Case

    spec = json.loads(spec_path.read_text(encoding="utf-8"))
    cases = [Case.model_validate(c) for c in spec["cases"]]
    ctx = QuestionContext(root=ROOT)
    load = generate = 0.0
    texts: list[str] = []
    started = time.perf_counter()
    for row in spec["methods"]:
        options = {**row["options"], **spec["overrides"]}
        method = build_method(row["name"], "policy", options, ctx)
        t0 = time.perf_counter()
        method._policy = method._load()
        load += time.perf_counter() - t0
        t0 = time.perf_counter()
        for start in range(0, len(cases), spec["batch_size"]):
            texts += [c.text for c in method.complete(cases[start:start + spec["batch_size"]])]
        generate += time.perf_counter() - t0
    print(json.dumps({"load_s": load, "generate_s": generate, "wall_s": time.perf_counter() - started,
                      "threads": torch.get_num_threads(),
                      "digest": hashlib.sha256(json.dumps(texts).encode()).hexdigest()[:16]}))
    return 0


def run_worker(spec: Path, threads: str | None, timeout_s: float) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1"}
    env.pop("CLARIFYFLOW_TORCH_THREADS", None)
    if threads:
        env["CLARIFYFLOW_TORCH_THREADS"] = threads
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", str(spec)], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout_s, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"worker failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def contended(spec: Path, threads: str | None, timeout_s: float) -> dict:
    """The workload while one busy-looping process runs (started first, killed by its PID afterwards)."""
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(1.0)  # let it take its core before the worker chooses its threads
        return run_worker(spec, threads, timeout_s)
    finally:
        spinner.kill()
        spinner.wait()


def contention(args: argparse.Namespace) -> dict:
    from tasks.training.threads import usable_cores

    rows, skipped, batch_size = policy_entries()
    cases, source = heldout_cases(args.cases)
    overrides = {"max_new_tokens": args.max_new_tokens_b} if args.max_new_tokens_b else {}
    with tempfile.TemporaryDirectory(prefix="generation-bench-") as tmp:
        spec = Path(tmp) / "spec.json"
        spec.write_text(json.dumps({"cases": [c.model_dump(mode="json") for c in cases], "methods": rows,
                                    "batch_size": batch_size, "overrides": overrides}), encoding="utf-8")
        conditions = {"alone": lambda: run_worker(spec, args.threads, args.timeout),
                      "contended": lambda: contended(spec, args.threads, args.timeout)}
        if args.pinned:
            conditions["contended_pinned"] = lambda: contended(spec, str(usable_cores()), args.timeout)
        runs: dict[str, list[dict]] = {k: [] for k in conditions}
        for repeat in range(args.repeats):
            order = list(conditions) if repeat % 2 == 0 else list(conditions)[::-1]
            for name in order:
                runs[name].append(conditions[name]())
                print(f"    repeat {repeat + 1} {name:16s} generate {runs[name][-1]['generate_s']:7.2f} s "
                      f"({runs[name][-1]['threads']} threads)", flush=True)
    median = {k: statistics.median(r["generate_s"] for r in v) for k, v in runs.items()}
    slowdown = {k: round(median[k] / median["alone"], 3) if median["alone"] else None for k in median if k != "alone"}
    result = {
        "cases": len(cases), "source": source, "methods": [r["name"] for r in rows], "left_out": skipped,
        "batch_size": batch_size, "overrides": overrides, "repeats": args.repeats, "usable_cores": usable_cores(),
        "runs": runs, "median_generate_seconds": {k: round(v, 3) for k, v in median.items()},
        "slowdown": slowdown, "target_slowdown": 2.0,
        "same_answers": len({r["digest"] for v in runs.values() for r in v}) == 1,
    }
    print(f"(b) {len(cases)} cases from {source}, policies {', '.join(result['methods'])}"
          + (f" (left out: {', '.join(skipped)})" if skipped else "") + f", stage batch {batch_size}")
    for k, v in median.items():
        print(f"    {k:16s} median generate {v:7.2f} s" + (f"  slowdown {slowdown[k]}x (target <= 2)"
                                                           if k in slowdown else ""))
    print(f"    same answers in every run: {result['same_answers']}")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=8, help="(a) prompts")
    parser.add_argument("--max-new-tokens", type=int, default=128, help="(a) new tokens per answer")
    parser.add_argument("--batch-size", type=int, default=8, help="(a) ask_many batch size")
    parser.add_argument("--base", default=None, help="(a) base model (default: the embedded SmolLM2)")
    parser.add_argument("--adapter", default=None, help="(a) a LoRA adapter folder (default: none)")
    parser.add_argument("--cases", type=int, default=8, help="(b) held-out cases per policy")
    parser.add_argument("--max-new-tokens-b", type=int, default=None,
                        help="(b) override the policy rows' max_new_tokens (default: as in params.yaml)")
    parser.add_argument("--threads", default=None, help="(b) pin CLARIFYFLOW_TORCH_THREADS (default: auto)")
    parser.add_argument("--pinned", action="store_true", help="(b) also a contended run pinned to every core")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=1800.0, help="(b) seconds per worker run")
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--skip-contention", action="store_true")
    parser.add_argument("--worker", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if args.worker is not None:
        return worker(args.worker)
    from tasks import store
    from tasks.training.threads import usable_cores

    out: dict = {"cpu_count": os.cpu_count(), "usable_cores": usable_cores()}
    if not args.skip_throughput:
        out["throughput"] = throughput(args)
    if not args.skip_contention:
        out["contention"] = contention(args)
    store.atomic_write_json(OUT, out)
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

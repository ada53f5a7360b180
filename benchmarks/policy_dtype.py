"""In which dtype a trained policy should generate: the SFT policy's greedy answers to the held-out SWE issues, as
evaluate@swe asks them (batches of 8, 128 new tokens, stop at the list's end), in float32 and in bfloat16, each in a
fresh process on every core and again on one thread, with the seconds, the answers' mean length, how many answers the
two dtypes share and how many each dtype keeps when the thread count changes (the generation threads follow the
machine's load, ``tasks/training/threads.py``).

    .venv/bin/python benchmarks/policy_dtype.py [--rows data/sft/heldout.jsonl] [--adapter data/models/sft/adapter]
        [--out benchmarks/results/policy_dtype/dtype.json]

Needs a finished ``make run`` (the rows and the adapter). Run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CELL = r"""
import json, sys, time
from tasks.training.policy import LocalPolicy
rows, adapter, dtype = sys.argv[1], sys.argv[2], sys.argv[3]
issues = [json.loads(line)["incomplete_issue"] for line in open(rows)]
policy = LocalPolicy.from_adapter(None, adapter, dtype=dtype, max_new_tokens=128, batch_size=8, progress=False)
start = time.perf_counter()
answers = policy.ask_many(issues)
seconds = time.perf_counter() - start
tokens = [len(policy.tokenizer(a)["input_ids"]) for a in answers]
print(json.dumps({"dtype": dtype, "seconds": round(seconds, 1), "answers": answers,
                  "mean_answer_tokens": round(sum(tokens) / len(tokens), 1)}))
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="data/sft/heldout.jsonl")
    parser.add_argument("--adapter", default="data/models/sft/adapter")
    parser.add_argument("--out", default="benchmarks/results/policy_dtype/dtype.json")
    args = parser.parse_args(argv)
    cells, one_thread = {}, {}
    for dtype in ("float32", "bfloat16"):
        for threads, into in ((None, cells), ("1", one_thread)):
            env = {**os.environ, **({"CLARIFYFLOW_GENERATE_THREADS": threads} if threads else {})}
            proc = subprocess.run([sys.executable, "-c", CELL, args.rows, args.adapter, dtype], cwd=ROOT, check=True,
                                  capture_output=True, text=True, env=env)
            into[dtype] = json.loads(proc.stdout.strip().splitlines()[-1])
            print(f"{dtype}, {threads or 'every'} thread(s): {into[dtype]['seconds']} s, "
                  f"{into[dtype]['mean_answer_tokens']} tokens per answer")
    same = sum(a == b for a, b in zip(cells["float32"]["answers"], cells["bfloat16"]["answers"]))
    result = {
        "what": "SFT policy, greedy answers to the held-out SWE issues (batch 8, 128 new tokens), 2 cores, alone",
        "cases": len(cells["float32"]["answers"]),
        "seconds": {d: c["seconds"] for d, c in cells.items()},
        "speedup": round(cells["float32"]["seconds"] / cells["bfloat16"]["seconds"], 2),
        "mean_answer_tokens": {d: c["mean_answer_tokens"] for d, c in cells.items()},
        "same_answers": same,
        "one_thread_seconds": {d: c["seconds"] for d, c in one_thread.items()},
        "same_answers_on_one_thread": {d: sum(a == b for a, b in zip(cells[d]["answers"], one_thread[d]["answers"]))
                                       for d in cells},
    }
    out = ROOT / args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "what"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

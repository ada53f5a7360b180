"""The SFT policy's greedy answer against its samples at several temperatures, on GRPO's own training prompts.

    .venv/bin/python benchmarks/sampling_gap.py [--adapter data/models/sft/adapter] [--prompts 16] [--samples 4]
        [--temperatures 0.5,0.7,1.0] [--max-new-tokens 96] [--out FILE]

GRPO raises the expected staged reward of *sampled* completions; the held-out curve and evaluate@swe read the
*greedy* answer. Where the greedy answer already beats the mean of the samples at every temperature, an update
that lifts good samples above bad ones need not move the greedy answer at all. This script measures that gap on the
prompts the ``grpo`` stage draws (the same seeded choice from ``data/sft/train.jsonl``), scoring every answer alone
(``RewardConfig.as_evaluated``) with the local judges: per temperature the mean total, the mean within-prompt
standard deviation of the total over the samples (the signal a group of that size carries), the share of prompts
whose samples all score alike (no advantage), the questions per answer, and the wall time. Figures go to stdout and
``--out`` (JSON).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--adapter", type=Path, default=ROOT / "data/models/sft/adapter")
    p.add_argument("--train", type=Path, default=ROOT / "data/sft/train.jsonl")
    p.add_argument("--params", type=Path, default=ROOT / "params.yaml")
    p.add_argument("--prompts", type=int, default=16, help="first N of GRPO's seeded prompt order")
    p.add_argument("--samples", type=int, default=4)
    p.add_argument("--temperatures", default="0.5,0.7,1.0")
    p.add_argument("--top-p", type=float, default=0.9)
    p.add_argument("--max-new-tokens", type=int, default=96)
    p.add_argument("--seed", type=int, default=0, help="the profile seed GRPO orders its prompts with")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks/out/sampling_gap.json")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from tasks.params import load_params
    from tasks.rewards.weights import weights_at
    from tasks.sftdata import SftRow
    from tasks.store import read_jsonl
    from tasks.training.heldout import evaluated_reward, prompts_of, score_answers
    from tasks.training.policy import LocalPolicy

    cfg = load_params(args.params)
    reward = evaluated_reward(cfg, weights_at(ROOT / cfg.sft_data.weights))
    rows = read_jsonl(args.train, SftRow)
    # flows/train.py: _grpo draws its prompts in this order
    rows = sorted(rows, key=lambda r: hashlib.sha256(f"{args.seed}:{r.case_id}".encode()).hexdigest())[: args.prompts]
    prompts = prompts_of(rows)
    issues = [p.incomplete_issue for p in prompts]
    policy = LocalPolicy.from_adapter(None, args.adapter, device=None, max_new_tokens=args.max_new_tokens,
                                      top_p=args.top_p, batch_size=32, progress=False)
    started = time.monotonic()
    greedy = score_answers(reward, prompts, policy.ask_many(issues), step=0)
    result: dict = {"adapter": str(args.adapter.relative_to(ROOT)) if args.adapter.is_relative_to(ROOT)
                    else str(args.adapter), "prompts": len(prompts), "samples": args.samples,
                    "max_new_tokens": args.max_new_tokens, "top_p": args.top_p, "backend": "local judges",
                    "greedy": {"total": greedy.total, "questions": greedy.questions, "stages": greedy.stages,
                               "seconds": round(time.monotonic() - started, 1)},
                    "sampled": {}}
    print(f"{len(prompts)} training prompts, {args.samples} samples each, {args.max_new_tokens} new tokens")
    print("| decoding | total | within-prompt std | prompts with no spread | questions | s |")
    print("|---|---:|---:|---:|---:|---:|")
    g = result["greedy"]
    print(f"| greedy | {g['total']:.3f} | - | - | {g['questions']:.2f} | {g['seconds']} |")
    for temperature in (float(t) for t in args.temperatures.split(",")):
        started = time.monotonic()
        points = []
        for k in range(args.samples):
            policy.settings = policy.settings.model_copy(update={"greedy": False, "temperature": temperature,
                                                                 "seed": 1000 * k})
            points.append(score_answers(reward, prompts, policy.ask_many(issues), step=k))
        spreads = [statistics.pstdev([p.per_case[c] for p in points]) for c in points[0].per_case]
        found = {"total": statistics.mean(p.total for p in points),
                 "within_prompt_std": statistics.mean(spreads),
                 "no_spread_share": sum(s == 0 for s in spreads) / len(spreads),
                 "questions": statistics.mean(p.questions for p in points),
                 "stages": {s: statistics.mean(p.stages[s] for p in points) for s in points[0].stages},
                 "seconds": round(time.monotonic() - started, 1)}
        result["sampled"][str(temperature)] = found
        print(f"| T {temperature} | {found['total']:.3f} | {found['within_prompt_std']:.3f} | "
              f"{found['no_spread_share']:.2f} | {found['questions']:.2f} | {found['seconds']} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Greedy held-out reading of one or more adapters, as the ``grpo`` stage's held-out curve reads a point.

    .venv/bin/python benchmarks/heldout_greedy.py ADAPTER [ADAPTER ...] [--max-new-tokens 128] [--limit N] [--out FILE]

Each adapter (an SFT adapter, or a GRPO adapter that stacks on one) answers the held-out SFT rows
(``data/sft/heldout.jsonl``) greedily; the staged reward scores every answer alone (``RewardConfig.as_evaluated``).
Printed per adapter: the gated total, each stage, questions per answer and the cases scoring 0; with two or more
adapters, each later one against the first, paired by case, with a 95% bootstrap interval. Used to pick how many
SFT steps leave GRPO room to learn (issue 22: ``benchmarks/results/grpo_long/NOTES.md``). Figures and answers go to
``--out``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("adapters", type=Path, nargs="+")
    p.add_argument("--heldout", type=Path, default=ROOT / "data/sft/heldout.jsonl")
    p.add_argument("--params", type=Path, default=ROOT / "params.yaml")
    p.add_argument("--max-new-tokens", type=int, default=128)
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks/out/heldout_greedy.json")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from tasks.params import load_params
    from tasks.rewards.weights import weights_at
    from tasks.sftdata import SftRow
    from tasks.store import read_jsonl
    from tasks.training.heldout import evaluated_reward, paired_interval, prompts_of, score_answers
    from tasks.training.policy import LocalPolicy

    cfg = load_params(args.params)
    reward = evaluated_reward(cfg, weights_at(ROOT / cfg.sft_data.weights))
    rows = read_jsonl(args.heldout, SftRow)[: args.limit]
    prompts = prompts_of(rows)
    result: dict = {"cases": len(prompts), "issues": len({p.source_id for p in prompts}),
                    "max_new_tokens": args.max_new_tokens, "adapters": []}
    points = []
    for adapter in args.adapters:
        started = time.monotonic()
        policy = LocalPolicy.from_adapter(None, adapter, device=None, max_new_tokens=args.max_new_tokens,
                                          batch_size=32, progress=False)
        answers = policy.ask_many([p.incomplete_issue for p in prompts])
        point = score_answers(reward, prompts, answers, step=0)
        points.append(point)
        result["adapters"].append({
            "adapter": str(adapter), "seconds": round(time.monotonic() - started, 1), "total": point.total,
            "stages": point.stages, "questions": point.questions,
            "zeros": sum(1 for v in point.per_case.values() if v == 0), "per_case": point.per_case,
            "answers": {p.case_id: a for p, a in zip(prompts, answers)}})
    ids = sorted(points[0].per_case)
    for entry, point in zip(result["adapters"][1:], points[1:]):
        entry["vs_first"] = paired_interval([point.per_case[i] for i in ids],
                                            [points[0].per_case[i] for i in ids]).model_dump()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    print(f"held-out: {result['cases']} cases of {result['issues']} issues, greedy, {args.max_new_tokens} new tokens")
    print("| adapter | total | questions | cases at 0 | " + " | ".join(points[0].stages) + " | vs first [95% CI] |")
    print("|---|---:|---:|---:|" + "---:|" * len(points[0].stages) + "---|")
    for entry in result["adapters"]:
        gain = entry.get("vs_first")
        shown = f"{gain['mean']:+.3f} [{gain['low']:+.3f}, {gain['high']:+.3f}]" if gain else "-"
        print(f"| {entry['adapter']} | {entry['total']:.3f} | {entry['questions']:.2f} | {entry['zeros']} | "
              + " | ".join(f"{v:.3f}" for v in entry["stages"].values()) + f" | {shown} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Staged reward of the base, SFT and GRPO policies on the held-out SFT rows (issues never trained on).

The held-out rows are construct@swe's held-out split (``data/sft/heldout.jsonl`` keeps each case's split); a policy
whose adapter records one of those issues among its training source ids is refused, as evaluate@swe refuses it.

    .venv/bin/python benchmarks/policy_reward.py [--limit 15] [--max-new-tokens 96] [--bootstrap 1000]

Each policy answers every held-out incomplete issue (greedy); the staged reward (params.yaml: reward, local judges
per roles.*) scores the answers. Also scored: the question_writer's reference targets, as an upper reference.
Printed: mean total and each stage's mean with a 95% bootstrap interval over issues, the share of answers with at
least one parseable question. Figures go to benchmarks/out/policy_reward.json.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tasks import store  # noqa: E402

OUT = ROOT / "benchmarks" / "out" / "policy_reward.json"


def interval(values: list[float], n: int, seed: int) -> tuple[float, float, float]:
    rng = random.Random(seed)
    means = sorted(sum(rng.choice(values) for _ in values) / len(values) for _ in range(n))
    return sum(values) / len(values), means[int(0.025 * n)], means[int(0.975 * n) - 1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=15)
    parser.add_argument("--max-new-tokens", type=int, default=96)
    parser.add_argument("--bootstrap", type=int, default=1000)
    args = parser.parse_args(argv)
    from tasks.errors import InputError
    from tasks.params import load_params
    from tasks.rewards.staged import StagedReward
    from tasks.rewards.weights import weights_at
    from tasks.sftdata import SftRow
    from tasks.splits import check_no_overlap
    from tasks.training.policy import LocalPolicy
    from tasks.training.profiles import get_profile

    heldout = ROOT / "data" / "sft" / "heldout.jsonl"
    if not heldout.is_file():
        print(f"no held-out rows: {heldout} (run dvc repro sft_data)")
        return 2
    cfg = load_params(ROOT / "params.yaml")
    profile = get_profile(cfg.training.profile, cfg.training.overrides)
    rows = store.read_jsonl(heldout, SftRow)[: args.limit]
    if any(r.split != "heldout" for r in rows):
        print(f"{heldout} holds rows outside the held-out split (rerun dvc repro sft_data)")
        return 2
    weights_path = ROOT / cfg.sft_data.weights
    staged = StagedReward(cfg.reward_config(), weights_at(weights_path))
    policies = {"base": None, "sft": ROOT / "data/models/sft/adapter", "grpo": ROOT / "data/models/grpo/adapter"}
    answers: dict[str, list[str]] = {"reference (question_writer)": [r.completion[0]["content"] for r in rows]}
    timings: dict[str, float] = {}
    for name, adapter in policies.items():
        if adapter is not None and not adapter.is_dir():
            print(f"skip {name}: {adapter.relative_to(ROOT)} missing")
            continue
        if adapter is not None:  # a held-out issue among the adapter's training ids stops the benchmark
            try:
                trained = check_no_overlap(name, adapter, {r.instance_id for r in rows})
            except InputError as err:
                print(f"error: {err}")
                return 2
            print(f"{name}: trained on {trained['trained_on_source_ids']} issues, overlap with these rows 0")
        started = time.perf_counter()
        policy = LocalPolicy.from_adapter(profile.model, adapter, dtype=profile.dtype, device=None,
                                          max_new_tokens=args.max_new_tokens)
        answers[name] = policy.ask_many([r.incomplete_issue for r in rows])
        timings[name] = round(time.perf_counter() - started, 1)
    results: dict[str, dict] = {}
    print(f"held-out issues: {len(rows)}; reward: {cfg.reward.partial_credit} gating, local judges; 95% bootstrap CIs")
    for name, texts in answers.items():
        scored = staged.score([{"completion": t, "incomplete_issue": r.incomplete_issue, "full_issue": r.full_issue,
                                "hints": r.hints, "siblings": []} for t, r in zip(texts, rows)])
        row = {"total": interval([b.total for b in scored], args.bootstrap, 0),
               "with_questions": sum(1 for b in scored if b.questions) / len(scored)}
        for stage in staged.stage_names:
            vals = [b.values[stage] or 0.0 for b in scored]
            row[stage] = interval(vals, args.bootstrap, 0)
        results[name] = row
        cells = "  ".join(f"{k} {v[0]:.3f} [{v[1]:.3f}, {v[2]:.3f}]" for k, v in row.items() if isinstance(v, tuple))
        print(f"{name:28s} answers with questions {row['with_questions']:.2f}  {cells}")
    store.atomic_write_json(OUT, {"rows": len(rows), "results": results, "generation_seconds": timings,
                                  "samples": {k: v[:2] for k, v in answers.items()}})
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

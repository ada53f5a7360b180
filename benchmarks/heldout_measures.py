"""Re-read a stored GRPO held-out curve with the measures beside the gated total: ungated, paper partial credit and
the gate pass rates (``tasks.training.heldout.MEASURES``), SFT (step 0) against every later step, paired by case.

    .venv/bin/python benchmarks/heldout_measures.py benchmarks/results/grpo_cpu_long/heldout_curve.json

Curves written before the measures existed keep each case's stage values, which is all the measures need: a case
passes a gate when its value reaches the threshold of params.yaml's ``reward`` (a case whose every stage value is 0
asked nothing and passes none). The script checks that these gates give back each case's stored gated total before
it prints anything. The table goes to stdout, the figures next to the curve (``heldout_measures.json``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tasks.rewards.config import RewardConfig  # noqa: E402
from tasks.rewards.staged import PASS_TOLERANCE, gated_total  # noqa: E402
from tasks.training.heldout import (  # noqa: E402
    MEASURES,
    HeldoutCurve,
    HeldoutPoint,
    case_measures,
    comparison,
)


def backfill(point: HeldoutPoint, cfg: RewardConfig) -> HeldoutPoint:
    """``point`` with its measures and gates rebuilt from the per-case stage values."""
    if point.per_case_measures:
        return point
    order = list(cfg.order)
    measures: dict[str, dict[str, float]] = {m: {} for m in MEASURES}
    gates = {s: {} for s in order if cfg.thresholds.get(s) > 0}
    for case, total in point.per_case.items():
        values = {s: point.per_case_stages[s][case] for s in order}
        asked = any(v > 0 for v in values.values())
        passed = {s: asked and values[s] >= cfg.thresholds.get(s) - PASS_TOLERANCE for s in order}
        stored = gated_total(order, values, passed, cfg.weights, cfg.partial_credit) if asked else 0.0
        if abs(stored - total) > 1e-6:
            raise SystemExit(f"step {point.step}, case {case}: the gates rebuilt from the stage values give a gated "
                             f"total {stored:.6f}, the curve stored {total:.6f} (other reward settings?)")
        for m, v in case_measures(cfg, values, passed).items():
            measures[m][case] = v
        for s in gates:
            gates[s][case] = passed[s]
    n = max(len(point.per_case), 1)
    return point.model_copy(update={"measures": {m: sum(v.values()) / n for m, v in measures.items()},
                                    "per_case_measures": measures, "per_case_passed": gates})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("curve", type=Path)
    parser.add_argument("--params", type=Path, default=ROOT / "params.yaml")
    args = parser.parse_args(argv)

    import yaml

    cfg = RewardConfig.model_validate(yaml.safe_load(args.params.read_text())["reward"])
    curve = HeldoutCurve.model_validate(json.loads(args.curve.read_text()))
    curve = curve.model_copy(update={"points": [backfill(p, cfg) for p in curve.points]})
    first = curve.points[0]
    by_step = {p.step: comparison(curve.model_copy(update={"points": [first, p]})) for p in curve.points[1:]}
    names = list(next(iter(by_step.values()))["gain"])
    print(f"{curve.cases} held-out cases from {curve.issues} issues; gain = step − step {first.step} (SFT), paired "
          "by case, 95% bootstrap interval")
    print("| measure | SFT | " + " | ".join(f"step {s}" for s in by_step) + " |")
    print("|---|---|" + "---|" * len(by_step))
    for name in names:
        sft = next(iter(by_step.values()))["sft"][name]
        cells = [f"{c['grpo'][name]:.3f} ({c['gain'][name]['mean']:+.3f} [{c['gain'][name]['low']:+.3f}, "
                 f"{c['gain'][name]['high']:+.3f}])" for c in by_step.values()]
        print(f"| {name} | {sft:.3f} | " + " | ".join(cells) + " |")
    out = args.curve.with_name("heldout_measures.json")
    out.write_text(json.dumps({str(s): c for s, c in by_step.items()}, indent=1, sort_keys=True) + "\n")
    print(f"wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

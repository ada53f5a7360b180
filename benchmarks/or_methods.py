"""The methods table on the published OR-Clarify cases with the local backends (issue 7).

    .venv/bin/python benchmarks/or_methods.py [--cases ../shared/data/or-clarify] [--repeats 3] [--policies]
        [--methods freeqa:open,mc:mc,...] [--concurrency 2] [--split untuned|tuned|all]

``--split`` (default ``untuned``): the local slot-hit judge's weights and thresholds and the open user's threshold
were set looking at the published cases 1-50 (``benchmarks/slot_hit_fidelity.py``), so the table is reported on
cases 51-100, which nothing was tuned on; ``tuned`` runs 1-50, ``all`` the 100.

Every method x protocol of ``params.yaml: evaluate.optimization.methods`` (the trained-policy rows only with
``--policies``, since they need ``data/models/*/adapter`` and SmolLM2 generation), K repeats, T_max 20, every role
local. Writes ``benchmarks/out/or_methods/`` (summary.json, report.md, recovery.json, recovery.png) and prints the
headline columns, plus ``RecoveryAUC``: the mean of the All-Slot recovery curve over q = 0..20 cumulative atomic
questions (recovery.json; past a curve's end its last value), the one printed column that depends on the order of
the questions, not only on which were asked.
These are local-backend numbers: they measure this toolkit's offline agents against its offline
simulated user and judge, not the paper's LLM results.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "benchmarks" / "out" / "or_methods"
SPLITS = {"untuned": range(51, 101), "tuned": range(1, 51), "all": range(1, 101)}
"""Published case numbers per split: the slot-hit judge was tuned on 1-50 (benchmarks/slot_hit_fidelity.py)."""
COLUMNS = ("RunCount", "AllSlotExactRestoreRate", "CoreExactRestoreRate", "WeightedSlotScore_macro",
           "AtomicQuestionsPerRun", "AverageTurns", "SilentAssumptionsPerRun", "PrematureStopRate", "RecoveryAUC")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=str(ROOT.parent / "shared" / "data" / "or-clarify"))
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--policies", action="store_true", help="include the trained-policy rows")
    parser.add_argument("--methods", default=None, help="name:protocol,... (default: params.yaml's list)")
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--split", choices=sorted(SPLITS), default="untuned",
                        help="untuned: cases 51-100 (default); tuned: 1-50 (the slot-hit thresholds were set on "
                             "them); all")
    parser.add_argument("--personas", default="cooperative",
                        help="simulated-user personas: name[:probability],... (first: cooperative; docs/personas.md)")
    args = parser.parse_args()

    from tasks.domains import domain_context
    from tasks.evaluation.evaluate import play, write_outputs
    from tasks.evaluation.runs import EvalSettings, episode_store, load_cases
    from tasks.params import load_params

    params = load_params(ROOT / "params.yaml")
    base = dict(params.evaluate["optimization"])
    if args.methods:
        merged: dict[str, list[str]] = {}  # one row per name, its protocols in the order given
        for m in args.methods.split(","):
            merged.setdefault(m.split(":")[0], []).append(m.split(":")[1])
        methods = [{"name": n, "protocols": p} for n, p in merged.items()]
    else:
        methods = [m for m in base["methods"] if args.policies or (m.get("method") or m["name"]) != "policy"]
    settings = EvalSettings(**{**base, "cases": args.cases, "methods": methods, "repeats": args.repeats,
                               "limit": args.limit, "case_ids": None, "concurrency": args.concurrency,
                               "task_runner": "serial", "persona_methods": None, "persona_repeats": None,
                               "personas": [{"name": p.split(":")[0], **({"probability": float(p.split(":")[1])}
                                                                         if ":" in p else {})}
                                            for p in args.personas.split(",")]})
    cases = load_cases(Path(args.cases), case_ids=[f"orclarify_{n:03d}" for n in SPLITS[args.split]],
                       limit=args.limit)
    store = episode_store(ROOT / ".cache" / "eval" / "bench-or-methods")
    started = time.perf_counter()
    domain = domain_context("optimization")  # the published OR-Clarify cases
    results, stats = play(cases, settings, params.roles, store, domain=domain, runner="serial",
                          progress=lambda i, n, *_: i % 100 == 0 and print(f"{i}/{n} episodes", file=sys.stderr))
    print(file=sys.stderr)
    elapsed = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as tmp:
        summary = write_outputs(Path(tmp), results, cases, settings, params.roles, domain=domain,
                                source=f"published OR-Clarify cases, split {args.split} "
                                       f"({SPLITS[args.split].start}-{SPLITS[args.split].stop - 1}; "
                                       "slot-hit thresholds tuned on 1-50)")
        OUT.mkdir(parents=True, exist_ok=True)
        for name in ("summary.json", "report.md", "recovery.json", "recovery.png", "run_config.json",
                     "frontier.json", "frontier.png", "episodes.jsonl", "robustness.json", "robustness.png"):
            if (Path(tmp) / name).exists():  # robustness: only with more than one persona
                shutil.copy(Path(tmp) / name, OUT / name)
    print(f"{len(results)} episodes ({stats.computed} played, {stats.reused} from the store) in {elapsed:.0f} s")
    print("row".ljust(28) + "".join(c[:14].rjust(16) for c in COLUMNS))
    for row, metrics in [*summary["rows"].items(), *summary["reference_rows"].items()]:  # ranked, then references
        label = row + (" (reference)" if row in summary["reference_rows"] else "")
        print(label.ljust(28) + "".join(_fmt(metrics.get(c)).rjust(16) for c in COLUMNS))
    (OUT / "timing.json").write_text(json.dumps({"split": args.split, "cases": [c.case_id for c in cases][:1]
                                                 + [c.case_id for c in cases][-1:],
                                                 "episodes": len(results), "played": stats.computed,
                                                 "seconds": round(elapsed, 1)}, indent=1) + "\n")
    return 0


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    return "-" if value is None else str(value)


if __name__ == "__main__":
    sys.exit(main())

"""question_analysis on the CLARITI workbook's published lists (CLARITI RQ2): the answerability-by-position curve of
CLARITI (GRPO), GPT-5 and GPT-5-nano, answerability by strategy tag, and the separating model.

    .venv/bin/python benchmarks/question_answerability.py [--data ../shared/data/clariti/data.xlsx] [--limit N]
            [--from-table .cache/bench/question_answerability/questions.csv]

Every question of the three lists for rewrite 3 is judged with the local ``answerability_judge`` (full issue +
hints) and ``question_classifier`` and tagged by the local ``strategy_tagger``, exactly as the question_analysis stage
does (``tasks.analysis.stage.run`` with ``use_workbook: always`` and no evaluate@swe rows). These are this project's
local rule-based measurements, not the paper's judgements. About 25 minutes on 2 busy cores the first time (the
embeddings are cached after that); ``--from-table`` recomputes the findings from a saved question table in seconds.

The full folder (questions.csv holds workbook text) goes to .cache/bench/question_answerability/ (never into the
repository); the numbers-only findings.json and the figures go to benchmarks/out/question_answerability/.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WORK = ROOT / ".cache" / "bench" / "question_answerability"
OUT = ROOT / "benchmarks" / "out" / "question_answerability"
NUMBERS = ("findings.json", "by_position.png", "by_strategy.png", "shap.png")
"""What is copied out of the work folder: aggregates and figures only, no question text."""


def from_table(table: Path, cfg, out: Path) -> None:
    """The findings, figures and findings.json again from a saved questions.csv (no judging)."""
    import pandas as pd

    from tasks.analysis import findings, plots
    from tasks.store import atomic_write_json

    frame = pd.read_csv(table).astype({"position": int})
    frame = frame.where(frame.notna(), None)
    old = json.loads((table.parent / "findings.json").read_text())
    label = "; ".join(f"{s}: {b}" for s, b in sorted(old["backends"].items()))
    props = findings.by_property(frame)
    doc = {**old, "by_property": props, "by_position": findings.by_position(frame, cfg.max_position),
           "by_set": findings.by_set(frame),
           "model": findings.separating_model(frame, folds=cfg.folds, seed=cfg.seed, min_per_class=cfg.min_per_class),
           "paper_comparison": findings.paper_comparison(frame, props)}
    atomic_write_json(out / "findings.json", doc)
    plots.position_plot(doc["by_position"], out / "by_position.png", label)
    plots.strategy_plot(props, out / "by_strategy.png", label)
    plots.shap_plot(doc["model"], out / "shap.png", label)


def main() -> int:
    from tasks.errors import ClarifyflowError
    from tasks.params import QuestionAnalysisParams
    from tasks.roles.config import RolesParams

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "clariti" / "data.xlsx"))
    parser.add_argument("--limit", type=int, default=None, help="the first N workbook rows only (default: all)")
    parser.add_argument("--from-table", type=Path, default=None, help="a saved questions.csv: recompute only")
    args = parser.parse_args()
    started = time.monotonic()
    WORK.mkdir(parents=True, exist_ok=True)
    empty = WORK / "no_eval_rows.jsonl"
    empty.write_text("")
    cfg = QuestionAnalysisParams(eval_rows=str(empty), use_workbook="always", workbook=str(Path(args.data).resolve()),
                                 workbook_limit=args.limit)
    try:
        if args.from_table:
            from_table(args.from_table, cfg, WORK)
        else:
            from tasks.analysis import stage

            stage.run(cfg, RolesParams(), ROOT, WORK, on_step=lambda text: print(text, file=sys.stderr))
    except ClarifyflowError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    OUT.mkdir(parents=True, exist_ok=True)
    for name in NUMBERS:
        shutil.copyfile(WORK / name, OUT / name)
    doc = json.loads((OUT / "findings.json").read_text())
    print(f"backend: {doc['backends']['clariti_workbook']}")
    print("answerable share by position (95% Wilson interval, questions):")
    for r in doc["by_position"]:
        print(f"  {r['question_set']:13s} Q{r['position']:3s} {100 * r['rate']:5.1f}% "
              f"[{100 * r['ci_low']:.1f}, {100 * r['ci_high']:.1f}] n={r['n']}")
    for r in doc["paper_comparison"]:
        print(f"  {r['statement']:15s} {r['question_set']:13s} {r['verdict']:32s} {r['local']}")
    model = doc["model"]["clariti_workbook"]
    print(f"logistic model: CV AUC {model['auc_mean']:.3f} ± {model['auc_sd']:.3f} over {model['n']} questions; top: "
          + ", ".join(f"{f['feature']} ({f['coefficient']:+.3f})" for f in model["features"][:5]))
    print(f"-> {OUT.relative_to(ROOT)}/ ({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

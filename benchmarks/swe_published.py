"""evaluate@swe on the CLARITI workbook's rewrite 3: the published question sets next to the untrained methods.

    .venv/bin/python benchmarks/swe_published.py [--data ../shared/data/clariti/data.xlsx] [--limit N]
                                                 [--bootstrap 2000]

Cases are the workbook's own rewrite-3 variants (``case_source: workbook_rewrite3``), the text the published lists
were written for. Methods: no_questions, oracle_template, ask_everything, and the published sets of CLARITI (GRPO),
GPT-5-nano and GPT-5 as fixed methods. Every role is local (simulated user, judges, classifier, question writer),
so the figures are this project's local proxies, not the paper's Qwen3-32B judgements. Predicted resolution is the
shap stage's classifier (data/shap/model.txt; refit here from data/shap/runs.csv when the stage has not written it
yet) and is a surrogate. Also printed: questions per issue of each published set over *all* its lists, parsed
with tasks.rewards.parse_questions (the README's 2.94 / 5.25 / 5.07).

Metrics go to benchmarks/out/swe_published.json; the full evaluation folder (rows with workbook text) goes to
.cache/bench/swe_published/ (never into the repository).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.files import CLARITI_WORKBOOK, input_exists  # noqa: E402

OUT = ROOT / "benchmarks" / "out" / "swe_published.json"
WORK = ROOT / ".cache" / "bench" / "swe_published"
PAPER = {"questions_per_issue": {"clariti_grpo": 2.94, "gpt5_nano": 5.25, "gpt5": 5.07},
         "error_info_share": {"clariti_grpo": 0.264, "gpt5": 0.102}}
HEADLINE = ("questions_per_issue", "redundancy_rate", "answerability_rate", "distinct_intents", "hidden_recall",
            "full_coverage_rate", "weighted_recovery", "reward_mean", "predicted_resolution")


def surrogate_path() -> tuple[Path | None, str]:
    """The shap stage's model, or one refit from its runs table exactly as the stage fits it."""
    stage = ROOT / "data" / "shap" / "model.txt"
    if stage.is_file():
        return stage, "data/shap/model.txt (shap stage)"
    runs = ROOT / "data" / "shap" / "runs.csv"
    if not runs.is_file():
        return None, "none (no data/shap/model.txt or runs.csv)"
    import pandas as pd

    from tasks.evaluation.surrogate import save_surrogate
    from tasks.infovalue.model import fit_classifier
    from tasks.params import load_params

    cfg = load_params(ROOT / "params.yaml").shap
    table = pd.read_csv(runs, dtype=str, keep_default_na=False)
    for column in ("error_info", "reproduction", "expected_behavior", "implementation", "external_refs",
                   "version_env", "resolved"):
        table[column] = table[column].astype(int)
    fit = fit_classifier(table, folds=cfg.folds, seed=cfg.seed, params=cfg.lightgbm or None)
    folder = WORK / "shap"
    folder.mkdir(parents=True, exist_ok=True)
    save_surrogate(fit, table, folder, source=f"refit from data/shap/runs.csv (shap.source: {cfg.source})")
    return folder / "model.txt", "refit from data/shap/runs.csv with the shap params (stage output absent)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(CLARITI_WORKBOOK))
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--bootstrap", type=int, default=2000)
    args = parser.parse_args(argv)

    from tasks.domains.swe.workbook import PUBLISHED_COLUMNS, published_lists
    from tasks.evaluation.question_inputs import QuestionSettings, load_question_inputs
    from tasks.evaluation.question_lists import evaluate_questions
    from tasks.params import load_params
    from tasks.rewards.parse import parse_questions

    data = Path(args.data)
    if not input_exists(data):
        return 2
    params = load_params(ROOT / "params.yaml")
    model, model_note = surrogate_path()
    methods = [{"name": "no_questions"}, {"name": "oracle_template"}, {"name": "ask_everything"},
               *({"name": name, "method": "published", "options": {"column": name}} for name in PUBLISHED_COLUMNS)]
    settings = QuestionSettings.model_validate({
        "case_source": "workbook_rewrite3", "limit": args.limit, "bootstrap": args.bootstrap,
        "published": {"workbook": str(data)}, "methods": methods,
        "surrogate": str(model) if model else "data/shap/model.txt",
    })
    all_lists = {}
    for name, column in PUBLISHED_COLUMNS.items():
        counts = [len(parse_questions(text)) for text in published_lists(data, column).values()]
        all_lists[name] = {"lists": len(counts), "questions_per_issue": sum(counts) / len(counts)}

    t0 = time.perf_counter()
    inputs = load_question_inputs(ROOT, settings, domain="swe")
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    summary = evaluate_questions(inputs.cases, settings, params.roles, WORK / "eval", root=ROOT, inputs=inputs,
                           reward=params.reward)
    eval_s = time.perf_counter() - t0
    run = summary.pop("run")

    table = {}
    every = {**summary["methods"], **summary["reference_methods"]}
    for name in [*summary["method_order"], *summary["reference_order"]]:  # the ranked methods, then the references
        m = every[name]
        table[name] = {k: m.get(k) for k in (*HEADLINE, "cases", "skipped_cases", "questions")}
        table[name]["CI95"] = {k: m.get("CI95", {}).get(k) for k in HEADLINE}
        table[name]["category_share"] = m.get("category_share")
    report = {
        "data": str(data),
        "cases": summary["cases"], "case_notes": summary["case_notes"],
        "backends": "every role local: " + ", ".join(f"{k}: {v.get('implementation', v.get('model'))}"
                                                      for k, v in summary["roles"].items()),
        "weights": summary["weights"]["source"],
        "surrogate": {"model": model_note, **summary["surrogate"]},
        "published_all_lists": all_lists,
        "paper": PAPER,
        "methods": table,
        "runtime_s": {"load": round(load_s, 2), "evaluate": round(eval_s, 2), "units_computed": run["computed"],
                      "units_reused": run["reused"]},
    }

    print(f"CLARITI rewrite 3: {summary['cases']} cases ({summary['case_notes']}); all roles local; weights: "
          f"{summary['weights']['source']}")
    print("published sets over all their lists (tasks.rewards.parse_questions):",
          ", ".join(f"{n} {v['questions_per_issue']:.2f} q/issue ({v['lists']} lists)" for n, v in all_lists.items()))
    print()
    head = f"{'method':<16} {'cases':>5} {'q/issue':>7} {'redund':>7} {'answer':>7} {'intents':>7} {'recall':>7} " \
           f"{'full':>7} {'wrecov':>7} {'reward':>7} {'pred.res*':>9} {'ErrInfo':>7}"
    print(head)
    def pct(row: dict, key: str) -> str:
        value = row.get(key)
        return f"{100 * value:6.1f}%" if value is not None else f"{'–':>7}"

    for name, row in table.items():
        err = (row.get("category_share") or {}).get("error_info")
        reward = row.get("reward_mean")
        pred = row.get("predicted_resolution")
        print(f"{name:<16} {row['cases']:>5} {row.get('questions_per_issue') or 0:7.2f} {pct(row, 'redundancy_rate')} "
              f"{pct(row, 'answerability_rate')} {pct(row, 'distinct_intents')} {pct(row, 'hidden_recall')} "
              f"{pct(row, 'full_coverage_rate')} "
              f"{pct(row, 'weighted_recovery')} {reward if reward is not None else 0:7.3f} "
              f"{(100 * pred if pred is not None else float('nan')):8.1f}% "
              f"{(100 * err if err is not None else float('nan')):6.1f}%")
    print()
    print(f"* predicted resolution: {summary['surrogate']['label']} [{model_note}]")
    err = {n: (table[n].get("category_share") or {}).get("error_info") for n in ("clariti_grpo", "gpt5")}
    if all(v is not None for v in err.values()):
        print(f"Error Information share: CLARITI {100 * err['clariti_grpo']:.1f}% vs GPT-5 {100 * err['gpt5']:.1f}% "
              "(local classifier; the paper: 26.4% vs 10.2%)")
    print(f"runtime: load {load_s:.1f} s, evaluate {eval_s:.1f} s ({run['computed']} units computed, "
          f"{run['reused']} reused)")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    print(f"wrote {OUT} (evaluation folder: {WORK / 'eval'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""question_analysis: which properties separate answerable from unanswerable clarification questions (CLARITI RQ2).

Reads every question set the pipeline has: evaluate@swe's methods and policies (``data/eval/swe/rows.jsonl``, the
held-out cases, with the judges' labels) and, when the CLARITI workbook is there (params
``question_analysis.use_workbook``), its CLARITI / GPT-5 / GPT-5-nano lists for rewrite 3, judged here. Each
question gets its position, length, the four strategy tags (``roles.strategy_tagger``) and syntactic features;
the findings are answerability by tag, by position and by set (Wilson intervals), a cross-validated logistic model
with linear SHAP, and the paper's statements against the local figures. Writes ``data/analysis/questions/``,
``data/plots/question_analysis/by_position.json`` and ``data/metrics/stages/question_analysis.json``; everything is
validated before it is published.
"""

from __future__ import annotations

import argparse
import sys
import time

from flows import cli


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    return cli.params_args("python -m flows.question_analysis", __doc__.splitlines()[0], argv)


def question_analysis(params: str = "params.yaml") -> dict:
    from tasks.analysis import stage
    from tasks.params import load_params
    from tasks.stage_metrics import publish_with_metrics
    from tasks.store import atomic_write_json, read_json_object, repo_root, staged_dir
    from tasks.validation.stage_metrics import check_stage_metrics

    root = repo_root()
    cfg = load_params(root / params)
    started = time.monotonic()
    out_dir = root / stage.OUT_DIR
    with staged_dir(out_dir) as staging:
        metrics = stage.run(cfg.question_analysis, cfg.roles, root, staging, results_dir=root / ".cache" / "gx"
                            / "results", on_step=lambda text: print(f"question_analysis: {text}", file=sys.stderr))
        check_stage_metrics(stage.STAGE, metrics, counts={"questions": metrics["questions"]})
        records = stage.position_records(read_json_object(staging / "findings.json"))
        publish_with_metrics(staging, out_dir, root, stage.STAGE,
                             {**metrics, "seconds": round(time.monotonic() - started, 2)})
    atomic_write_json(root / stage.PLOTS_DIR / "by_position.json", records)
    return {**metrics, "seconds": round(time.monotonic() - started, 2)}


def describe(summary: dict) -> str:
    sets = ", ".join(f"{name} {v['answerable_rate']}" for name, v in summary["sets"].items())
    return (f"question_analysis: {summary['questions']} questions, answerable share by set: {sets} "
            f"-> data/analysis/questions/ ({summary['seconds']} s)")


def build_flow():
    from prefect import flow

    return flow(name="question_analysis", flow_run_name="question_analysis", log_prints=True)(question_analysis)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    def check() -> None:
        from pathlib import Path

        from tasks.analysis.questions import eval_questions
        from tasks.analysis.stage import workbook_path
        from tasks.params import load_params
        from tasks.store import repo_root

        root = repo_root()
        cfg = load_params(root / args.params).question_analysis
        eval_questions(Path(cfg.eval_rows) if Path(cfg.eval_rows).is_absolute() else root / cfg.eval_rows)
        workbook_path(cfg, root)

    return cli.run_stage(lambda: build_flow()(params=args.params), describe, check=check)


if __name__ == "__main__":
    sys.exit(main())

"""The question-list kind of evaluation (CLARITI §7; evaluate@swe and any domain whose ``evaluation`` is
``questions``): each method's question list per case, answered by the simulated user and labelled by the judges and
the classifier (``tasks.evaluation.question_lists``)."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from tasks.evaluation.question_inputs import QuestionSettings
from tasks.evaluation.stage import EvaluationKind, Prepared, Scored, backend_line

QUESTION_ROLES = ("swe_user", "redundancy_judge", "answerability_judge", "question_classifier", "question_writer")
"""The roles a question-list evaluation calls (the backend line names those served by a model)."""


def prepare(root: Path, params_path: Path, params: Any, domain: str, settings: QuestionSettings) -> tuple[Any, list]:
    """Cases, weights, surrogate, published lists and harness reports, validated (``load_question_inputs``)."""
    from tasks.evaluation.question_inputs import load_question_inputs

    inputs = load_question_inputs(root, settings, domain=domain)
    return inputs, inputs.cases


def score(prepared: Prepared, staging: Path, *, client, refresh: bool, progress) -> Scored:
    """Every (method, case) unit from the store or computed, the outputs written into ``staging``."""
    from tasks.evaluation.question_lists import evaluate_questions, plotted_methods, split_metrics
    from tasks.evaluation.question_plots import recovery_rows

    cfg, settings, inputs = prepared.params, prepared.settings, prepared.inputs
    summary = evaluate_questions(inputs.cases, settings, cfg.roles, staging, root=prepared.root, inputs=inputs,
                                 reward=cfg.reward, progress=progress, cluster=cfg.cluster, refresh=refresh)
    run = summary.pop("run", {})
    metrics: dict[str, Any] = {"split": split_metrics(summary, inputs, settings)}
    if "abstention" in summary:
        metrics["abstention"] = summary["abstention"]["methods"]
    if summary.get("paired"):
        metrics["paired"] = summary["paired"]
    return Scored(summary=summary, rows=summary["methods"], reference_rows=summary["reference_methods"],
                  headline=partial(headline, trained_on=summary["surrogate"].get("trained_on")),
                  failures=run.get("failure_counts", []), backend=backend_line(cfg.roles, QUESTION_ROLES),
                  metrics=metrics, plot_rows=recovery_rows(plotted_methods(summary)),
                  units=len(inputs.cases) * len(settings.methods), computed=run.get("computed", 0),
                  reused=run.get("reused", 0))


def gate(prepared: Prepared, staging: Path, scored: Scored, *, checks, artifact: str) -> dict[str, Any]:
    """The summary, the per-case rows and (for issues of code repositories) the SWE-bench-style exports through
    their suites."""
    from tasks.evaluation.bridge import has_repositories
    from tasks.evaluation.question_report import rows_frame, summary_frame

    checks.table("swe_eval_summary", summary_frame(scored.summary), artifact=f"{artifact}/summary.json")
    checks.table("swe_eval_rows", rows_frame(staging), artifact=f"{artifact}/rows.jsonl")
    if has_repositories(prepared.inputs.cases, prepared.inputs.meta):  # else no export was written (not a repo)
        checks.bridge(staging / "bridge", artifact=f"{artifact}/bridge")
    return {}


def headline(metrics: dict, trained_on: str | None = None) -> dict:
    """A method's numeric metrics; the surrogate's predicted resolution under a key naming its source
    (``tasks.evaluation.surrogate.metric_key``: planted by default), never bare."""
    from tasks.evaluation.surrogate import METRIC, metric_key

    return {metric_key(trained_on) if k == METRIC else k: v for k, v in metrics.items()
            if isinstance(v, int | float) and not isinstance(v, bool)}


KIND = EvaluationKind(settings=QuestionSettings, prepare=prepare, score=score, gate=gate,
                      progress_unit="question units")

"""``question_analysis`` as one function over a staging folder: load every question set, tag it, compute the
findings, gate the tables, and write the outputs (the flow publishes the folder after this returns).

Outputs in the folder: ``questions.csv`` (one row per question), ``findings.json`` (every table, the model, the
paper comparison and the backends), ``by_position.png``, ``by_strategy.png``, ``shap.png``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tasks.analysis.questions import EVAL_SOURCE, WORKBOOK_SOURCE
from tasks.errors import InputError

STAGE = "question_analysis"
OUT_DIR = Path("data") / "analysis" / "questions"
PLOTS_DIR = Path("data") / "plots" / "question_analysis"


def workbook_path(cfg, root: Path) -> Path | None:
    """The workbook to read, or None (``use_workbook: never``, or ``auto`` and the file is absent)."""
    path = Path(cfg.workbook) if Path(cfg.workbook).is_absolute() else root / cfg.workbook
    if cfg.use_workbook == "never":
        return None
    if not path.is_file():
        if cfg.use_workbook == "always":
            raise InputError(path, "file not found (question_analysis.use_workbook is always)",
                             field="question_analysis.workbook")
        return None
    return path


def eval_roles(rows_path: Path) -> dict[str, Any]:
    """The judge roles evaluate@swe ran with (its ``summary.json`` beside ``rows.jsonl``), or {} when absent."""
    from tasks.store import read_json_object

    summary = rows_path.parent / "summary.json"
    return dict(read_json_object(summary).get("roles") or {}) if summary.is_file() else {}


def _backend(info: dict[str, Any] | Any) -> str:
    if isinstance(info, dict):
        if info.get("backend") == "llm":
            return f"llm {info.get('model')}"
        return str(info.get("backend", "unspecified"))
    return "local" if info.backend == "local" else f"llm {info.model}"


def backends(roles, eval_described: dict[str, Any], sources: set[str]) -> dict[str, str]:
    """Per source, the roles behind its numbers, in words."""
    tagger = f"strategy_tagger {_backend(roles.strategy_tagger)}"
    out = {}
    if EVAL_SOURCE in sources:
        judge = _backend(eval_described["answerability_judge"]) if "answerability_judge" in eval_described \
            else "unrecorded"
        classifier = _backend(eval_described["question_classifier"]) if "question_classifier" in eval_described \
            else "unrecorded"
        out[EVAL_SOURCE] = (f"answerable: evaluate@swe's answerability_judge {judge}; category: its "
                            f"question_classifier {classifier}; tags: {tagger}")
    if WORKBOOK_SOURCE in sources:
        out[WORKBOOK_SOURCE] = (f"answerable: answerability_judge {_backend(roles.answerability_judge)}; category: "
                                f"question_classifier {_backend(roles.question_classifier)}; tags: {tagger}")
    return out


def shown_path(path: Path, root: Path) -> str:
    """``path`` as findings.json records it, never machine-specific: relative to the repository (``../shared/...``
    for the sibling data folder), else its file name alone."""
    import os

    path, root = path.resolve(), root.resolve()
    if path.is_relative_to(root.parent):
        return Path(os.path.relpath(path, root)).as_posix()
    return path.name


def run(cfg, roles, root: Path, staging: Path, *, client=None, progress: bool = True,
        results_dir: Path | None = None, on_step: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Everything except publishing; returns the stage metrics. Raises InputError (bad input) or GateError."""
    import pandas as pd

    from tasks.analysis import findings, plots
    from tasks.analysis.questions import eval_questions, rows_frame, tag_questions, workbook_questions
    from tasks.roles.failures import RoleFailureCount, check_failure_rates
    from tasks.store import atomic_write_json, atomic_write_text
    from tasks.validation import gate

    step = on_step or (lambda _: None)
    rows_path = Path(cfg.eval_rows) if Path(cfg.eval_rows).is_absolute() else root / cfg.eval_rows
    listed = eval_questions(rows_path)
    book = workbook_path(cfg, root)
    if book is not None:
        step(f"judging the workbook's published lists ({', '.join(cfg.published)})")
        published = workbook_questions(book, cfg.published, roles, limit=cfg.workbook_limit, client=client,
                                       batch_size=cfg.batch_size, progress=progress)
        counts = [RoleFailureCount(role="answerability_judge", total=len(published),
                                   failures=sum(q.answerable is None for q in published)),
                  RoleFailureCount(role="question_classifier", total=len(published),
                                   failures=sum(q.category is None for q in published))]
        check_failure_rates(counts, roles.max_failure_rate, stage=STAGE)
        listed += published
    if not listed:
        raise InputError(rows_path, "no questions: every row was skipped or asked nothing, and no workbook lists")
    step(f"tagging {len(listed)} questions")
    rows = tag_questions(listed, roles, client=client, batch_size=cfg.batch_size, progress=progress)
    failed = sum(r.evidence_based is None for r in rows)
    check_failure_rates([RoleFailureCount(role="strategy_tagger", total=len(rows), failures=failed)],
                        roles.max_failure_rate, stage=STAGE)
    frame = rows_frame(rows)
    gate("question_rows", frame, artifact=f"{OUT_DIR.as_posix()}/questions.csv", results_dir=results_dir)

    step("findings")
    properties = findings.by_property(frame)
    positions = findings.by_position(frame, cfg.max_position)
    sets = findings.by_set(frame)
    models = findings.separating_model(frame, folds=cfg.folds, seed=cfg.seed, min_per_class=cfg.min_per_class)
    comparison = findings.paper_comparison(frame, properties)
    gate("question_rates", pd.DataFrame([*properties, *positions, *sets])[["n", "answerable", "rate", "ci_low",
                                                                        "ci_high"]],
         artifact=f"{OUT_DIR.as_posix()}/findings.json", results_dir=results_dir)
    sources = set(frame["source"])
    labels = backends(roles, eval_roles(rows_path), sources)
    label = "; ".join(f"{s}: {b}" for s, b in sorted(labels.items()))
    document = {"backends": labels, "model_backend": "scikit-learn logistic regression (standardised, L2, C=1) "
                "with linear SHAP", "by_property": properties, "by_position": positions, "by_set": sets,
                "model": models, "paper_comparison": comparison,
                "inputs": {"eval_rows": shown_path(rows_path, root),
                           "workbook": shown_path(book, root) if book is not None else None,
                           "workbook_rows": (cfg.workbook_limit or "all") if book is not None else None}}
    atomic_write_json(staging / "findings.json", document)
    atomic_write_text(staging / "questions.csv", frame.to_csv(index=False))
    plots.position_plot(positions, staging / "by_position.png", label)
    plots.strategy_plot(properties, staging / "by_strategy.png", label)
    plots.shap_plot(models, staging / "shap.png", label)
    judged = findings.judged(frame)
    return {
        "backend": label,
        "questions": len(frame),
        "judged": len(judged),
        "answerable_rate": round(float(judged["answerable"].mean()), 4) if len(judged) else 0.0,
        "tagger_failures": failed,
        "sources": {s: int((frame["source"] == s).sum()) for s in sorted(sources)},
        "sets": {f"{r['source']}:{r['question_set']}": {
            "backend": labels[r["source"]], "questions": r["n"], "lists": r["lists"], "answerable_rate": r["rate"],
            "answerable_ci": [r["ci_low"], r["ci_high"]]} for r in sets},
        "model": {s: {"backend": f"logistic regression over {labels[s]}",
                      **({"auc_mean": m["auc_mean"], "auc_sd": m["auc_sd"], "n": m["n"],
                          "top_feature": m["features"][0]["feature"]} if "features" in m else {"n": m["n"]})}
                  for s, m in models.items()},
        "verdicts": {verdict_key(r): r["verdict"] for r in comparison},
    }


def verdict_key(row: dict[str, Any]) -> str:
    """``source:statement``, with ``:question_set`` for a per-set row."""
    key = f"{row['source']}:{row['statement']}"
    return key if row["question_set"] == "all" else f"{key}:{row['question_set']}"


def position_records(findings_doc: dict[str, Any]) -> list[dict[str, Any]]:
    """``dvc plots`` records of the by-position curve (one series per source:set)."""
    return [{"series": f"{r['source']}:{r['question_set']}", "position": r["position_index"], "rate": r["rate"],
             "n": r["n"]} for r in findings_doc["by_position"]]

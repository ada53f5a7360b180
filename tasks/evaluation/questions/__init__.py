"""The question kind of evaluation, evaluate@swe: measure SWE clarifiers as CLARITI does (clariti.md §7) on
incomplete issues.

Each method (``methods``) turns each case's incomplete issue into questions; the ``swe_user`` role answers them from
the full issue + hints; judges and the classifier label them (``units``, on the engine's store,
``tasks.evaluation.engine``); the metrics (``metrics``) come with 95% bootstrap intervals over issues. The settings
and inputs are ``inputs``, the run ``run``, the report section and validation frames ``report``; ``abstain``,
``bridge``, ``surrogate`` and ``plots`` are named for what they add. The flow calls, in order::

    settings = section(params_path, SweEvalSettings, cfg.evaluate["swe"], "evaluate.swe")
    inputs = load_swe_inputs(root, settings)              # validates everything; InputError before any work
    summary = evaluate_swe(inputs.cases, settings, cfg.roles, staging_dir, root=root, inputs=inputs,
                           reward=cfg.reward, client=None, progress=None)
    gate("swe_eval_summary", summary_frame(summary), ...); gate("swe_eval_rows", rows_frame(staging_dir), ...)

Outputs in ``out_dir``: ``summary.json`` (byte-stable; the ranked ``methods`` apart from the ``reference_methods``,
declared by ``methods.method``), ``rows.jsonl`` (one row per method x case with questions,
answers and labels), ``questions.eval`` (the rows as an Inspect AI log, ``inspect_log``), ``report.md`` (the report
section), ``category_distribution.png``,
``questions_vs_recovery.png``, and ``bridge/`` (SWE-bench-style JSONL per method + ``manifest.json``; see
``bridge``). Units are cached under ``<root>/.cache/eval/swe/units`` by content, so a rerun recomputes only
units whose case, method, roles, reward settings, weights or code changed.

*Predicted resolution* is the ``shap`` stage's classifier (``data/shap/model.txt``) on the visible + recovered
categories, always labelled a surrogate; harness results listed under ``measured`` replace it with measured
resolution per method.

The names below load their module on first use (PEP 562), so importing the package runs none of its modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tasks.lazy_exports import lazy_exports

_HOME = {
    "UNIT_STORE": "run", "evaluate_swe": "run", "plotted_methods": "run", "split_metrics": "run",
    "SweEvalSettings": "inputs", "SweInputs": "inputs", "load_swe_inputs": "inputs",
    "report_markdown": "report", "rows_frame": "report", "summary_frame": "report",
    "recovery_rows": "plots",
    "load_surrogate": "surrogate", "save_surrogate": "surrogate",
}

__all__ = [
    "UNIT_STORE",
    "SweEvalSettings",
    "SweInputs",
    "evaluate_swe",
    "load_surrogate",
    "load_swe_inputs",
    "plotted_methods",
    "recovery_rows",
    "report_markdown",
    "rows_frame",
    "save_surrogate",
    "split_metrics",
    "summary_frame",
]

if TYPE_CHECKING:
    from tasks.evaluation.questions.inputs import SweEvalSettings, SweInputs, load_swe_inputs
    from tasks.evaluation.questions.plots import recovery_rows
    from tasks.evaluation.questions.report import report_markdown, rows_frame, summary_frame
    from tasks.evaluation.questions.run import UNIT_STORE, evaluate_swe, plotted_methods, split_metrics
    from tasks.evaluation.questions.surrogate import load_surrogate, save_surrogate


__getattr__, __dir__ = lazy_exports(__name__, _HOME)

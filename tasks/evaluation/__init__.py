"""Evaluation: one engine for every kind (``stage``: settings, dispatch, gates, publication; ``engine``: the unit
store; ``settings``: the one settings record), with a scorer per kind: ``episode_kind`` (OR-Clarify episodes: the
loop, the judge, the metrics, the recovery plot and the report; or-clarify.md §3, §4, §9) and ``question_kind``
(CLARITI question lists: ``question_lists``, ``question_units``, ``question_metrics``, ``question_methods``).

The names below load their module on first use (PEP 562), so importing the package runs none of its modules."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tasks.lazy_exports import lazy_exports

_HOME = {
    "play": "evaluate", "write_outputs": "evaluate",
    "CI_METRICS": "metrics", "COST_METRICS": "metrics", "RATE_METRICS": "metrics",
    "plot_data_path": "plots", "recovery_rows": "plots",
    "publish_report": "report",
    "EvalSettings": "runs", "check_policies": "runs", "episode_store": "runs", "load_cases": "runs",
    "CEILING": "sanity", "FLOOR": "sanity", "violations": "sanity",
}

__all__ = [
    "CEILING",
    "CI_METRICS",
    "COST_METRICS",
    "FLOOR",
    "RATE_METRICS",
    "EvalSettings",
    "check_policies",
    "episode_store",
    "load_cases",
    "play",
    "plot_data_path",
    "publish_report",
    "recovery_rows",
    "violations",
    "write_outputs",
]

if TYPE_CHECKING:
    from tasks.evaluation.evaluate import play, write_outputs
    from tasks.evaluation.metrics import CI_METRICS, COST_METRICS, RATE_METRICS
    from tasks.evaluation.plots import plot_data_path, recovery_rows
    from tasks.evaluation.report import publish_report
    from tasks.evaluation.runs import EvalSettings, check_policies, episode_store, load_cases
    from tasks.evaluation.sanity import CEILING, FLOOR, violations


__getattr__, __dir__ = lazy_exports(__name__, _HOME)

"""Expectation suites, one per artifact table. Built lazily: importing GX costs ~5 s."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


def build_suite(name: str, **options: Any) -> Any:
    """``options``: ``min_per_class`` for ``shap_runs``; ``methods`` (known method names) for ``or_episodes``;
    ``columns`` (the ordered column list) and ``rows`` (the row count) for ``shap_values``.

    Only the named suite is built, so a stage's gate loads the code behind its own suite and no other (the stage
    deps in ``dvc.yaml`` list exactly that code)."""
    unknown = set(options) - {"min_per_class", "methods", "columns", "rows"}
    if unknown:
        raise KeyError(f"unknown suite options: {', '.join(sorted(unknown))}")
    if name not in SUITES:
        raise KeyError(f"no expectation suite named {name!r} (known: {', '.join(sorted(SUITES))})")
    import great_expectations as gx

    return gx.ExpectationSuite(name=name, expectations=SUITES[name](gx.expectations, options))


def _swe_cases(E: Any, options: dict[str, Any]) -> list:
    return [
        *_keyed(E, "case_id"),
        E.ExpectColumnValuesToNotBeNull(column="brief"),
        E.ExpectColumnValuesToBeBetween(column="brief_chars", min_value=1),
        E.ExpectColumnValuesToBeInSet(column="hidden_subset_of_present", value_set=[True]),
        E.ExpectColumnValuesToBeBetween(column="n_hidden", min_value=1, max_value=6),
        *_true(E, ("leak_free", "fences_balanced")),
        E.ExpectColumnPairValuesAToBeGreaterThanB(column_A="original_chars", column_B="brief_chars", or_equal=False),
    ]


def _case_splits(E: Any, options: dict[str, Any]) -> list:
    """Every case's train/heldout split (tasks.splits.split_frame): set, and one per source id."""
    return [
        *_keyed(E, "case_id"),
        E.ExpectColumnValuesToBeInSet(column="split", value_set=["train", "heldout"]),
        E.ExpectColumnValuesToNotBeNull(column="split"),
        E.ExpectColumnValuesToBeInSet(column="one_split_per_source", value_set=[True]),
    ]


def _shap_runs(E: Any, options: dict[str, Any]) -> list:
    from tasks.infovalue.runs import empty_table, gx_expectation_objects, runs_table_for_gx

    return gx_expectation_objects(runs_table_for_gx(empty_table(), options.get("min_per_class", 10))[1])


def _shap_weights(E: Any, options: dict[str, Any]) -> list:
    from tasks.infovalue import FEATURES

    return [
        E.ExpectTableRowCountToBeBetween(min_value=len(FEATURES), max_value=len(FEATURES)),
        E.ExpectColumnValuesToBeInSet(column="category", value_set=list(FEATURES)),
        E.ExpectColumnValuesToBeBetween(column="weight", min_value=0.0, max_value=1.0),
        E.ExpectColumnMaxToBeBetween(column="weight", min_value=1.0, max_value=1.0),
        E.ExpectColumnPairValuesAToBeGreaterThanB(column_A="weight", column_B="ci_low", or_equal=True),
        E.ExpectColumnPairValuesAToBeGreaterThanB(column_A="ci_high", column_B="weight", or_equal=True),
    ]


def _sft_rows(E: Any, options: dict[str, Any]) -> list:
    return [
        *_keyed(E, "case_id"),
        E.ExpectColumnValuesToBeInSet(column="split", value_set=["train", "heldout"]),
        E.ExpectColumnValuesToBeBetween(column="prompt_chars", min_value=1),
        E.ExpectColumnValuesToBeBetween(column="target_chars", min_value=10),
        E.ExpectColumnValuesToBeBetween(column="n_questions", min_value=1, max_value=6),
        *_true(E, ("questions_match_hidden", "split_by_instance")),
    ]


def _report_metrics(E: Any, options: dict[str, Any]) -> list:
    return [
        *_keyed(E, "key"),
        E.ExpectColumnValuesToNotBeNull(column="value"),
    ]


def _unit_cases(E: Any, options: dict[str, Any]) -> list:
    """Cases of typed units (tasks.domains.units.UnitDomain.validation_table)."""
    return [
        *_keyed(E, "case_id"),
        E.ExpectColumnValuesToBeBetween(column="n_hidden", min_value=1),
        *_true(E, ("hidden_units_exist", "hidden_not_visible", "units_partitioned", "severities_valid", "leak_free",
                   "slot_ids_unique", "required_fields_filled")),
    ]


def _or_episodes(E: Any, options: dict[str, Any]) -> list:
    """OR-Clarify episode rows (tasks.evaluation.metrics.episodes_frame)."""
    from tasks.episodes.records import PROTOCOLS

    if options.get("methods") is not None:
        methods = sorted(options["methods"])
    else:
        from tasks.clarifiers.base import method_names

        methods = method_names()
    return [
        *_keyed(E, "key"),
        E.ExpectColumnValuesToBeInSet(column="method", value_set=methods),
        E.ExpectColumnValuesToBeInSet(column="protocol", value_set=list(PROTOCOLS)),
        E.ExpectColumnPairValuesAToBeGreaterThanB(column_A="max_turns", column_B="turn_count", or_equal=True),
        E.ExpectColumnValuesToBeBetween(column="atomic_questions", min_value=0),
        E.ExpectColumnValuesToBeInSet(column="end_state", value_set=["ready", "protocol_failure", "turn_limit"]),
        E.ExpectColumnValuesToBeBetween(column="wss", min_value=0.0, max_value=1.0),
        E.ExpectColumnValuesToBeInSet(column="core_exact_consistent", value_set=[True]),
    ]


def _or_summary(E: Any, options: dict[str, Any]) -> list:
    """OR-Clarify summary rows (tasks.evaluation.metrics.summary_frame)."""
    from tasks.evaluation.metrics import CI_METRICS, COST_METRICS, RATE_METRICS

    return [
        *_keyed(E, "key"),
        E.ExpectColumnValuesToBeBetween(column="RunCount", min_value=1),
        *_rates(E, RATE_METRICS),
        *[E.ExpectColumnValuesToBeBetween(column=name, min_value=0) for name in COST_METRICS],
        *_inside_ci(E, CI_METRICS),
    ]


def _swe_eval_summary(E: Any, options: dict[str, Any]) -> list:
    """SWE evaluation summary rows (tasks.evaluation.question_report.summary_frame)."""
    from tasks.evaluation.question_metrics import ISSUE_METRICS, QUESTION_METRICS, RATE_COLUMNS

    return [
        *_keyed(E, "key"),
        E.ExpectColumnValuesToBeBetween(column="cases", min_value=0),
        E.ExpectColumnValuesToBeBetween(column="questions_per_issue", min_value=0.0),
        *_rates(E, RATE_COLUMNS),
        E.ExpectColumnValuesToBeBetween(column="category_share_sum", min_value=0.999, max_value=1.001),
        *_inside_ci(E, (*ISSUE_METRICS, *QUESTION_METRICS)),
        # cost and efficiency (``tasks.evaluation.question_lists.efficiency``): never negative; score / $ is null at
        # zero cost
        *[E.ExpectColumnValuesToBeBetween(column=c, min_value=0.0)
          for c in ("TotalTokens", "EstimatedCostUSD", "CostPerCaseUSD", "LatencySeconds", "ScorePerDollar",
                    "ScorePerQuestion")],
    ]


def _swe_eval_rows(E: Any, options: dict[str, Any]) -> list:
    """SWE evaluation rows (tasks.evaluation.question_report.rows_frame)."""
    return [
        *_keyed(E, "key"),
        E.ExpectColumnValuesToBeBetween(column="n_questions", min_value=0),
        E.ExpectColumnValuesToBeBetween(column="n_hidden", min_value=1, max_value=6),
        E.ExpectColumnValuesToBeBetween(column="recall", min_value=0.0, max_value=1.0),
        E.ExpectColumnValuesToBeBetween(column="weighted_recovery", min_value=0.0, max_value=1.0),
        E.ExpectColumnValuesToBeBetween(column="predicted_resolution", min_value=0.0, max_value=1.0),
        *_true(E, ("recovered_within_hidden", "labels_known")),
    ]


def _shap_calibration(E: Any, options: dict[str, Any]) -> list:
    """``data/shap/calibration.json`` bins (tasks.validation.shap_gates.calibration_frame)."""
    return [
        *_keyed(E, "bin"),
        *_rates(E, ("lower", "upper", "mean_predicted", "observed_rate")),
        E.ExpectColumnValuesToNotBeNull(column="mean_predicted"),
        E.ExpectColumnValuesToNotBeNull(column="observed_rate"),
        E.ExpectColumnPairValuesAToBeGreaterThanB(column_A="upper", column_B="lower", or_equal=False),
        E.ExpectColumnValuesToBeBetween(column="count", min_value=1),
    ]


def _shap_values(E: Any, options: dict[str, Any]) -> list:
    """``data/shap/shap_values.csv`` (tasks.validation.shap_gates.shap_values_frame): one finite row per run."""
    return [
        E.ExpectTableColumnsToMatchOrderedList(column_list=list(options["columns"])),
        E.ExpectTableRowCountToEqual(value=int(options["rows"])),
        E.ExpectColumnValuesToNotBeNull(column="variant_id"),
        E.ExpectColumnValuesToBeInSet(column="row_finite", value_set=[True]),
    ]


def _recovery_curves(E: Any, options: dict[str, Any]) -> list:
    """``recovery.json`` points (tasks.validation.eval_gates.recovery_frame)."""
    return [
        E.ExpectTableRowCountToBeBetween(min_value=1),
        E.ExpectColumnValuesToBeBetween(column="x", min_value=0),
        E.ExpectColumnValuesToBeBetween(column="x_step", min_value=0),  # x non-decreasing along each curve
        E.ExpectColumnValuesToNotBeNull(column="mean"),
        *_rates(E, ("mean", "low", "high")),
        E.ExpectColumnValuesToBeInSet(column="lengths_match_x", value_set=[True]),
    ]


def _bridge_rows(E: Any, options: dict[str, Any]) -> list:
    """Rows of the SWE-bench-style exports under ``bridge/`` (tasks.validation.eval_gates.bridge_frame)."""
    return [
        *_keyed(E, "key"),  # instance_id unique per file
        E.ExpectColumnValuesToNotBeNull(column="instance_id"),
        E.ExpectColumnValueLengthsToBeBetween(column="instance_id", min_value=1),
        E.ExpectColumnValuesToBeBetween(column="problem_statement_chars", min_value=1),
        E.ExpectColumnValuesToNotBeNull(column="repo"),
        E.ExpectColumnValueLengthsToBeBetween(column="repo", min_value=1),
        # base_commit where the source knows it (the CLARITI workbook); the sample issues carry none
        E.ExpectColumnValuesToMatchRegex(column="base_commit", regex=r"^\S+$"),
    ]


def _question_rows(E: Any, options: dict[str, Any]) -> list:
    """question_analysis's question table (tasks.analysis.questions.rows_frame)."""
    return [
        *_keyed(E, "key"),
        E.ExpectColumnValuesToBeInSet(column="source", value_set=["evaluate@swe", "clariti_workbook"]),
        E.ExpectColumnValuesToBeBetween(column="position", min_value=1),
        E.ExpectColumnPairValuesAToBeGreaterThanB(column_A="list_length", column_B="position", or_equal=True),
        E.ExpectColumnValuesToBeBetween(column="n_chars", min_value=1),
        *[E.ExpectColumnValuesToBeInSet(column=c, value_set=[True, False])
          for c in ("evidence_based", "specific", "scoped", "actionable", "answerable")],
    ]


def _question_rates(E: Any, options: dict[str, Any]) -> list:
    """question_analysis's rate tables (by property, position, set): rates and Wilson bounds in [0, 1], ordered."""
    return [
        E.ExpectTableRowCountToBeBetween(min_value=1),
        E.ExpectColumnValuesToBeBetween(column="n", min_value=0),
        E.ExpectColumnPairValuesAToBeGreaterThanB(column_A="n", column_B="answerable", or_equal=True),
        *_rates(E, ("rate", "ci_low", "ci_high")),
        E.ExpectColumnPairValuesAToBeGreaterThanB(column_A="rate", column_B="ci_low", or_equal=True,
                                                  ignore_row_if="either_value_is_missing"),
        E.ExpectColumnPairValuesAToBeGreaterThanB(column_A="ci_high", column_B="rate", or_equal=True,
                                                  ignore_row_if="either_value_is_missing"),
    ]


def _keyed(E: Any, key: str) -> list:
    """A table with rows, ``key`` unique."""
    return [E.ExpectTableRowCountToBeBetween(min_value=1), E.ExpectColumnValuesToBeUnique(column=key)]


def _true(E: Any, names: Sequence[str]) -> list:
    """Flag columns that hold True on every row."""
    return [E.ExpectColumnValuesToBeInSet(column=name, value_set=[True]) for name in names]


def _rates(E: Any, names: Sequence[str]) -> list:
    return [E.ExpectColumnValuesToBeBetween(column=name, min_value=0.0, max_value=1.0) for name in names]


def _inside_ci(E: Any, names: Sequence[str]) -> list:
    """Each metric lies within its ``_low``/``_high`` interval (rows without an interval are skipped)."""
    return [
        expectation
        for name in names
        for expectation in (
            E.ExpectColumnPairValuesAToBeGreaterThanB(column_A=name, column_B=f"{name}_low", or_equal=True,
                                                      ignore_row_if="either_value_is_missing"),
            E.ExpectColumnPairValuesAToBeGreaterThanB(column_A=f"{name}_high", column_B=name, or_equal=True,
                                                      ignore_row_if="either_value_is_missing"),
        )
    ]

SUITES: dict[str, Callable[[Any, dict[str, Any]], list]] = {
    "swe_cases": _swe_cases,
    "case_splits": _case_splits,
    "optimization_cases": _unit_cases,
    # any unit domain (tasks/domains/units.py: analytics, scaffolded domains): the same case-level checks
    "unit_cases": _unit_cases,
    "shap_runs": _shap_runs,
    "shap_weights": _shap_weights,
    "sft_rows": _sft_rows,
    "report_metrics": _report_metrics,
    "or_episodes": _or_episodes,
    "or_summary": _or_summary,
    "swe_eval_summary": _swe_eval_summary,
    "swe_eval_rows": _swe_eval_rows,
    "shap_calibration": _shap_calibration,
    "shap_values": _shap_values,
    "recovery_curves": _recovery_curves,
    "bridge_rows": _bridge_rows,
    "question_rows": _question_rows,
    "question_rates": _question_rates,
}

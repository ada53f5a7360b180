"""Expectation suites, one per artifact table. Built lazily: importing GX costs ~5 s."""

from __future__ import annotations

from typing import Any


def empty_runs() -> Any:
    from tasks.infovalue.runs import empty_table

    return empty_table()


def build_suite(name: str, **options: Any) -> Any:
    """``options``: ``min_per_class`` for ``shap_runs``."""
    import great_expectations as gx

    from tasks.infovalue import FEATURES
    from tasks.infovalue.runs import gx_expectation_objects, runs_table_for_gx

    E = gx.expectations
    suites = {
        "swe_cases": [
            E.ExpectTableRowCountToBeBetween(min_value=1),
            E.ExpectColumnValuesToBeUnique(column="case_id"),
            E.ExpectColumnValuesToNotBeNull(column="brief"),
            E.ExpectColumnValuesToBeBetween(column="brief_chars", min_value=1),
            E.ExpectColumnValuesToBeInSet(column="hidden_subset_of_present", value_set=[True]),
            E.ExpectColumnValuesToBeBetween(column="n_hidden", min_value=1, max_value=6),
            E.ExpectColumnValuesToBeInSet(column="leak_free", value_set=[True]),
            E.ExpectColumnValuesToBeInSet(column="fences_balanced", value_set=[True]),
            E.ExpectColumnPairValuesAToBeGreaterThanB(column_A="original_chars", column_B="brief_chars", or_equal=False),
        ],
        "optimization_cases": [
            E.ExpectTableRowCountToBeBetween(min_value=1),
            E.ExpectColumnValuesToBeUnique(column="case_id"),
            E.ExpectColumnValuesToBeBetween(column="n_hidden", min_value=1),
            *[
                E.ExpectColumnValuesToBeInSet(column=column, value_set=[True])
                for column in ("hidden_units_exist", "hidden_not_visible", "units_partitioned", "severities_valid",
                               "leak_free", "slot_ids_unique", "required_fields_filled")
            ],
        ],
        "shap_runs": gx_expectation_objects(
            runs_table_for_gx(empty_runs(), options.get("min_per_class", 10))[1]
        ),
        "shap_weights": [
            E.ExpectTableRowCountToBeBetween(min_value=len(FEATURES), max_value=len(FEATURES)),
            E.ExpectColumnValuesToBeInSet(column="category", value_set=list(FEATURES)),
            E.ExpectColumnValuesToBeBetween(column="weight", min_value=0.0, max_value=1.0),
            E.ExpectColumnMaxToBeBetween(column="weight", min_value=1.0, max_value=1.0),
            E.ExpectColumnPairValuesAToBeGreaterThanB(column_A="weight", column_B="ci_low", or_equal=True),
            E.ExpectColumnPairValuesAToBeGreaterThanB(column_A="ci_high", column_B="weight", or_equal=True),
        ],
        "sft_rows": [
            E.ExpectTableRowCountToBeBetween(min_value=1),
            E.ExpectColumnValuesToBeUnique(column="case_id"),
            E.ExpectColumnValuesToBeInSet(column="split", value_set=["train", "heldout"]),
            E.ExpectColumnValuesToBeBetween(column="prompt_chars", min_value=1),
            E.ExpectColumnValuesToBeBetween(column="target_chars", min_value=10),
            E.ExpectColumnValuesToBeBetween(column="n_questions", min_value=1, max_value=6),
            E.ExpectColumnValuesToBeInSet(column="questions_match_hidden", value_set=[True]),
            E.ExpectColumnValuesToBeInSet(column="split_by_instance", value_set=[True]),
        ],
        "report_metrics": [
            E.ExpectTableRowCountToBeBetween(min_value=1),
            E.ExpectColumnValuesToBeUnique(column="key"),
            E.ExpectColumnValuesToNotBeNull(column="value"),
        ],
    }
    unknown = set(options) - {"min_per_class"}
    if unknown:
        raise KeyError(f"unknown suite options: {', '.join(sorted(unknown))}")
    if name not in suites:
        raise KeyError(f"no expectation suite named {name!r} (known: {', '.join(sorted(suites))})")
    return gx.ExpectationSuite(name=name, expectations=suites[name])

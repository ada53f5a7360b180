"""Expectation suites, one per artifact table. Built lazily: importing GX costs ~5 s."""

from __future__ import annotations

from typing import Any


def build_suite(name: str) -> Any:
    import great_expectations as gx

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
        "report_metrics": [
            E.ExpectTableRowCountToBeBetween(min_value=1),
            E.ExpectColumnValuesToBeUnique(column="key"),
            E.ExpectColumnValuesToNotBeNull(column="value"),
        ],
    }
    if name not in suites:
        raise KeyError(f"no expectation suite named {name!r} (known: {', '.join(sorted(suites))})")
    return gx.ExpectationSuite(name=name, expectations=suites[name])

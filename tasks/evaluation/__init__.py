"""OR-Clarify evaluation: the judge, the metrics, the recovery plot and the report (or-clarify.md §3, §4, §9)."""

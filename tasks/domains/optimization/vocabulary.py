"""The optimisation domain's closed vocabularies (OR-Clarify schema 0.3) and its judge hints, the one place that
names them: the decomposer, the filter, the TOML reader and writer and the domain object read them from here."""

from tasks.domain_context import JudgeHints

__all__ = ["HIDEABLE_KINDS", "OPTIMIZATION_HINTS", "SEVERITIES", "UNIT_KINDS"]

UNIT_KINDS = ("context", "data", "constraint", "objective", "assumption")
"""Problem-unit kinds observed in OR-Clarify schema 0.3."""

SEVERITIES = ("P0", "P1", "P2")
"""P0: not asking changes the problem, feasible set, objective meaning or decision entity. P1: the model is
materially incomplete or likely wrong. P2: boundary interpretation, reporting or minor assumptions."""

HIDEABLE_KINDS = ("objective", "constraint", "assumption")
"""Kinds that may be formulation-critical; data and context stay visible."""

OPTIMIZATION_HINTS = JudgeHints(
    subject="an optimisation problem", deliverable="an optimisation model", analyst="an operations-research analyst",
    core="P0 changes the problem, its feasible set, the objective or the decision entity; P1 leaves the model "
         "materially incomplete or likely wrong.",
)
"""The optimisation domain's hints (``Domain.judge_hints``)."""

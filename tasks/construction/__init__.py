"""Unit construction, shared by every unit domain: decompose -> filter (eligibility) -> mask -> annotate -> brief.

The optimisation domain (``construct@optimization``, the OR-Clarify format) runs all of it; the analytics domain
reuses its segmentation, annotation and brief rendering. The published format's closed vocabularies live here, the
one place that names them.
"""

__all__ = ["HIDEABLE_KINDS", "SEVERITIES", "UNIT_KINDS"]

UNIT_KINDS = ("context", "data", "constraint", "objective", "assumption")
"""Problem-unit kinds observed in OR-Clarify schema 0.3."""

SEVERITIES = ("P0", "P1", "P2")
"""P0: not asking changes the problem, feasible set, objective meaning or decision entity. P1: the model is
materially incomplete or likely wrong. P2: boundary interpretation, reporting or minor assumptions."""

HIDEABLE_KINDS = ("objective", "constraint", "assumption")
"""Kinds that may be formulation-critical; data and context stay visible."""

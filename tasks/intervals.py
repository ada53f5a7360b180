"""Confidence intervals shared by the analyses (``question_analysis``'s findings, the ``shap`` stage's plots)."""

from __future__ import annotations

import math


def wilson(k: int, n: int, z: float, *, empty: tuple[float, float]) -> tuple[float, float]:
    """The Wilson score interval of ``k`` successes in ``n`` trials at ``z``; ``empty`` for n = 0."""
    if n == 0:
        return empty
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)

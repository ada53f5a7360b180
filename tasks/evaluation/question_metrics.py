"""SWE evaluation metrics per method, with 95% bootstrap intervals over issues.

Per case (one incomplete issue variant; H = its hidden categories, Q = the method's questions):

- a hidden category h is **recovered** when at least one question is classified into h (``question_classifier``)
  *and* answered by the simulated user (``swe_user``: anything but "I don't have that information.");
- ``recall`` = |recovered| / |H|; ``full_coverage`` = 1 when every hidden category is recovered;
- ``weighted_recovery`` = Σ_{h recovered} w_h / Σ_{h ∈ H} w_h (category weights; a case whose hidden weight is 0
  is left out of this mean);
- ``predicted_resolution`` (surrogate) = the shap stage's classifier on visible ∪ recovered categories.

Per method:

- issue-level metrics (``questions_per_issue``, ``distinct_intents``, ``hidden_recall``, ``full_coverage_rate``,
  ``weighted_recovery``, ``reward_mean``, ``reward_<stage>_mean``, ``predicted_resolution``,
  ``measured_resolution``): the mean over evaluated cases (``distinct_intents``: a list's distinct intents /
  questions, ``tasks.rewards.intents``, over the cases with questions);
- question-level rates (``redundancy_rate``, ``answerability_rate``, ``answered_rate``, ``category_share.<label>``):
  pooled over all questions, Σ flagged / Σ judged (a judge failure is left out of both);
- ``CI95``: percentile bootstrap over **issues** (a case's variants resample together, since they share one source
  issue): B resamples of the issues with ``numpy.random.default_rng(seed)``, the statistic recomputed as the
  pooled ratio Σ numerators / Σ denominators (for issue-level metrics the denominators are case counts). Every
  metric of a method uses the same resamples. With one issue, or no spread, the interval is the point; it is
  widened to contain the point. (``tasks.evaluation.metrics.bootstrap_ci`` resamples one mean per case, which
  cannot weight a pooled ratio by its denominators, hence this paired variant.)

Floats are rounded and keys sorted by ``tasks.evaluation.metrics.tidy``, so the summary is byte-stable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tasks.categories import Category
from tasks.evaluation.question_units import QuestionUnit
from tasks.records import Case
from tasks.rewards.config import STAGE_NAMES
from tasks.rewards.intents import distinct_ratio

LABELS: tuple[str, ...] = (*(c.key for c in Category), "irrelevant")
ISSUE_METRICS = ("questions_per_issue", "distinct_intents", "hidden_recall", "full_coverage_rate",
                 "weighted_recovery", "reward_mean", *(f"reward_{s}_mean" for s in STAGE_NAMES), "predicted_resolution")
QUESTION_METRICS = ("redundancy_rate", "answerability_rate", "answered_rate")
RATE_COLUMNS = ("distinct_intents", "hidden_recall", "full_coverage_rate", "weighted_recovery",
                "predicted_resolution", *QUESTION_METRICS)


@dataclass(frozen=True)
class CaseOutcome:
    """What one (method, case) unit achieved; the per-case row of the metrics."""

    case_id: str
    source_id: str
    n_questions: int
    hidden: tuple[str, ...]
    recovered: tuple[str, ...]
    recall: float
    full_coverage: bool
    weighted_recovery: float | None
    predicted_resolution: float | None


def recovered_categories(case: Case, unit: QuestionUnit) -> list[str]:
    hidden = [c.key for c in case.hidden_categories]
    hit = {q.label for q in unit.questions if q.answered and q.label in hidden}
    return [h for h in hidden if h in hit]


def outcome(case: Case, unit: QuestionUnit, weights: Mapping[str, float], predicted: float | None = None,
            recovered: Sequence[str] | None = None) -> CaseOutcome:
    """The unit's scores; ``recovered``: the hidden categories it recovered when not the user's own answers (a
    persona's, ``questions.personas``)."""
    hidden = [c.key for c in case.hidden_categories]
    recovered = recovered_categories(case, unit) if recovered is None else list(recovered)
    total = sum(weights[h] for h in hidden)
    return CaseOutcome(
        case_id=case.case_id, source_id=case.metadata.source_id, n_questions=len(unit.questions),
        hidden=tuple(hidden), recovered=tuple(recovered), recall=len(recovered) / len(hidden),
        full_coverage=len(recovered) == len(hidden),
        weighted_recovery=(sum(weights[h] for h in recovered) / total) if total > 0 else None,
        predicted_resolution=predicted,
    )


def distinct_intents(unit: QuestionUnit) -> float | None:
    """Distinct intents / questions of one unit; None without questions."""
    return distinct_ratio([q.intent for q in unit.questions])


def presence_after(case: Case, unit: QuestionUnit) -> set[str]:
    """Categories the coding agent would have: those visible in the brief plus the recovered ones."""
    return {c.key for c in case.visible_categories} | set(recovered_categories(case, unit))


# ---- bootstrap ------------------------------------------------------------------------------------------------


class IssueBootstrap:
    """Paired percentile bootstrap over issues (clusters of cases); one resample matrix per method."""

    def __init__(self, clusters: Sequence[str], *, n_resamples: int, seed: int):
        self.keys = sorted(set(clusters))
        where = {k: i for i, k in enumerate(self.keys)}
        self.index = np.array([where[c] for c in clusters], dtype=np.int64)
        k = len(self.keys)
        self.draws = np.random.default_rng(seed).integers(0, k, size=(n_resamples, k)) if k > 1 else None

    def _per_cluster(self, values: Sequence[float]) -> np.ndarray:
        return np.bincount(self.index, weights=np.asarray(values, dtype=np.float64), minlength=len(self.keys))

    def ratio(self, nums: Sequence[float], dens: Sequence[float]) -> tuple[float | None, list[float] | None]:
        """(Σ nums / Σ dens, its interval); (None, None) when Σ dens is 0."""
        num, den = self._per_cluster(nums), self._per_cluster(dens)
        if den.sum() <= 0:
            return None, None
        point = float(num.sum() / den.sum())
        if self.draws is None:
            return point, [point, point]
        n, d = num[self.draws].sum(axis=1), den[self.draws].sum(axis=1)
        stats = n[d > 0] / d[d > 0]
        if stats.size == 0 or np.ptp(stats) == 0:
            return point, [point, point]
        low, high = np.percentile(stats, [2.5, 97.5])
        return point, [float(min(low, point)), float(max(high, point))]

    def mean(self, values: Sequence[float | None]) -> tuple[float | None, list[float] | None]:
        """Mean over cases with a value (None values are left out)."""
        nums = [0.0 if v is None else float(v) for v in values]
        dens = [0.0 if v is None else 1.0 for v in values]
        return self.ratio(nums, dens)


# ---- per method ---------------------------------------------------------------------------------------------


def method_metrics(cases: Mapping[str, Case], units: Sequence[QuestionUnit], outcomes: Sequence[CaseOutcome], *,
                   n_resamples: int, seed: int) -> dict[str, Any]:
    """Every metric of one method over its evaluated (not skipped) units, aligned with ``outcomes``."""
    boot = IssueBootstrap([u.source_id for u in units], n_resamples=n_resamples, seed=seed)
    values: dict[str, Any] = {}
    ci: dict[str, Any] = {}

    def put(name: str, result: tuple[float | None, list[float] | None]) -> None:
        values[name], ci[name] = result

    put("questions_per_issue", boot.mean([o.n_questions for o in outcomes]))
    put("distinct_intents", boot.mean([distinct_intents(u) for u in units]))
    put("hidden_recall", boot.mean([o.recall for o in outcomes]))
    put("full_coverage_rate", boot.mean([float(o.full_coverage) for o in outcomes]))
    put("weighted_recovery", boot.mean([o.weighted_recovery for o in outcomes]))
    put("reward_mean", boot.mean([u.reward.total if u.reward else 0.0 for u in units]))
    for stage in STAGE_NAMES:
        put(f"reward_{stage}_mean", boot.mean([(u.reward.values.get(stage) if u.reward else 0.0) for u in units]))
    put("predicted_resolution", boot.mean([o.predicted_resolution for o in outcomes]))

    def pooled(flag: str, want: Any = True) -> tuple[float | None, list[float] | None]:
        nums = [sum(getattr(q, flag) == want for q in u.questions if getattr(q, flag) is not None) for u in units]
        dens = [sum(getattr(q, flag) is not None for q in u.questions) for u in units]
        return boot.ratio(nums, dens)

    put("redundancy_rate", pooled("redundant"))
    put("answerability_rate", pooled("answerable"))
    put("answered_rate", pooled("answered"))
    shares, share_ci = {}, {}
    for label in LABELS:
        shares[label], share_ci[label] = pooled("label", label)
    counts = {label: sum(q.label == label for u in units for q in u.questions) for label in LABELS}
    n_q = sum(len(u.questions) for u in units)
    return {
        **values,
        "CI95": ci,
        "category_share": shares,
        "category_share_CI95": share_ci,
        "category_counts": counts,
        "cases": len(units),
        "issues": len(boot.keys),
        "questions": n_q,
        "cases_with_full_coverage": sum(o.full_coverage for o in outcomes),
        "generation_failures": sum(u.failure is not None for u in units),
        "role_failures": {name: sum(u.role_failures.get(name, 0) for u in units)
                          for name in sorted({n for u in units for n in u.role_failures})},
        "reward_stopped_at": _stopped(units),
        "reward_unscored": {stage: sum(stage in u.reward.unscored for u in units if u.reward)
                            for stage in STAGE_NAMES},
        "unscored": sum(len(u.reward.unscored) for u in units if u.reward),
    }


def _stopped(units: Sequence[QuestionUnit]) -> dict[str, int]:
    out: dict[str, int] = {}
    for u in units:
        key = (u.reward.stopped_at if u.reward else None) or "passed_all"
        out[key] = out.get(key, 0) + 1
    return out


def measured_metrics(resolved: Mapping[str, bool], units: Sequence[QuestionUnit], *, source: str, n_resamples: int,
                     seed: int) -> dict[str, Any]:
    """Measured resolution over the cases the harness evaluated (``resolved``: case id -> resolved)."""
    judged = [u for u in units if u.case_id in resolved]
    boot = IssueBootstrap([u.source_id for u in judged], n_resamples=n_resamples, seed=seed)
    point, ci = boot.mean([float(resolved[u.case_id]) for u in judged])
    return {"value": point, "CI95": ci, "cases": len(judged), "source": source}

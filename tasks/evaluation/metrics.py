"""OR-Clarify metrics (or-clarify.md §4, §9.1) per ``protocol::method``, case-level bootstrap intervals, and the
recovery-versus-questions curves.

Definitions (a *run* is one case x repeat; every played run counts, protocol failures included):

- ``AllSlotExactRestoreRate``: runs whose every hidden slot is ``yes`` / all runs.
- ``CoreExactRestoreRate``: runs whose every P0/P1 slot is ``yes`` / core-eligible runs (a case is core-eligible
  when it has a P0/P1 slot; a slot without severity counts as P1). None when no run is core-eligible.
- ``WeightedSlotScore_macro``: mean of the per-run WSS; ``_micro``: Σ_runs Σ_slots w·v / Σ_runs Σ_slots w.
- ``AtomicQuestionsPerRun``: Σ atomic questions / runs. ``AverageTurns``: mean ``turn_count`` (the READY turn
  included). ``AttemptedTurns``: mean last loop iteration reached.
- ``PrematureStopRate``: rule-based ``premature_stop`` / core-eligible runs (only a run with a P0/P1 slot can stop
  prematurely; a READY on a case with P2 slots only is never premature, so counting those runs in the denominator
  would cap the rate below 1 for an agent that always stops at once). ``StoppingStatusMismatchRate``: runs whose judge
  label differs from the rule-based one / runs.
- ``RecoveryAUC``: the area under the All-Slot recovery curve over q = 0..``RECOVERY_QUESTIONS`` cumulative atomic
  questions (:func:`recovery_points`), as a share: a run that had every slot after q* questions scores
  (Q - ceil(q*) + 1) / (Q + 1), a run that never had them 0. Unlike the endpoint rates it rewards asking the right
  question early, so two methods that ask the same questions in another order differ here (OR-Clarify Fig. 4).
- ``MultiQuestionTurnRate``: question turns with more than one atomic question / question turns.
- ``DSelectionRate`` (MC-D only): D picks / question turns. Choice match rates: each ``match_status`` / audit events
  (question turns with a match status); ``MCForcedChoiceRate`` (MC only): ``no_match`` / audit events.
- ``<counter>`` per-run means of the method counters under ``Counters`` (a counter a run lacks counts 0);
  ``SelectorFallbacksPerRun`` sums the counters whose name starts with ``selector_fallback``.
- Tokens and cost come from the episodes' role usage (the judge's own calls are not part of an episode).
  Cost is litellm's price of each provider call (0 for local backends and unpriced models; cache hits cost 0).
  ``TotalTokens``, ``LatencySeconds`` (summed wall time of the row's role calls: provider calls, and the local
  backends' own work, a local model's first load included) and ``LatencyPerRunSeconds``;
  ``ScorePerDollar``: ``WeightedSlotScore_macro`` / ``CostPerRunUSD`` (None at zero cost); ``ScorePerQuestion``:
  ``WeightedSlotScore_macro`` / ``AtomicQuestionsPerRun`` (None when the row asks nothing).

Intervals (``CI95``): the statistic's per-case mean over its repeats, resampled over cases with
``scipy.stats.bootstrap`` (percentile method, fixed seed); with one case or no spread the interval is the point.
The interval is widened to include the reported point when the two differ (unequal repeats per case).
Rates with an empty denominator are None. Floats are rounded to 6 places and keys sorted, so reruns give
identical JSON (the latency figures are wall time: equal when the units come from the store, not when replayed).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from tasks.episodes.records import HIT_VALUE, PROTOCOLS, SEVERITY_WEIGHT, Episode, JudgeResult
from tasks.evaluation.cost_table import efficiency
from tasks.evaluation.judge import turn_of
from tasks.records import MethodReference

STATUSES = ("appropriate_stop", "premature_stop", "over_questioning", "no_stop")
HITS = ("yes", "partial", "no")
SEVERITIES = ("P0", "P1", "P2")
MATCHES = ("exact_match", "acceptable_match", "no_match", "undetermined")
MATCH_NAMES = {"exact_match": "ChoiceExactMatchRate", "acceptable_match": "ChoiceAcceptableMatchRate",
               "no_match": "ChoiceNoMatchRate", "undetermined": "ChoiceUndeterminedRate"}
CI_METRICS = ("AllSlotExactRestoreRate", "CoreExactRestoreRate", "WeightedSlotScore_macro", "AtomicQuestionsPerRun",
              "SilentAssumptionsPerRun", "PrematureStopRate", "RecoveryAUC")
RECOVERY_QUESTIONS = 20
"""The question budget of ``RecoveryAUC`` (the default T_max)."""
COST_METRICS = ("TotalTokens", "EstimatedCostUSD", "LatencySeconds", "ScorePerDollar", "ScorePerQuestion")
"""Never negative (the ``or_summary`` gate); None where a row has no such figure."""
RATE_METRICS = ("AllSlotExactRestoreRate", "CoreExactRestoreRate", "WeightedSlotScore_macro",
                "WeightedSlotScore_micro", "RecoveryAUC", "ReadyRate", "PrematureStopRate",
                "StoppingStatusMismatchRate", "ProtocolFailureRate", "MultiQuestionTurnRate", "DSelectionRate",
                "MCForcedChoiceRate", "JudgeFailureRate", *MATCH_NAMES.values())
DIGITS = 6


def group_key(episode: Episode) -> str:
    return f"{episode.protocol}::{episode.method}"


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


def tidy(value: Any) -> Any:
    """Round floats, sort dict keys, turn numpy scalars and tuples into plain JSON values (recursively)."""
    if isinstance(value, dict):
        return {str(k): tidy(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, list | tuple):
        return [tidy(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        if math.isnan(value):
            return None
        return round(value, DIGITS) + 0.0
    return value


def _check(episodes: Sequence[Episode], judgements: Sequence[JudgeResult]) -> None:
    if len(episodes) != len(judgements):
        raise ValueError(f"{len(episodes)} episodes but {len(judgements)} judgements")
    for e, j in zip(episodes, judgements):
        if e.case_id != j.case_id:
            raise ValueError(f"episode {e.key} is aligned with a judgement of case {j.case_id}")


# ---- bootstrap ------------------------------------------------------------------------------------------------


def case_means(values: Sequence[tuple[str, float]]) -> np.ndarray:
    """Per-case mean over its repeats, in case-id order."""
    by_case: dict[str, list[float]] = defaultdict(list)
    for case_id, v in values:
        by_case[case_id].append(float(v))
    return np.array([np.mean(by_case[c]) for c in sorted(by_case)], dtype=np.float64)


def bootstrap_ci(means: np.ndarray, point: Any, *, n_resamples: int = 2000, seed: int = 0,
                 confidence: float = 0.95) -> list | None:
    """Percentile interval of the mean of ``means`` (one value per case, resampled over cases), widened to cover
    ``point``. ``means`` may be 2-D (cases x grid, ``point`` one value per column): then one interval per column,
    returned as ``[lows, highs]``."""
    from scipy.stats import bootstrap

    means = np.asarray(means, dtype=np.float64)
    if means.shape[0] == 0 or point is None:
        return None
    centre = means.mean(axis=0)
    if means.shape[0] < 2 or np.all(np.ptp(means, axis=0) == 0):
        low, high = centre, centre
    else:
        res = bootstrap((means,), np.mean, n_resamples=n_resamples, confidence_level=confidence, method="percentile",
                        axis=0, vectorized=True, rng=np.random.default_rng(seed))
        low, high = res.confidence_interval.low, res.confidence_interval.high
        # columns without spread come back as NaN on some scipy versions: their interval is the point
        low, high = np.where(np.isnan(low), centre, low), np.where(np.isnan(high), centre, high)
    low, high = np.minimum(low, point), np.maximum(high, point)
    if means.ndim == 1:
        return [float(low), float(high)]
    return [np.asarray(low).tolist(), np.asarray(high).tolist()]


# ---- per-group summary -------------------------------------------------------------------------------------------


def _mean(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if len(values) else None


def _group_metrics(all_runs: list[tuple[Episode, JudgeResult]], *, n_resamples: int, seed: int) -> dict[str, Any]:
    """Episode metrics over every run; judge-derived ones over the runs whose judge answered (a failed judge is
    unscored: counted in ``JudgeFailures``/``Unscored`` and left out, never a run of "no" hits)."""
    n = len(all_runs)
    eps = [e for e, _ in all_runs]
    runs = [(e, j) for e, j in all_runs if not j.judge_failed]
    judged = [j for _, j in runs]
    nj = len(judged)
    protocol = eps[0].protocol
    core = [(e, j) for e, j in runs if j.core_eligible]
    slots = [s for j in judged for s in j.slot_scores]
    turns = [t for e in eps for t in e.question_turns]
    audited = [t for t in turns if t.match_status is not None]
    matches = Counter(t.match_status for t in audited)
    judge_counts = Counter(j.stopping_behavior.status for j in judged)
    rule_counts = Counter(j.rule_based_status for j in judged)
    failures = Counter(e.protocol_failure.type for e in eps if e.protocol_failure)
    counters = sorted({name for e in eps for name in e.counters})
    usage = [u for e in eps for u in e.usage.values()]
    tokens = sum(u.prompt_tokens + u.completion_tokens for u in usage)
    cost = float(sum(u.cost_usd for u in usage))
    weight = sum(SEVERITY_WEIGHT[s.severity] for s in slots)
    fallback = sum(v for e in eps for k, v in e.counters.items() if k.startswith("selector_fallback"))

    m: dict[str, Any] = {
        "protocol": protocol,
        "method": eps[0].method,
        "RunCount": n,
        "CaseCount": len({e.case_id for e in eps}),
        "AllSlotExactRestoreCount": sum(j.all_slot_exact for j in judged),
        "AllSlotExactRestoreRate": _ratio(sum(j.all_slot_exact for j in judged), nj),
        "CoreEligibleRunCount": len(core),
        "CoreExactRestoreCount": sum(bool(j.core_exact) for _, j in core),
        "CoreExactRestoreRate": _ratio(sum(bool(j.core_exact) for _, j in core), len(core)),
        "WeightedSlotScore_macro": _mean([j.weighted_slot_score for j in judged]),
        "RecoveryAUC": _mean([recovery_auc(e, j) for e, j in runs]),
        "WeightedSlotScore_micro": _ratio(sum(SEVERITY_WEIGHT[s.severity] * HIT_VALUE[s.hit] for s in slots), weight),
        "HitCounts": {h: sum(s.hit == h for s in slots) for h in HITS},
        "HitCountsBySeverity": {sev: {h: sum(s.hit == h and s.severity == sev for s in slots) for h in HITS}
                                for sev in SEVERITIES},
        "SilentAssumptionsPerRun": _ratio(sum(len(j.silent_assumptions) for j in judged), nj),
        "AtomicQuestionsPerRun": sum(e.atomic_questions for e in eps) / n,
        "QuestionTurnsPerRun": len(turns) / n,
        "AverageTurns": sum(e.turn_count for e in eps) / n,
        "AttemptedTurns": sum(e.attempted_turns for e in eps) / n,
        "ReadyRate": sum(e.ready for e in eps) / n,
        "PrematureStopCount": rule_counts["premature_stop"],
        "PrematureStopRate": _ratio(rule_counts["premature_stop"], len(core)),
        "StoppingStatusCounts": {s: judge_counts[s] for s in STATUSES},
        "RuleBasedStoppingStatusCounts": {s: rule_counts[s] for s in STATUSES},
        "StoppingStatusMismatchRate": _ratio(sum(j.stopping_behavior.status != j.rule_based_status
                                                 for j in judged), nj),
        "ProtocolFailureRate": sum(e.protocol_failed for e in eps) / n,
        "ProtocolFailureCounts": dict(failures),
        "MultiQuestionTurnRate": _ratio(sum(t.atomic_count > 1 for t in turns), len(turns)),
        "DSelectionRate": _ratio(sum(t.choice == "D" for t in turns), len(turns)) if protocol == "mc_d" else None,
        "ChoiceAuditEvents": len(audited),
        **{MATCH_NAMES[k]: (_ratio(matches[k], len(audited)) if protocol != "open" else None) for k in MATCHES},
        "MCForcedChoiceRate": _ratio(matches["no_match"], len(audited)) if protocol == "mc" else None,
        "DisclosedSlotsPerRun": (sum(len({s for t in e.question_turns for s in t.disclosed_slot_ids}) for e in eps) / n
                                 if protocol == "open" else None),
        "MultiSlotDisclosuresPerRun": (sum(len(t.disclosed_slot_ids) > 1 for t in turns) / n
                                       if protocol == "open" else None),
        "SelectorFallbacksPerRun": fallback / n,
        "Counters": {k: sum(e.counters.get(k, 0.0) for e in eps) / n for k in counters},
        "ProviderCallsPerRun": sum(u.calls for u in usage) / n,
        "PromptTokens": sum(u.prompt_tokens for u in usage),
        "CompletionTokens": sum(u.completion_tokens for u in usage),
        "ReasoningTokens": sum(u.reasoning_tokens for u in usage),
        "TruncatedReplies": sum(u.truncated for u in usage),
        "ParamsDroppedCalls": sum(u.params_dropped for u in usage),
        **efficiency(tokens=tokens, cost=cost, latency=float(sum(u.latency_s for u in usage)), n=n, per="Run",
                     score=_mean([j.weighted_slot_score for j in judged]),
                     questions=sum(e.atomic_questions for e in eps) / n),
        "JudgeFailures": n - nj,
        "JudgeFailureRate": (n - nj) / n,
        "Unscored": n - nj,
        "ScoredRunCount": nj,
    }
    per_run: dict[str, Callable[[Episode, JudgeResult], float]] = {
        "AllSlotExactRestoreRate": lambda e, j: float(j.all_slot_exact),
        "WeightedSlotScore_macro": lambda e, j: j.weighted_slot_score,
        "AtomicQuestionsPerRun": lambda e, j: float(e.atomic_questions),
        "SilentAssumptionsPerRun": lambda e, j: float(len(j.silent_assumptions)),
        "PrematureStopRate": lambda e, j: float(j.rule_based_status == "premature_stop"),
        "RecoveryAUC": recovery_auc,
    }
    ci: dict[str, Any] = {}
    for i, name in enumerate(CI_METRICS):
        pool = core if name in ("CoreExactRestoreRate", "PrematureStopRate") else runs
        fn = (lambda e, j: float(bool(j.core_exact))) if name == "CoreExactRestoreRate" else per_run[name]
        means = case_means([(e.case_id, fn(e, j)) for e, j in pool])
        ci[name] = bootstrap_ci(means, m[name], n_resamples=n_resamples, seed=seed + i)
    m["CI95"] = ci
    return m


def summarise(episodes: Sequence[Episode], judgements: Sequence[JudgeResult],
              cases: Mapping[str, Any] | None = None, *, n_resamples: int = 2000, seed: int = 0) -> dict[str, dict]:
    """``{"protocol::method": {metric: value, ..., "CI95": {metric: [low, high]}}}`` (see the module docstring).
    ``cases`` is accepted for symmetry with the judge; every number comes from the episodes and judgements."""
    _check(episodes, judgements)
    groups: dict[str, list[tuple[Episode, JudgeResult]]] = defaultdict(list)
    for e, j in zip(episodes, judgements):
        groups[group_key(e)].append((e, j))
    return tidy({key: _group_metrics(sorted(runs, key=lambda r: (r[0].case_id, r[0].repeat)),
                                     n_resamples=n_resamples, seed=seed)
                 for key, runs in groups.items()})


def ranked_summary(groups: Mapping[str, dict], references: Mapping[str, MethodReference | None]) -> dict[str, dict]:
    """``summary.json``: ``{"rows": {key: metrics}, "reference_rows": {key: {**metrics, "reference": {kind, reads}}}}``.

    ``groups`` comes from :func:`summarise`; ``references`` maps a method's display name to why it is a reference
    row (``tasks.clarifiers.base.reference_of`` of its kind), None for a ranked method. Reference rows (the oracle,
    the ready-now floor) are kept apart so no table, order or comparison ranks them with the methods."""
    rows: dict[str, dict] = {}
    reference_rows: dict[str, dict] = {}
    for key, metrics in groups.items():
        reference = references.get(metrics["method"])
        if reference is None:
            rows[key] = metrics
        else:
            reference_rows[key] = {**metrics, "reference": reference.model_dump()}
    return {"rows": rows, "reference_rows": reference_rows}


def sort_keys(keys: Sequence[str]) -> list[str]:
    """Report order: Open, MC, MC-D, then method name."""
    order = {p: i for i, p in enumerate(PROTOCOLS)}
    return sorted(keys, key=lambda k: (order.get(k.split("::")[0], 99), k.split("::", 1)[-1]))


# ---- recovery curves ------------------------------------------------------------------------------------------


def recovery_points(episode: Episode, judgement: JudgeResult) -> tuple[float, float | None]:
    """Cumulative atomic questions at which the run had recovered all slots / all P0-P1 slots (inf: never).

    A slot is recovered at the question turn its ``yes`` evidence points to (``evidence_location = "turn N"``); the
    run's count after turn N is the atomic questions of its question turns up to and including N. A ``yes`` whose
    turn is unknown is placed at the run's last question. The run recovers a set of slots at the largest of their
    points (0 for an empty set); a set with a slot that is not ``yes`` is never recovered. Core is None when the run
    is not core-eligible.
    """
    cumulative: list[tuple[int, int]] = []
    total = 0
    for t in sorted(episode.question_turns, key=lambda t: t.turn):
        total += t.atomic_count
        cumulative.append((t.turn, total))

    def at(turn: int | None) -> float:
        if turn is None:
            return float(total)
        return float(max([c for tt, c in cumulative if tt <= turn], default=0))

    def point(scores) -> float:
        if any(s.hit != "yes" for s in scores):
            return math.inf
        return max((at(turn_of(s.evidence_location)) for s in scores), default=0.0)

    core = [s for s in judgement.slot_scores if s.severity in ("P0", "P1")]
    return point(judgement.slot_scores), (point(core) if judgement.core_eligible else None)


def recovery_auc(episode: Episode, judgement: JudgeResult, questions: int = RECOVERY_QUESTIONS) -> float:
    """The run's share of q = 0..``questions`` at which it had recovered every slot (see ``RecoveryAUC``)."""
    point = recovery_points(episode, judgement)[0]
    if math.isinf(point) or point > questions:
        return 0.0
    return (questions - math.ceil(point) + 1) / (questions + 1)


def recovery_curves(episodes: Sequence[Episode], judgements: Sequence[JudgeResult],
                    cases: Mapping[str, Any] | None = None, *, n_resamples: int = 2000, seed: int = 0,
                    max_questions: int | None = None) -> dict[str, Any]:
    """All-Slot and Core exact recovery after q cumulative atomic questions, q = 0..Q, per ``protocol::method``.

    Recovery after q questions = the fraction of runs whose slots (all / P0-P1, core over core-eligible runs) were
    all recovered within their first q atomic questions (:func:`recovery_points`). At Q (the most questions any run
    asked, or ``max_questions``) it equals the endpoint exact rate. Bands: 95% case-level bootstrap per q (each case's
    indicator averaged over its repeats first). Output: ``{"questions": [0..Q], "curves": {key: {"protocol",
    "method", "runs", "core_runs", "all_slot": {"mean", "low", "high"}, "core": {...} | None}}}``.
    """
    _check(episodes, judgements)
    top = max_questions if max_questions is not None else max((e.atomic_questions for e in episodes), default=0)
    grid = np.arange(0, max(int(top), 1) + 1, dtype=np.float64)
    groups: dict[str, list[tuple[Episode, JudgeResult]]] = defaultdict(list)
    for e, j in zip(episodes, judgements):
        groups[group_key(e)].append((e, j))
    curves: dict[str, Any] = {}
    for key in sort_keys(list(groups)):
        runs = groups[key]
        points = [(e.case_id, *recovery_points(e, j)) for e, j in runs]

        def band(rows: list[tuple[str, float]]) -> dict[str, list[float]] | None:
            if not rows:
                return None
            by_case: dict[str, list[np.ndarray]] = defaultdict(list)
            for case_id, p in rows:
                by_case[case_id].append((p <= grid).astype(np.float64))
            means = np.array([np.mean(by_case[c], axis=0) for c in sorted(by_case)])
            mean = np.mean([(p <= grid).astype(np.float64) for _, p in rows], axis=0)
            low, high = bootstrap_ci(means, mean, n_resamples=n_resamples, seed=seed)
            return {"mean": mean.tolist(), "low": low, "high": high}

        core_rows = [(c, p) for c, _, p in points if p is not None]
        curves[key] = {"protocol": runs[0][0].protocol, "method": runs[0][0].method, "runs": len(runs),
                       "core_runs": len(core_rows), "all_slot": band([(c, p) for c, p, _ in points]),
                       "core": band(core_rows)}
    return tidy({"questions": grid.astype(int).tolist(), "curves": curves})


# ---- frames for the GX gates ------------------------------------------------------------------------------------


def episodes_frame(episodes: Sequence[Episode], judgements: Sequence[JudgeResult]):
    """One row per episode for the ``or_episodes`` suite."""
    import pandas as pd

    _check(episodes, judgements)
    rows = []
    for e, j in zip(episodes, judgements):
        if e.ready and not e.protocol_failed:
            end = "ready"
        elif e.protocol_failed and not e.ready:
            end = "protocol_failure"
        elif not e.ready and not e.protocol_failed and e.attempted_turns >= e.max_turns:
            end = "turn_limit"
        else:
            end = "inconsistent"
        rows.append({
            # a persona replays a cooperative unit: its episode is told apart by the persona
            "key": e.key if e.persona == "cooperative" else f"{e.key}@{e.persona}",
            "case_id": e.case_id, "method": e.method, "protocol": e.protocol, "repeat": e.repeat,
            "turn_count": e.turn_count, "attempted_turns": e.attempted_turns, "max_turns": e.max_turns,
            "atomic_questions": e.atomic_questions, "question_turns": len(e.question_turns), "ready": e.ready,
            "protocol_failed": e.protocol_failed, "end_state": end, "wss": j.weighted_slot_score,
            "core_eligible": j.core_eligible, "core_exact": j.core_exact,
            "core_exact_consistent": (j.core_exact is None) == (not j.core_eligible),
            "silent_assumptions": len(j.silent_assumptions), "judge_failed": j.judge_failed,
        })
    return pd.DataFrame(rows, columns=["key", "case_id", "method", "protocol", "repeat", "turn_count",
                                       "attempted_turns", "max_turns", "atomic_questions", "question_turns", "ready",
                                       "protocol_failed", "end_state", "wss", "core_eligible", "core_exact",
                                       "core_exact_consistent", "silent_assumptions", "judge_failed"])


def summary_frame(summary: Mapping[str, Mapping[str, Any]]):
    """One row per ``protocol::method`` of ``summary.json`` (:func:`ranked_summary`; ranked and reference rows alike)
    for the ``or_summary`` suite: the rates, RunCount and each CI's bounds (``<metric>_low`` / ``<metric>_high``)."""
    import pandas as pd

    every = {**summary["rows"], **summary["reference_rows"]}
    rows = []
    for key in sort_keys(list(every)):
        s = every[key]
        row: dict[str, Any] = {"key": key, "RunCount": s["RunCount"], "CoreEligibleRunCount": s["CoreEligibleRunCount"],
                               "AtomicQuestionsPerRun": s["AtomicQuestionsPerRun"],
                               "SilentAssumptionsPerRun": s["SilentAssumptionsPerRun"]}
        row.update({name: s.get(name) for name in (*RATE_METRICS, *COST_METRICS)})
        for name in CI_METRICS:
            bounds = (s.get("CI95") or {}).get(name)
            row[f"{name}_low"], row[f"{name}_high"] = (bounds if bounds else (None, None))
        rows.append(row)
    frame = pd.DataFrame(rows)
    return frame.astype({c: "float64" for c in frame.columns if c not in ("key", "RunCount", "CoreEligibleRunCount")})

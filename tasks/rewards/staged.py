"""``StagedReward``: parse each completion's questions, run the stages in order with stage rejection, gate."""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Mapping, Sequence

import numpy as np

from tasks.rewards.breakdown import (
    NO_QUESTIONS,
    PASS_TOLERANCE,
    RewardBreakdown,
    RewardSample,
    _validate,
    completion_text,
    gated_total,
)
from tasks.rewards.config import RewardConfig
from tasks.rewards.judges import Judges, RoleJudges
from tasks.rewards.parse import parse_questions
from tasks.rewards.stages import STAGES, Batch, classify_questions, embed_questions
from tasks.rewards.weights import RelevanceWeights, from_mapping, load_weights


class StagedReward:
    """CLARITI's four-stage reward. Keeps a bounded cache of recent generations' question vectors (diversity)."""

    def __init__(self, cfg: RewardConfig | None = None, weights: Mapping[str, float] | RelevanceWeights | None = None,
                 *, judges: Judges | None = None, client=None):
        self.cfg = cfg or RewardConfig()
        if weights is None:
            self.relevance = load_weights()
        elif isinstance(weights, RelevanceWeights):
            self.relevance = weights
        else:
            self.relevance = from_mapping(weights)
        retries = self.cfg.repair_retries if self.cfg.judge_failure == "repair" else 0
        self.judges: Judges = judges or RoleJudges(self.cfg.judges, client=client, retries=retries)
        self.reference = None
        if self.cfg.protocol == "reference":
            from tasks.rewards.reference import ReferenceReward

            self.reference = ReferenceReward(self.cfg, client=client)
        self._cache: deque[tuple[np.ndarray, list[str | None]]] = deque(maxlen=self.cfg.diversity.cache_size)
        """Per recent generation: its question vectors and (``intent`` mode) labels."""
        self.stats: Counter = Counter()

    @property
    def stage_names(self) -> list[str]:
        return list(self.cfg.order)

    def cache_matrix(self) -> np.ndarray:
        return np.concatenate([v for v, _ in self._cache]) if self._cache else np.zeros((0, 0), np.float32)

    def cache_labels(self) -> list[str | None]:
        return [label for _, labels in self._cache for label in labels]

    def reset_cache(self) -> None:
        self._cache.clear()
        if self.reference is not None:
            self.reference.cache.clear()

    def score(self, samples: Sequence[Mapping | RewardSample]) -> list[RewardBreakdown]:
        checked = _validate(samples)
        if self.reference is not None:
            out = self.reference.score(checked)
            self._count(out)
            return out
        batch = Batch(
            incomplete=[s.incomplete_issue for s in checked],
            full=[s.full_issue for s in checked],
            hints=[s.hints for s in checked],
            questions=[parse_questions(completion_text(s.completion)) for s in checked],
            sibling_questions=[[q for sib in s.siblings for q in parse_questions(completion_text(sib))]
                               for s in checked],
        )
        order = self.stage_names
        asking = [i for i, qs in enumerate(batch.questions) if qs]
        values: list[dict[str, float | None]] = [dict.fromkeys(order) for _ in checked]
        passed: list[dict[str, bool | None]] = [dict.fromkeys(order) for _ in checked]
        failures: list[dict[str, int]] = [dict.fromkeys(order, 0) for _ in checked]
        alive = list(asking)
        for stage in order:
            outcomes = STAGES.get(stage)(self, batch, asking if self.cfg.evaluate_all else alive)
            threshold = self.cfg.thresholds.get(stage)
            for i, outcome in outcomes.items():
                values[i][stage] = outcome.value
                passed[i][stage] = None if outcome.value is None else outcome.value >= threshold - PASS_TOLERANCE
                failures[i][stage] = outcome.failures
            alive = [i for i in alive if passed[i][stage] is not False]
        self._remember(batch, asking)
        out = [self._breakdown(batch.questions[i], values[i], passed[i], failures[i]) for i in range(len(checked))]
        self._count(out)
        return out

    def _count(self, out: Sequence[RewardBreakdown]) -> None:
        """Judge failures and unscored stages per stage, samples and questions, into ``stats``."""
        for b in out:
            for stage, n in b.judge_failures.items():
                self.stats[f"judge_failures/{stage}"] += n
            for stage in b.unscored:
                self.stats[f"unscored/{stage}"] += 1
        self.stats["samples"] += len(out)
        self.stats["questions"] += sum(b.n_questions for b in out)

    def _breakdown(self, questions: list[str], values: dict, passed: dict, failures: dict) -> RewardBreakdown:
        if not questions:
            return RewardBreakdown(questions=[], values=dict.fromkeys(values, 0.0), passed=dict(passed),
                                   stopped_at=NO_QUESTIONS, total=0.0, judge_failures=failures)
        order = self.stage_names
        unscored = [s for s in order if values[s] is None and failures[s]]
        stopped = next((s for s in order if passed[s] is False), None)
        total = gated_total(order, values, passed, self.cfg.weights, self.cfg.partial_credit, unscored)
        return RewardBreakdown(questions=questions, values=values, passed=passed, stopped_at=stopped, total=total,
                               judge_failures=failures, unscored=unscored)

    def _remember(self, batch: Batch, asking: Sequence[int]) -> None:
        """Push every generation of the batch into the recent-generations cache, after the whole batch is scored."""
        params = self.cfg.diversity
        if "diversity" not in self.cfg.order or params.cache_size == 0:
            return
        embed_questions(self, batch, [q for i in asking for q in batch.questions[i]])
        if params.mode == "intent":
            classify_questions(self, batch, [k for i in asking for k in batch.label_keys(i, batch.questions[i])])
        for i in asking:
            labels = [batch.labels[k] if params.mode == "intent" else None
                      for k in batch.label_keys(i, batch.questions[i])]
            self._cache.append((np.stack([batch.vectors[q] for q in batch.questions[i]]), labels))

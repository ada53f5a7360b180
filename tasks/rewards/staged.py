"""``StagedReward``: parse each completion's questions, run the stages in order with stage rejection, gate."""

from __future__ import annotations

import math
from collections import Counter, deque
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from tasks.errors import InputError
from tasks.rewards.config import PartialCredit, RewardConfig, StageWeights
from tasks.rewards.judges import Judges, RoleJudges
from tasks.rewards.parse import parse_questions
from tasks.rewards.stages import STAGES, Batch, classify_questions, embed_questions
from tasks.rewards.weights import RelevanceWeights, from_mapping, load_weights

NO_QUESTIONS = "no_questions"
PASS_TOLERANCE = 1e-9
"""A value this close below its threshold passes (1 − 7/10 is not exactly 0.3 in floating point)."""


class RewardSample(BaseModel):
    model_config = ConfigDict(extra="forbid")

    completion: Any
    """A string, or a conversational completion ``[{"role": "assistant", "content": ...}]``."""
    incomplete_issue: str = Field(min_length=1)
    full_issue: str = Field(min_length=1)
    hints: str = ""
    siblings: list[Any] = []
    """The other completions generated for the same prompt."""

    @field_validator("hints", mode="before")
    @classmethod
    def _none_hints(cls, value: Any) -> Any:
        return "" if value is None else value


class RewardBreakdown(BaseModel):
    model_config = ConfigDict(extra="forbid")

    questions: list[str]
    values: dict[str, float | None]
    """Each stage's value (ungated); None for a stage that was not evaluated (``evaluate_all=False``)."""
    passed: dict[str, bool | None]
    stopped_at: str | None
    """The first stage that failed, ``no_questions``, or None when every stage passed."""
    total: float | None
    """The gated reward; None when every stage is unscored (see ``config.JudgeFailure``)."""
    judge_failures: dict[str, int]
    unscored: list[str] = []
    """The stages whose judges failed for every item of this sample: left out of ``total`` and of stage means."""
    protocol: str = "clarifyflow"

    @property
    def n_questions(self) -> int:
        return len(self.questions)


def completion_text(completion: Any) -> str:
    """The assistant's text of a plain or conversational completion."""
    if completion is None:
        return ""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Mapping):
        return str(completion.get("content") or "")
    if isinstance(completion, Sequence):
        messages = [m for m in completion if isinstance(m, Mapping)]
        chosen = [m for m in messages if m.get("role") == "assistant"] or messages
        return "\n".join(str(m.get("content") or "") for m in chosen)
    return str(completion)


def gated_total(order: Sequence[str], values: Mapping[str, float | None], passed: Mapping[str, bool | None],
                weights: StageWeights, rule: PartialCredit, unscored: Sequence[str] = ()) -> float | None:
    """The reward of a sample with questions from its stage values (see ``config.PartialCredit``). The
    ``unscored`` stages neither gate nor count: the rule runs over the scored stages, whose weights are rescaled
    so they sum to the full weight (a judge failure moves no total towards 0); None when no stage is scored."""
    scored = [s for s in order if s not in unscored]
    if not scored:
        return None
    if unscored:
        full = sum(weights.get(s) for s in order)
        part = sum(weights.get(s) for s in scored)
        scale = full / part if part else 1.0
    else:
        scale = 1.0
    terms = [scale * weights.get(s) * (values[s] or 0.0) for s in scored]
    failed = next((k for k, s in enumerate(scored) if not passed[s]), None)
    if failed is None:
        return float(sum(terms))
    if rule == "paper":
        return float(sum(terms[: failed + 1]))
    if rule == "passed":
        return float(sum(terms[:failed]))
    if failed == 0:
        return 0.0
    first = values[scored[0]] or 0.0
    scaled = [t * math.sqrt(max(first, 0.01)) if k == 1 else t for k, t in enumerate(terms[:failed])]
    return 0.5 * float(sum(scaled))


def _validate(samples: Sequence[Mapping | RewardSample]) -> list[RewardSample]:
    out = []
    for i, sample in enumerate(samples):
        if isinstance(sample, RewardSample):
            out.append(sample)
            continue
        try:
            out.append(RewardSample.model_validate(sample))
        except ValidationError as err:
            first = err.errors()[0]
            raise InputError("reward batch", first["msg"], record=f"sample {i}",
                             field=".".join(str(p) for p in first["loc"])) from None
    return out


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
            outcomes = STAGES[stage](self, batch, asking if self.cfg.evaluate_all else alive)
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

"""The registry of reward stages. A stage scores the questions of the given samples with one batched judge call
and returns, per sample index, its value in [0, 1] (None: unscored) and how many judge calls failed (see
``config.JudgeFailure`` for what a failure gives)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import numpy as np

from tasks.registry import Registry
from tasks.rewards.config import NEUTRAL
from tasks.rewards.intents import intent_clusters, same_intent

if TYPE_CHECKING:
    from tasks.rewards.config import RewardConfig
    from tasks.rewards.judges import Judges
    from tasks.rewards.weights import RelevanceWeights


@dataclass
class Batch:
    incomplete: list[str]
    full: list[str]
    hints: list[str]
    questions: list[list[str]]
    sibling_questions: list[list[str]]
    """Per sample: the questions of its sibling completions (same prompt), flattened."""
    vectors: dict[str, np.ndarray] = field(default_factory=dict)
    """Question text -> embedding, filled by the diversity stage and reused for the generation cache."""
    labels: dict[tuple[str, str], str | None] = field(default_factory=dict)
    """(question, incomplete issue) -> the classifier's label, filled by the first stage that needs it (diversity
    in ``intent`` mode, task relevance) and reused by the others, so each question is classified once."""

    def label_keys(self, i: int, questions: Sequence[str]) -> list[tuple[str, str]]:
        return [(q, self.incomplete[i]) for q in questions]


@dataclass(frozen=True)
class StageOutcome:
    value: float | None
    """None: unscored (every judge call of the stage failed for this sample)."""
    failures: int = 0


class StageReward(Protocol):
    """What a stage reads from the reward that runs it (``tasks.rewards.staged.StagedReward``, which imports the
    stages): its settings, its judges, the relevance weights and the recent generations' cache."""

    cfg: RewardConfig
    judges: Judges
    relevance: RelevanceWeights

    def cache_matrix(self) -> np.ndarray: ...

    def cache_labels(self) -> list[str | None]: ...


StageFn = Callable[[StageReward, Batch, Sequence[int]], dict[int, StageOutcome]]
STAGES: Registry[StageFn] = Registry("reward stage")
"""Stage name -> its function, each registered where it is defined (``@STAGES.register("diversity")``)."""


def _flatten(batch: Batch, samples: Sequence[int]) -> tuple[list[int], list[str]]:
    owners = [i for i in samples for _ in batch.questions[i]]
    return owners, [q for i in samples for q in batch.questions[i]]


def _per_sample(reward: StageReward, stage: str, samples: Sequence[int], owners: list[int],
                scores: list[float | None]) -> dict[int, StageOutcome]:
    """Mean of the per-question scores of each sample. A ``None`` (judge failure) is counted in ``failures`` and,
    under ``judge_failure: unscored``/``repair``, left out of the mean (a sample whose every question failed gets
    ``value=None``: the stage is unscored); under ``neutral`` it scores the stage's neutral value."""
    neutral = NEUTRAL[stage] if reward.cfg.judge_failure == "neutral" else None
    sums = dict.fromkeys(samples, 0.0)
    counts = dict.fromkeys(samples, 0)
    fails = dict.fromkeys(samples, 0)
    for owner, score in zip(owners, scores, strict=True):
        if score is None:
            fails[owner] += 1
            score = neutral
        if score is not None:
            counts[owner] += 1
            sums[owner] += score
    return {i: StageOutcome(value=sums[i] / counts[i] if counts[i] else None, failures=fails[i])
            for i in samples if counts[i] or fails[i]}


@STAGES.register("non_redundancy")
def non_redundancy(reward: StageReward, batch: Batch, samples: Sequence[int]) -> dict[int, StageOutcome]:
    """1 − redundant/total: a question is redundant when the incomplete issue already answers it."""
    owners, questions = _flatten(batch, samples)
    flags = reward.judges.redundant(questions, [batch.incomplete[i] for i in owners]) if questions else []
    return _per_sample(reward, "non_redundancy", samples, owners,
                       [None if f is None else float(not f) for f in flags])


@STAGES.register("answerability")
def answerability(reward: StageReward, batch: Batch, samples: Sequence[int]) -> dict[int, StageOutcome]:
    """answerable/total against the full issue plus hints."""
    owners, questions = _flatten(batch, samples)
    flags = reward.judges.answerable(questions, [batch.full[i] for i in owners], [batch.hints[i] for i in owners]) \
        if questions else []
    return _per_sample(reward, "answerability", samples, owners, [None if f is None else float(f) for f in flags])


@STAGES.register("task_relevance")
def task_relevance(reward: StageReward, batch: Batch, samples: Sequence[int]) -> dict[int, StageOutcome]:
    """Mean category weight of the questions (``irrelevant`` = 0); an unknown label counts as a failure."""
    owners, _ = _flatten(batch, samples)
    keys = [key for i in samples for key in batch.label_keys(i, batch.questions[i])]
    classify_questions(reward, batch, keys)
    known = reward.relevance.weights
    scores = [reward.relevance.of(lab) if lab is not None and (lab in known or lab == "irrelevant") else None
              for lab in (batch.labels[k] for k in keys)]
    return _per_sample(reward, "task_relevance", samples, owners, scores)


def classify_questions(reward: StageReward, batch: Batch, keys: Sequence[tuple[str, str]]) -> None:
    """Label the (question, incomplete issue) pairs not labelled yet, in one classifier call."""
    missing = list(dict.fromkeys(k for k in keys if k not in batch.labels))
    if missing:
        batch.labels.update(zip(missing, reward.judges.classify([q for q, _ in missing], [t for _, t in missing]),
                                strict=True))


def embed_questions(reward: StageReward, batch: Batch, texts: Sequence[str]) -> None:
    missing = list(dict.fromkeys(t for t in texts if t not in batch.vectors))
    if missing:
        batch.vectors.update(zip(missing, np.asarray(reward.judges.embed(missing), dtype=np.float32)))


def _matrix(batch: Batch, texts: Sequence[str]) -> np.ndarray:
    return np.stack([batch.vectors[t] for t in texts]) if texts else np.zeros((0, 0), np.float32)


@STAGES.register("diversity")
def diversity(reward: StageReward, batch: Batch, samples: Sequence[int]) -> dict[int, StageOutcome]:
    """``intent`` mode: distinct intents / total, where an intent also met in a sibling completion or a cached
    recent generation does not count (see ``tasks.rewards.intents``). ``embedding`` mode: 1 − similar/total, a
    question being similar when its cosine with another question of the same completion, of a sibling completion
    or of a cached recent generation is >= the similarity threshold.

    A question whose label failed is matched by the similarity threshold alone; the failure is counted once, by
    the task relevance stage, which shares the label."""
    params = reward.cfg.diversity
    embed_questions(reward, batch, [q for i in samples for q in batch.questions[i] + batch.sibling_questions[i]])
    if params.mode == "intent":
        return _intent_diversity(reward, batch, samples)
    cached = reward.cache_matrix()
    out: dict[int, StageOutcome] = {}
    for i in samples:
        if not batch.questions[i]:
            continue
        own = _matrix(batch, batch.questions[i])
        n = len(own)
        inner = own @ own.T
        keep = np.tri(n, k=-1, dtype=bool) if params.within_completion == "earlier" else ~np.eye(n, dtype=bool)
        similar = np.any(np.where(keep, inner, -np.inf) >= params.similarity_threshold, axis=1)
        for others in (_matrix(batch, batch.sibling_questions[i]), cached):
            if others.size:
                similar |= np.max(own @ others.T, axis=1) >= params.similarity_threshold
        out[i] = StageOutcome(value=1.0 - float(similar.sum()) / n)
    return out


def _intent_diversity(reward: StageReward, batch: Batch, samples: Sequence[int]) -> dict[int, StageOutcome]:
    params = reward.cfg.diversity
    thresholds = {"intent_threshold": params.intent_threshold, "similarity_threshold": params.similarity_threshold}
    classify_questions(reward, batch, [k for i in samples
                                       for k in batch.label_keys(i, batch.questions[i] + batch.sibling_questions[i])])
    cached = (reward.cache_labels(), reward.cache_matrix())
    out: dict[int, StageOutcome] = {}
    for i in samples:
        questions = batch.questions[i]
        if not questions:
            continue
        labels = [batch.labels[k] for k in batch.label_keys(i, questions)]
        own = _matrix(batch, questions)
        intents = intent_clusters(labels, own, **thresholds)
        siblings = ([batch.labels[k] for k in batch.label_keys(i, batch.sibling_questions[i])],
                    _matrix(batch, batch.sibling_questions[i]))
        met = np.zeros(len(questions), dtype=bool)
        for other_labels, others in (siblings, cached):
            if other_labels:
                met |= same_intent(labels, own, other_labels, others, **thresholds).any(axis=1)
        repeated = {intent for intent, seen in zip(intents, met) if seen}
        out[i] = StageOutcome(value=len(set(intents) - repeated) / len(questions))
    return out

"""The staged reward's records and its gating rule: a sample, its breakdown, the completion's text and the gated total
(apart from ``StagedReward`` so that the reference protocol's reward builds on them without importing it)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from tasks.errors import InputError
from tasks.rewards.config import PartialCredit, StageWeights

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

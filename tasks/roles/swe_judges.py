"""Redundancy and answerability judges for SWE clarification questions (CLARITI reward stages S1 and S3).

- ``redundancy_judge``: is the question already answerable from the *incomplete* issue? (then it is redundant)
- ``answerability_judge``: is it answerable from the *full* issue plus hints?

Local backend: the simulated user's retrieval (``tasks.roles.swe_user.retrieve_batch``) with the same thresholds,
so "answerable from the full issue and hints" agrees with ``swe_user`` answering, by construction.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from tasks.roles.base import RoleSpec
from tasks.roles.swe_user import retrieve_batch


class RedundancyInput(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str = Field(min_length=1)
    """The incomplete (underspecified) issue the question was asked about."""
    question: str = Field(min_length=1)


class AnswerabilityInput(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str = Field(min_length=1)
    """The full original issue."""
    question: str = Field(min_length=1)
    hints: str = ""
    """The issue's hints (maintainer comments); also searched for an answer."""


class JudgeOutput(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    answerable: bool
    evidence: str = ""
    """The best-matching passage, verbatim from the text (or hints); empty when not answerable."""
    rationale: str = ""


def _judge(items: Sequence[tuple[tuple[str, ...], str]]) -> list[JudgeOutput]:
    return [
        JudgeOutput(answerable=r.answered, evidence=r.best_evidence if r.answered else "", rationale=r.reason)
        for r in retrieve_batch(items)
    ]


def redundancy_local_batch(inputs: Sequence[RedundancyInput]) -> list[JudgeOutput]:
    return _judge([((i.text,), i.question) for i in inputs])


def answerability_local_batch(inputs: Sequence[AnswerabilityInput]) -> list[JudgeOutput]:
    return _judge([((i.text, i.hints), i.question) for i in inputs])


def redundancy_local(inp: RedundancyInput) -> JudgeOutput:
    return redundancy_local_batch([inp])[0]


def answerability_local(inp: AnswerabilityInput) -> JudgeOutput:
    return answerability_local_batch([inp])[0]


REDUNDANCY_SPEC = RoleSpec(name="redundancy_judge", input_model=RedundancyInput, output_model=JudgeOutput,
                           local=redundancy_local, local_batch=redundancy_local_batch)
ANSWERABILITY_SPEC = RoleSpec(name="answerability_judge", input_model=AnswerabilityInput, output_model=JudgeOutput,
                              local=answerability_local, local_batch=answerability_local_batch)

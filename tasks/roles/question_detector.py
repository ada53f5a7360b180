"""``question_detector``: is an agent turn a question, a READY_TO_MODEL stop, or invalid; how many questions?

Case-blind (OR-Clarify §5). Questions count as independent when each could be answered on its own: every item of
a numbered or bulleted list counts, "X or Y?" about one choice is one question, and a follow-up sentence that only
narrows the previous one ("What is the goal? Is it cost?") belongs to it. The local backend is rules only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tasks.roles.base import RoleSpec
from tasks.roles.registry import ROLES

READY_MARKERS = re.compile(r"\bREADY[_ ]TO[_ ]MODEL\b|\[INTERVIEW_COMPLETE\]", re.I)
PREFIX = re.compile(r"^\s*(QUESTION|Q)\s*[:：]\s*", re.I)
LIST_ITEM = re.compile(r"^\s*(?:\d{1,2}[.)]|\(\d{1,2}\)|[-*•]|\(?[a-hA-H]\))\s+(.+)$")
FOLLOW_UP = re.compile(
    r"^\s*(or\b|is it\b|is that\b|are they\b|e\.g\.|eg\b|for (example|instance)\b|like\b|such as\b|i\.e\.|"
    r"that is\b|in other words\b|or is\b|or are\b|or do\b|or does\b|or should\b|or can\b|or must\b|say\b|"
    r"does that mean\b|meaning\b|and if so\b|if so\b|if not\b|otherwise\b)",
    re.I,
)
JOINERS = re.compile(
    r"\s*(?:[;,]\s*(?:and\s+)?(?:also|additionally|in addition|separately|secondly)|\band also|"
    r"[;,]?\s*another question)\b[,:]?\s+",
    re.I,
)
REQUEST = re.compile(
    r"\b(please (tell|confirm|clarify|specify|describe|explain|share|let me know|provide)|could you (tell|confirm|"
    r"clarify|specify|explain|share|let me know)|can you (tell|confirm|clarify|specify|explain|share)|"
    r"i (need|would like|want) to (know|understand|confirm)|let me know)\b",
    re.I,
)


class DetectorInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    turn: str = Field(description="One agent message, verbatim.")


class DetectorOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: Literal["question", "ready_to_model", "invalid"]
    question_count: int = Field(ge=0)
    is_atomic: bool
    atomic_questions: list[str]
    rationale: str = ""


def _question_sentences(text: str) -> list[str]:
    """Split on '?' and merge follow-ups that only narrow the previous question; request sentences count too."""
    chunks = [c.strip() for c in re.findall(r"[^?]*\?|[^?]+$", text) if c.strip()]
    questions: list[str] = []
    for chunk in chunks:
        # Statements before a question mark ("We have two plants. Which one ...?") are context, not questions.
        sentences = [s.strip() for s in re.split(r"(?<=[.!])\s+", chunk) if s.strip()]
        asked = [s for s in sentences if s.endswith("?") or REQUEST.search(s)]
        for sentence in asked:
            if questions and FOLLOW_UP.match(sentence) and questions[-1].endswith("?"):
                questions[-1] = f"{questions[-1]} {sentence}"
            else:
                questions.extend(p.strip() for p in JOINERS.split(sentence) if p and p.strip())
    return [q for q in questions if re.search(r"[A-Za-z]", q)]


def split_questions(text: str) -> list[str]:
    """The independent questions of one agent message (list items first, then sentences)."""
    body = PREFIX.sub("", text.strip())
    items = [m.group(1).strip() for line in body.splitlines() if (m := LIST_ITEM.match(line))]
    if len(items) >= 2:
        return [i for i in items if i]
    return _question_sentences(body)


def local(inp: DetectorInput) -> DetectorOutput:
    text = inp.turn.strip()
    if not text:
        return DetectorOutput(action="invalid", question_count=0, is_atomic=False, atomic_questions=[],
                              rationale="empty turn")
    if READY_MARKERS.search(text):
        return DetectorOutput(action="ready_to_model", question_count=0, is_atomic=False, atomic_questions=[],
                              rationale="the turn declares READY_TO_MODEL")
    questions = split_questions(text)
    if not questions:
        return DetectorOutput(action="invalid", question_count=0, is_atomic=False, atomic_questions=[],
                              rationale="neither a question nor a READY_TO_MODEL marker")
    count = len(questions)
    why = "one question" if count == 1 else f"{count} independently answerable questions"
    return DetectorOutput(action="question", question_count=count, is_atomic=count == 1,
                          atomic_questions=questions, rationale=why)


def local_batch(inputs: Sequence[DetectorInput]) -> list[DetectorOutput]:
    return [local(i) for i in inputs]


SPEC = RoleSpec(name="question_detector", input_model=DetectorInput, output_model=DetectorOutput, local=local,
                local_batch=local_batch)
ROLES.add(SPEC.name, SPEC)

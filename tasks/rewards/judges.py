"""The judges the stages ask: one batched call per stage, aligned with the questions; ``None`` = judge failure.

``RoleJudges`` runs the project's roles (local by default, an LLM by ``JudgeRoles``). Tests may pass any object
with the same four methods.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from tasks.categories import Category
from tasks.rewards.config import JudgeRoles
from tasks.rewards.weights import IRRELEVANT


class Judges(Protocol):
    def redundant(self, questions: Sequence[str], texts: Sequence[str]) -> list[bool | None]:
        """Is each question already answered by its (incomplete) issue text?"""

    def answerable(self, questions: Sequence[str], texts: Sequence[str], hints: Sequence[str]) -> list[bool | None]:
        """Can each question be answered from its full issue text plus hints?"""

    def classify(self, questions: Sequence[str], texts: Sequence[str]) -> list[str | None]:
        """Each question's category key (``error_info``, …) or ``irrelevant``."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(n, d) L2-normalised vectors."""


class RoleJudges:
    """The redundancy, answerability and classifier roles through ``run_role``; MiniLM for embeddings."""

    def __init__(self, roles: JudgeRoles | None = None, client=None, retries: int = 0):
        self.roles = roles or JudgeRoles()
        self.client = client
        self.retries = retries
        """``judge_failure: repair``: failed calls are sent again this many times."""

    def _run(self, spec, inputs: list) -> list:
        return run_with_repair(spec, inputs, getattr(self.roles, spec.name), client=self.client, retries=self.retries)

    def redundant(self, questions: Sequence[str], texts: Sequence[str]) -> list[bool | None]:
        from tasks.roles.swe_judges import REDUNDANCY_SPEC, RedundancyInput

        outs = self._run(REDUNDANCY_SPEC, [RedundancyInput(text=t, question=q) for q, t in zip(questions, texts)])
        return [_flag(o) for o in outs]

    def answerable(self, questions: Sequence[str], texts: Sequence[str], hints: Sequence[str]) -> list[bool | None]:
        from tasks.roles.swe_judges import ANSWERABILITY_SPEC, AnswerabilityInput

        inputs = [AnswerabilityInput(text=t, question=q, hints=h) for q, t, h in zip(questions, texts, hints)]
        return [_flag(o) for o in self._run(ANSWERABILITY_SPEC, inputs)]

    def classify(self, questions: Sequence[str], texts: Sequence[str]) -> list[str | None]:
        from tasks.roles.base import QuestionInput
        from tasks.roles.question_classifier import SPEC

        inputs = [QuestionInput(question=q, issue_text=t) for q, t in zip(questions, texts)]
        return [_label(o) for o in self._run(SPEC, inputs)]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        from tasks.llm.embeddings import encode

        return encode(list(texts))


def run_with_repair(spec, inputs: list, cfg, *, client=None, retries: int = 0, sample: str | None = None) -> list:
    """``run_role`` over ``inputs``; the inputs whose call failed are sent again, up to ``retries`` times (the
    InterOPT runner's repair retries; each retry is a fresh sample, so a cached failure is not replayed)."""
    from tasks.llm.records import RoleFailure
    from tasks.roles.base import run_role

    if not inputs:
        return []
    outs = list(run_role(spec, inputs, cfg, client=client, sample=sample))
    for attempt in range(1, retries + 1):
        todo = [k for k, o in enumerate(outs) if isinstance(o, RoleFailure)]
        if not todo:
            break
        again = run_role(spec, [inputs[k] for k in todo], cfg, client=client, sample=f"{sample or ''}repair{attempt}")
        for k, out in zip(todo, again, strict=True):
            outs[k] = out
    return outs


def _flag(out) -> bool | None:
    from tasks.llm.records import RoleFailure

    return None if isinstance(out, RoleFailure) else bool(out.answerable)


def _label(out) -> str | None:
    from tasks.llm.records import RoleFailure

    if isinstance(out, RoleFailure):
        return None
    return out.label.key if isinstance(out.label, Category) else IRRELEVANT

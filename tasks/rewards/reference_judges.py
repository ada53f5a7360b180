"""The judge roles of ``reward.protocol: reference`` (``tasks.rewards.reference``): pass A (answer every question
of a list from a text), pass B (count the sufficient answers), the similarity count against the generation cache,
and the type labeller. A served model reads the prompts under ``tasks/roles/prompts/reference_*``; the local
backend is a deterministic stand-in of the same shape (same passes, same counts).

The stand-in answers a question with the sentence of the text that shares the most content words with it (at least
``MIN_SHARED``), calls a question of fewer than ``MIN_CONTENT`` content words generic, counts a question similar
when its content words overlap an earlier or cached question's by ``SIMILAR_JACCARD``, and labels types with its
own lexicon written from the reference prompt's type definitions. It reads only the texts it is handed: nothing
of the code that chose what an issue hides.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tasks.rewards.config import JudgeRoles
from tasks.roles.base import RoleSpec

Mode = Literal["redundancy", "answerability"]
DONT_KNOW = "I don't know"
GENERIC = "Generic question"

MIN_SHARED = 2
"""Pass A (stand-in): content words a sentence must share with the question to answer it."""
MIN_CONTENT = 2
"""Pass A (stand-in, answerability): a question with fewer content words is "Generic question"."""
SIMILAR_JACCARD = 0.5
"""Similarity count (stand-in): content-word Jaccard from which two questions ask the same."""

_WORD = re.compile(r"[a-z][a-z0-9_]+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_STOP = frozenset("""about after also and any are can could did does for from had has have how into its just more
not now other over please provide same share should some than that the their them then there these they this those
what when where which while who why will with would you your yours give tell know need like was were been being
details information info clarify specify""".split())

_TYPES: dict[str, tuple[str, ...]] = {
    "error_info": ("error", "exception", "traceback", "stack", "crash", "message", "warning", "fails", "failure",
                   "wrong", "incorrect", "output"),
    "reproduction": ("reproduce", "steps", "trigger", "command", "input", "snippet", "example", "minimal"),
    "expected_behavior": ("expect", "expected", "should", "desired", "instead", "intended", "return"),
    "implementation": ("implement", "approach", "prefer", "design", "constraint", "async", "solution", "api",
                       "signature", "parameter"),
    "external_refs": ("link", "docs", "documentation", "dataset", "issue", "pull", "url", "reference", "related"),
    "version_env": ("version", "python", "os", "platform", "environment", "gpu", "cpu", "install", "installed",
                    "operating", "release"),
}
"""The stand-in's cue words per type, from the definitions and examples in the reference's S4 prompt."""


def content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 2}


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if len(s.strip()) > 3]


# ---- records --------------------------------------------------------------------------------------------------


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AnswerInput(_Record):
    text: str
    """The underspecified issue (S1) or the full original issue (S3)."""
    questions: list[str] = Field(min_length=1)
    mode: Mode


class AnswerOutput(_Record):
    answers: list[str]
    """One per question in order: the answer, "I don't know", or (S3) "Generic question"."""


class QAPair(_Record):
    question: str
    answer: str


class CountInput(_Record):
    text: str
    pairs: list[QAPair] = Field(min_length=1)
    mode: Mode


class CountOutput(_Record):
    count: int = Field(ge=0)
    """S1: questions with a sufficient answer (redundant); S3: answerable questions."""
    total: int = Field(ge=0)
    explanation: str


class SimilarInput(_Record):
    previous: list[str]
    """The cached generations (completion texts)."""
    questions: list[str] = Field(min_length=1)


class SimilarOutput(_Record):
    similar_count: int = Field(ge=0)
    total: int = Field(ge=0)
    explanation: str


class ClassifyInput(_Record):
    text: str
    questions: list[str] = Field(min_length=1)


class TypeLabel(_Record):
    question_num: int
    info_type: str


class ClassifyOutput(_Record):
    classifications: list[TypeLabel]


# ---- the local stand-in -----------------------------------------------------------------------------------------


def answer_local(inp: AnswerInput) -> AnswerOutput:
    """Pass A: the best-sharing sentence of the text, else "I don't know"; (answerability) a question with too
    few content words is "Generic question"."""
    sentences = [(s, content_words(s)) for s in _sentences(inp.text)]
    answers = []
    for question in inp.questions:
        words = content_words(question)
        if inp.mode == "answerability" and len(words) < MIN_CONTENT:
            answers.append(GENERIC)
            continue
        best = max(sentences, key=lambda s: len(words & s[1]), default=None)
        answers.append(best[0] if best is not None and len(words & best[1]) >= MIN_SHARED else DONT_KNOW)
    return AnswerOutput(answers=answers)


def count_local(inp: CountInput) -> CountOutput:
    """Pass B: the answers that are neither "I don't know" nor "Generic question" nor a formatting placeholder."""
    found = sum(all(m not in p.answer.lower() for m in ("don't know", "generic question", "formatting issue"))
                for p in inp.pairs)
    return CountOutput(count=found, total=len(inp.pairs), explanation="local stand-in: sufficient answers counted")


def similar_local(inp: SimilarInput) -> SimilarOutput:
    """Questions whose content words overlap an earlier question of the list or a cached generation's line."""
    from tasks.rewards.reference_parse import reference_questions

    cached = [content_words(q) for g in inp.previous for q in reference_questions(g)]
    seen: list[set[str]] = []
    similar = 0
    for question in inp.questions:
        words = content_words(question)
        if any(_jaccard(words, other) >= SIMILAR_JACCARD for other in seen + cached):
            similar += 1
        seen.append(words)
    return SimilarOutput(similar_count=similar, total=len(inp.questions), explanation="local stand-in: word overlap")


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


def classify_local(inp: ClassifyInput) -> ClassifyOutput:
    """The type whose cue words the question uses most (ties: the order of ``_TYPES``); none -> irrelevant."""
    out = []
    for k, question in enumerate(inp.questions, 1):
        words = set(_WORD.findall(question.lower()))
        hits = {name: len(words & set(cues)) for name, cues in _TYPES.items()}
        best = max(hits, key=lambda n: hits[n])
        out.append(TypeLabel(question_num=k, info_type=best if hits[best] else "irrelevant"))
    return ClassifyOutput(classifications=out)


ANSWER_SPEC = RoleSpec("reference_answer", AnswerInput, AnswerOutput, answer_local)
COUNT_SPEC = RoleSpec("reference_count", CountInput, CountOutput, count_local)
SIMILAR_SPEC = RoleSpec("reference_similar", SimilarInput, SimilarOutput, similar_local)
CLASSIFY_SPEC = RoleSpec("reference_classify", ClassifyInput, ClassifyOutput, classify_local)


class ReferenceJudges:
    """The four reference judges through ``run_role`` (with the repair retries of ``judge_failure: repair``).
    Backends: S1's passes use ``judges.redundancy_judge``, S3's ``judges.answerability_judge``, the similarity
    count and the labeller ``judges.question_classifier``. Every method returns None for a failed call."""

    def __init__(self, roles: JudgeRoles | None = None, client=None, retries: int = 0):
        self.roles = roles or JudgeRoles()
        self.client = client
        self.retries = retries

    def _run(self, spec: RoleSpec, inputs: list, role: str) -> list:
        from tasks.llm.records import RoleFailure
        from tasks.rewards.judges import run_with_repair

        outs = run_with_repair(spec, inputs, getattr(self.roles, role), client=self.client, retries=self.retries)
        return [None if isinstance(o, RoleFailure) else o for o in outs]

    @staticmethod
    def _role(mode: Mode) -> str:
        return "redundancy_judge" if mode == "redundancy" else "answerability_judge"

    def answer(self, texts: Sequence[str], questions: Sequence[list[str]], mode: Mode) -> list[list[str] | None]:
        """Pass A: per list, one answer per question (missing ones "Formatting issue", as the reference)."""
        outs = self._run(ANSWER_SPEC, [AnswerInput(text=t, questions=q, mode=mode) for t, q in zip(texts, questions)],
                         self._role(mode))
        return [None if o is None else (list(o.answers) + ["Formatting issue"] * len(q))[:len(q)]
                for o, q in zip(outs, questions)]

    def count(self, texts: Sequence[str], questions: Sequence[list[str]], answers: Sequence[list[str]],
              mode: Mode) -> list[tuple[int, int] | None]:
        """Pass B: (count, total) per list; None when the call failed or its output could not be read."""
        inputs = [CountInput(text=t, pairs=[QAPair(question=q, answer=a) for q, a in zip(qs, ans)], mode=mode)
                  for t, qs, ans in zip(texts, questions, answers)]
        return [None if o is None else (o.count, o.total) for o in self._run(COUNT_SPEC, inputs, self._role(mode))]

    def similar(self, previous: Sequence[str], questions: Sequence[list[str]]) -> list[tuple[int, int] | None]:
        inputs = [SimilarInput(previous=list(previous), questions=q) for q in questions]
        return [None if o is None else (o.similar_count, o.total)
                for o in self._run(SIMILAR_SPEC, inputs, "question_classifier")]

    def classify(self, texts: Sequence[str], questions: Sequence[list[str]]) -> list[list[str] | None]:
        """Labels in question order; None for a failed call (a count mismatch is left to the caller)."""
        outs = self._run(CLASSIFY_SPEC, [ClassifyInput(text=t, questions=q) for t, q in zip(texts, questions)],
                         "question_classifier")
        return [None if o is None else [c.info_type for c in sorted(o.classifications, key=lambda c: c.question_num)]
                for o in outs]

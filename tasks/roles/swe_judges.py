"""Redundancy and answerability judges for SWE clarification questions (CLARITI reward stages S1 and S3).

- ``redundancy_judge``: is the question already answerable from the *incomplete* issue? (then it is redundant)
- ``answerability_judge``: is it answerable from the *full* issue plus hints?

Local backend: a judge of its own, independent of the simulated user (``tasks.roles.swe_user``), as in CLARITI,
where a reward model (Qwen3-32B) judges S1 and S3 and a different model plays the user (clariti.md §5.3, §7.1).
It mirrors the paper's two passes:

- **pass A, answer**: the text (and hints) is cut into passages (paragraph sentences, list lines, whole code
  blocks); each is scored by ``W_COSINE`` x MiniLM cosine + ``W_OVERLAP`` x the IDF-weighted share of the
  question's words it contains (IDF over the passages of that text, so words found everywhere count less); the best
  passage is the answer;
- **pass B, sufficiency**: the answer counts when it reaches ``THRESHOLD``, the question is not a generic ask
  ("any more details?", S3's "Generic question"), and, when the question asks for a kind of evidence (a version, an
  error or traceback, code, a link, the expected behaviour, a file or function), the passage carries that kind.

So ``answerable`` and the simulated user's ``answered`` are two measurements that can disagree; evaluate@swe reports
both. Thresholds and weights were set by hand on the invented issues in tests/test_role_swe.py.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from tasks.roles.base import RoleSpec
from tasks.roles.registry import ROLES
from tasks.text import FENCE, closing_fence


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


W_COSINE = 0.55
W_OVERLAP = 0.45
W_KIND = 0.30
"""For a passage that carries the kind of evidence the question asks for (a traceback for "paste the traceback")."""
THRESHOLD = 0.33
MIN_PASSAGE_CHARS = 10

SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(])")
LIST_ITEM = re.compile(r"^\s*([-*+]|\d+[.)])\s+")
LABEL = re.compile(r"#*\s*[A-Za-z][\w /&-]{0,40}:?")
"""A heading or label line ("Environment:", "### Steps"): no answer in it."""
WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]*|\d+(?:\.\d+)+")
STOP = frozenset("""a about above after again all also am an and any anything are as at be been before being below
between both but by can could did do does doing done during each else few for from further get gets getting give had
has have having he her here how i if in into is it its just know let like me more most my need no nor not now of off
on once only or other our out over own please provide same see share should so some such tell than that the their
them then there these they this those through to too under until up us use used using very want was we were what when
where which while who why will with would you your yours""".split())

GENERIC = re.compile(r"\b(more|any|additional|further|other|extra) (details?|information|info|context|specifics)\b|"
                     r"\banything else\b|\bcan you (elaborate|clarify|explain more)\b", re.IGNORECASE)
ASKS: dict[str, re.Pattern] = {
    "version": re.compile(r"\b(version|versions|release|operating system|os|platform|environment|python \d|"
                          r"installed)\b", re.IGNORECASE),
    "error": re.compile(r"\b(error|errors|exception|traceback|stack ?trace|backtrace|message|warning|crash\w*)\b",
                        re.IGNORECASE),
    "code": re.compile(r"\b(code|snippet|script|example|reproduc\w*|minimal|steps)\b", re.IGNORECASE),
    "link": re.compile(r"\b(link|url|pull request|pr|commit|ticket|related issue|documentation|docs)\b|#\d+",
                       re.IGNORECASE),
    "expected": re.compile(r"\b(expect\w*|desired|intended|supposed|should (it|this|that|the \w+) (return|produce|"
                           r"output|be|do))\b", re.IGNORECASE),
    "location": re.compile(r"\b(which|what) (file|files|function|module|class|method|part of the code)\b|"
                           r"\bwhere in the (code|codebase|source)\b", re.IGNORECASE),
}
"""What kind of evidence a question asks for (pass B checks the answer carries it)."""
CARRIES: dict[str, re.Pattern] = {
    "version": re.compile(r"\b\d+\.\d+(\.\d+)?\b|\b(windows|linux|macos|mac os|ubuntu|debian|fedora|darwin)\b",
                          re.IGNORECASE),
    "error": re.compile(r"\b\w+(Error|Exception|Warning)\b|Traceback|\berror message\b|\bsegfault\b"),
    "code": re.compile(r"\w+\(.*\)|^\s*(import|from|def|class|>>>|\$) ", re.MULTILINE),
    "link": re.compile(r"https?://\S+|www\.\S+|#\d{2,}|\b[0-9a-f]{7,40}\b"),
    "expected": re.compile(r"\b(expect\w*|should|instead|desired|intended|supposed to|would like)\b", re.IGNORECASE),
    "location": re.compile(r"\b[\w/]+\.(py|pyx|c|cpp|js|ts|toml|cfg)\b|`_?\w+`|\b(def|class) \w+"),
}


def carries(kind: str, passage: str) -> bool:
    """Does the passage hold the kind of evidence? The expected behaviour is stated in prose, never in code."""
    return bool(CARRIES[kind].search(passage)) and (kind != "expected" or "\n" not in passage)


def passages(text: str) -> list[str]:
    """Verbatim passages: whole fenced or indented code blocks, list lines, and prose sentences."""
    out: list[str] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if FENCE.match(lines[i]):
            j = closing_fence(lines, i)
            out.append("\n".join(lines[i + 1:j]).strip())
            i = j + 1
            continue
        j = i
        while j < len(lines) and lines[j].strip() and not FENCE.match(lines[j]):
            j += 1
        block = lines[i:j]
        if any(line.startswith(("    ", "\t")) or line.lstrip().startswith(("File \"", "Traceback")) for line in block):
            out.append("\n".join(block).strip())
        else:
            for line in block:
                out.extend(line.strip() for line in ([line] if LIST_ITEM.match(line) else SENTENCE_END.split(line)))
        i = max(j, i + 1)
    return [p for p in out if len(p) >= MIN_PASSAGE_CHARS and re.search(r"[A-Za-z0-9]", p) and not LABEL.fullmatch(p)]


def words(text: str) -> set[str]:
    out = set()
    for raw in WORD.findall(text):
        word = raw.lower()
        out.update(w for w in {word, *word.split("_")} if len(w) > 2 and w not in STOP)
    return {w[:6] for w in out}
    # A six-letter stem folds simple inflections together ("expected", "expects").


def overlap(question: set[str], passage: set[str], idf: dict[str, float]) -> float:
    total = sum(idf.get(w, idf["<unseen>"]) for w in question)
    return sum(idf.get(w, 0.0) for w in question & passage) / total if total else 0.0


def judge_batch(items: Sequence[tuple[Sequence[str], str]]) -> list[JudgeOutput]:
    """For each (source texts, question): is it answered by a passage of the sources? One embedding call in all."""
    from tasks.llm.embeddings import encode

    lists = [[p for src in sources if src and src.strip() for p in passages(src)] for sources, _ in items]
    texts = list(dict.fromkeys(p for ps in lists for p in ps))
    questions = [q for _, q in items]
    vecs = encode(questions + texts)
    index = {t: len(questions) + k for k, t in enumerate(texts)}
    out = []
    for n, ((_, question), found) in enumerate(zip(items, lists)):
        out.append(_judge_one(question, found, [float(vecs[index[p]] @ vecs[n]) for p in found]))
    return out


def _judge_one(question: str, found: list[str], cosines: list[float]) -> JudgeOutput:
    asked = [kind for kind, pattern in ASKS.items() if pattern.search(question)]
    if GENERIC.search(question) and not asked:
        return JudgeOutput(answerable=False, rationale="a generic question: it names nothing specific to answer")
    if not found:
        return JudgeOutput(answerable=False, rationale="the text has no usable passage")
    bags = [words(p) for p in found]
    idf = {w: math.log(1 + len(found) / (1 + sum(w in b for b in bags))) for b in bags for w in b}
    idf["<unseen>"] = math.log(1 + len(found))
    q_words = words(question)
    fits = [k for k in range(len(found)) if not asked or any(carries(a, found[k]) for a in asked)]
    scores = [W_COSINE * c + W_OVERLAP * overlap(q_words, b, idf) + (W_KIND if asked and k in fits else 0.0)
              for k, (c, b) in enumerate(zip(cosines, bags))]
    if not fits:
        return JudgeOutput(answerable=False, rationale=f"no passage carries what the question asks for "
                                                       f"({', '.join(asked)})")
    best = max(fits, key=lambda k: (scores[k], -k))
    if scores[best] < THRESHOLD:
        return JudgeOutput(answerable=False, rationale=f"the best passage scores {scores[best]:.2f} < {THRESHOLD}")
    kinds = f" and carries {', '.join(asked)}" if asked else ""
    return JudgeOutput(answerable=True, evidence=found[best],
                       rationale=f"a passage answers it: score {scores[best]:.2f} >= {THRESHOLD}{kinds}")


def redundancy_local_batch(inputs: Sequence[RedundancyInput]) -> list[JudgeOutput]:
    return judge_batch([((i.text,), i.question) for i in inputs])


def answerability_local_batch(inputs: Sequence[AnswerabilityInput]) -> list[JudgeOutput]:
    return judge_batch([((i.text, i.hints), i.question) for i in inputs])


def redundancy_local(inp: RedundancyInput) -> JudgeOutput:
    return redundancy_local_batch([inp])[0]


def answerability_local(inp: AnswerabilityInput) -> JudgeOutput:
    return answerability_local_batch([inp])[0]


REDUNDANCY_SPEC = RoleSpec(name="redundancy_judge", input_model=RedundancyInput, output_model=JudgeOutput,
                           local=redundancy_local, local_batch=redundancy_local_batch)
ROLES.add(REDUNDANCY_SPEC.name, REDUNDANCY_SPEC)
ANSWERABILITY_SPEC = RoleSpec(name="answerability_judge", input_model=AnswerabilityInput, output_model=JudgeOutput,
                              local=answerability_local, local_batch=answerability_local_batch)
ROLES.add(ANSWERABILITY_SPEC.name, ANSWERABILITY_SPEC)

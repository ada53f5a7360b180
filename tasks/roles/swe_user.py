"""SWE simulated user: answers a clarification question only from the full issue and its hints, verbatim.

Local backend: the issue and hints are cut into units (prose sentences, whole code blocks, whole tracebacks, single
version/environment lines, reference lines); each unit is scored against the question by MiniLM cosine, lexical
coverage of the question's content words and a category prior (the question classifier's label says which unit
kinds fit). Up to ``MAX_UNITS`` units at or above ``ANSWER_THRESHOLD`` come back verbatim; otherwise the reply is
``NO_INFO``. The redundancy and answerability judges reuse ``retrieve`` so they agree with this role by construction.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from tasks.categories import Category
from tasks.llm.embeddings import encode
from tasks.roles.base import RoleSpec
from tasks.roles.question_classifier import IRRELEVANT, classify_with_vectors
from tasks.roles.registry import ROLES
from tasks.text import FENCE, closing_fence, matching_tags

NO_INFO = "I don't have that information."


class SweUserInput(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    issue: str = Field(min_length=1)
    """The full original issue text."""
    hints: str = ""
    question: str = Field(min_length=1)


class SweUserOutput(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    answer: str
    answered: bool
    evidence: list[str] = []
    """The verbatim pieces of the issue or hints the answer consists of (empty when not answered)."""


# ---- units ---------------------------------------------------------------------------------------------------------

TRACEBACK, ERRNAME, CODE, VERSION, REF, ERROR, EXPECTED, IMPL, PROSE = (
    "traceback", "error_name", "code", "version", "ref", "error", "expected", "impl", "prose")

MIN_UNIT_CHARS = 12
_TB_START = re.compile(r"Traceback \(most recent call last\)")
_EXC_LINE = re.compile(r"^\s*([A-Za-z_][\w.]*(Error|Exception|Warning|Exit|Interrupt|Failure))\b(:.*)?$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(\[*])")
_URL = re.compile(r"https?://\S+|www\.\S+")
_REF = re.compile(r"(#\d{2,}|\b(pull request|PR \d+|ticket|commit [0-9a-f]{7,}|[0-9a-f]{10,40}\b|docs?\.|documentation|"
                  r"see also|upstream|stackoverflow|mailing list))", re.IGNORECASE)
_VERSION = re.compile(
    r"(\b(version|versions|python|os|platform|windows|linux|mac ?os|darwin|ubuntu|debian|fedora|centos|conda|pip|"
    r"installed|environment|backend|gpu|cuda)\b.*\d|\b[A-Za-z][\w\-]*\s*(==|>=|<=|~=|:|\s)\s*v?\d+\.\d+(\.\w+)*\b)",
    re.IGNORECASE,
)
_LIST_LINE = re.compile(r"^\s*([-*+•]|\d+[.)])\s+|^\s*[A-Za-z][\w ./\-]{0,30}:\s+\S")
_ERROR_WORDS = re.compile(r"\b(error|errors|exception|raises?|raised|raising|crash(es)?|fails?|failed|failing|wrong|"
                          r"incorrect|broken|bug|warning|unexpected(ly)?|traceback)\b|\b\w+(Error|Exception)\b",
                          re.IGNORECASE)
_ERROR_NAME = re.compile(r"\b[A-Z]\w*(Error|Exception|Warning)\b")
_EXPECTED_WORDS = re.compile(r"\b(expect(ed|s|ing|ation)?|should|instead|desired|intended|ought|correct(ly)?|"
                             r"would like|supposed to)\b", re.IGNORECASE)
_IMPL_WORDS = re.compile(r"\b(fix|patch|implement|modify|refactor|approach|solution|propose|suggest)\w*\b|"
                         r"\b[\w/]+\.(py|pyx|c|js|cfg|toml)\b|^\s*(def|class) \w+|^(diff|@@|[-+]{3} )",
                         re.IGNORECASE | re.M)
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s|^\s*[A-Za-z][\w /&-]{0,40}:\s*$")
_CODE_LINE = re.compile(r"^(\s{4,}|\t|>>> |\.\.\. |\$ )")


@dataclass(frozen=True)
class TextUnit:
    text: str
    """A verbatim slice of its source."""
    tags: frozenset[str] = field(default_factory=frozenset)


_PROSE_RULES = (((_URL.search, _REF.search), REF), ((_VERSION.search,), VERSION),
                ((_ERROR_WORDS.search, _EXC_LINE.match), ERROR), ((_ERROR_NAME.search,), ERRNAME),
                ((_EXPECTED_WORDS.search,), EXPECTED), ((_IMPL_WORDS.search,), IMPL))


def _tags_for_prose(text: str) -> set[str]:
    return {PROSE, *matching_tags(text, _PROSE_RULES)}


def _block_units(block: str) -> list[TextUnit]:
    """A code block: split off a traceback (and its final exception line) from the code that precedes it."""
    match = _TB_START.search(block)
    if match is None:
        tags = {CODE}
        if _IMPL_WORDS.search(block):
            tags.add(IMPL)
        if any(_EXC_LINE.match(line) for line in block.splitlines()):
            tags |= {ERROR, TRACEBACK, ERRNAME}
        if _VERSION.search(block) and len(block) < 400:
            tags.add(VERSION)
        return [TextUnit(block, frozenset(tags))]
    line_start = block.rfind("\n", 0, match.start()) + 1
    head, tail = block[:line_start].rstrip(), block[line_start:].strip()
    units = [TextUnit(head, frozenset({CODE}))] if len(head) >= MIN_UNIT_CHARS else []
    units.append(TextUnit(tail, frozenset({TRACEBACK, ERROR, ERRNAME})))
    return units


def _prose_units(paragraph: str) -> list[TextUnit]:
    lines = paragraph.split("\n")
    if len(lines) > 1 and all(_LIST_LINE.match(line) or _VERSION.search(line) for line in lines if line.strip()):
        # A list (versions, settings, steps): one unit per line.
        pieces = [line.strip() for line in lines]
    else:
        pieces = [s.strip() for s in _SENTENCE_END.split(paragraph)]
    units = []
    for piece in pieces:
        if len(piece) >= MIN_UNIT_CHARS and re.search(r"[A-Za-z0-9]", piece):
            tags = _tags_for_prose(piece)
            if _EXC_LINE.match(piece):
                tags |= {TRACEBACK, ERROR}
            units.append(TextUnit(piece, frozenset(tags)))
    return units


def split_units(text: str) -> list[TextUnit]:
    """Cut an issue (or hints) into verbatim units, in document order."""
    lines = text.split("\n")
    units: list[TextUnit] = []
    i = 0
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph:
            units.extend(_prose_units("\n".join(paragraph).strip()))
            paragraph.clear()

    while i < len(lines):
        line = lines[i]
        if FENCE.match(line):
            flush()
            j = closing_fence(lines, i)
            block = "\n".join(lines[i + 1 : j]).strip("\n")
            if block.strip():
                units.extend(_block_units(block.strip()))
            i = j + 1
            continue
        if _TB_START.search(line) or (_CODE_LINE.match(line) and line.strip()):
            flush()
            j = i + 1
            in_tb = bool(_TB_START.search(line))
            while j < len(lines):
                nxt = lines[j]
                if in_tb and _EXC_LINE.match(nxt):
                    j += 1
                    break
                if ((not nxt.strip() or not (_CODE_LINE.match(nxt) or in_tb or _TB_START.search(nxt)))
                        and not (nxt.strip() and _TB_START.search(nxt))):
                    break
                in_tb = in_tb or bool(_TB_START.search(nxt))
                j += 1
            block = "\n".join(lines[i:j]).strip()
            if len(block) >= MIN_UNIT_CHARS:
                units.extend(_block_units(block))
            i = j
            continue
        if not line.strip():
            flush()
        elif _HEADING.match(line):
            flush()  # markdown headings ("### Steps") carry no answer
        else:
            paragraph.append(line)
        i += 1
    flush()
    return units


# ---- retrieval -----------------------------------------------------------------------------------------------------

PREFERRED: dict[str, set[str]] = {
    Category.ERROR.value: {TRACEBACK, ERRNAME, ERROR},
    Category.REPRODUCTION.value: {CODE},
    Category.EXPECTED.value: {EXPECTED},
    Category.IMPLEMENTATION.value: {IMPL, CODE},
    Category.EXTERNAL_REFS.value: {REF},
    Category.VERSION_ENV.value: {VERSION},
}
"""Unit kinds that fit a question of each category (they get ``KIND_BONUS``)."""

EXPLICIT_CUES: list[tuple[re.Pattern, set[str]]] = [
    (re.compile(r"\b(traceback|stack ?trace|backtrace)s?\b|\berrors?\b|\bexceptions?\b|\bwarning message", re.I),
     {TRACEBACK, ERRNAME}),
    (re.compile(r"\b(code|snippet|script|reproducer|reproducible|minimal example)\b", re.I), {CODE}),
    (re.compile(r"\bexpect\w*|\bdesired\b|\bintended\b|\bshould (it|this|that|the \w+) (return|produce|output|be)\b|"
                r"\bcorrect (output|result|value|behaviou?r)\b", re.I), {EXPECTED}),
    (re.compile(r"\bwhich (file|files|function|module|class|method)\b|\bwhere in the (code|codebase|source)\b|"
                r"\bthe fix\b|\bpatch\b", re.I), {IMPL}),
    (re.compile(r"\b(link|links|url|urls|pull request|pr|commit|ticket|related issue|documentation|docs)\b|#\d+", re.I),
     {REF}),
    (re.compile(r"\b(version|versions|operating system|os|platform|python version|environment)\b", re.I), {VERSION}),
]
"""An explicit ask (a traceback, a version, a link...) is answered only by a unit of that kind, which gets
``CUE_BONUS``; units of other kinds are capped below the threshold."""

W_COSINE = 0.65
W_LEXICAL = 0.35
KIND_BONUS = 0.12
"""For a unit whose kind fits the question's category (``PREFERRED``)."""
CUE_BONUS = 0.35
ANSWER_THRESHOLD = 0.42
"""A unit must reach this combined score to be quoted (hand-set on invented issues, see tests/test_role_swe.py)."""
SECOND_UNIT_MARGIN = 0.15
"""Further units are quoted only when they score within this margin of the best one."""
MAX_UNITS = 3
IRRELEVANT_CONFIDENCE = 0.6
"""A question the classifier calls irrelevant with at least this confidence is never answered."""

_STOP = frozenset("""
a an the and or but if of to in on at by for with from as is are was were be been being do does did done have has had
this that these those it its it's there their them they you your yours we our us i me my can could would should will
shall may might must what which who whom whose when where why how any some all each every more most such than then so
not no yes also just only very please provide share give tell explain describe clarify specify mention mentioned
details detail information info specific exact exactly example examples issue problem regarding about into
whether other same does kind sort way ways e g eg ie etc like use using used case cases currently current
""".split())
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)+")


def content_tokens(text: str) -> set[str]:
    tokens: set[str] = set()
    for raw in _TOKEN.findall(text):
        word = raw.lower()
        parts = [word, *[p for p in re.split(r"[_.]", word) if p]] if ("_" in word or "." in word) else [word]
        tokens.update(p for p in parts if len(p) > 1 and p not in _STOP)
    return tokens


def lexical_coverage(question_tokens: set[str], unit_tokens: set[str]) -> float:
    """Share of the question's content words found in the unit (prefix match for simple inflections)."""
    if not question_tokens:
        return 0.0
    hits = 0
    for tok in question_tokens:
        if tok in unit_tokens or (len(tok) > 4 and any(u.startswith(tok[:5]) for u in unit_tokens if len(u) > 4)):
            hits += 1
    return hits / len(question_tokens)


@dataclass(frozen=True)
class Retrieval:
    answered: bool
    evidence: list[str]
    """Verbatim units, in document order."""
    best_score: float
    label: str
    """The question classifier's label for the question."""
    reason: str
    best_evidence: str = ""
    """The single best unit (verbatim) when answered."""


def explicit_kinds(question: str) -> set[str] | None:
    """The unit kinds the question explicitly asks for, or None when it names none."""
    kinds: set[str] = set()
    for pattern, tags in EXPLICIT_CUES:
        if pattern.search(question):
            kinds |= tags
    return kinds or None


def rank_units(
    question: str, qvec: np.ndarray, label: str, units: Sequence[TextUnit], uvecs: np.ndarray
) -> list[float]:
    """The combined score of every unit for one question."""
    q_tokens = content_tokens(question)
    required = explicit_kinds(question)
    preferred = PREFERRED.get(label, set())
    cosines = uvecs @ qvec if len(units) else np.zeros(0)
    scores = []
    for unit, cos in zip(units, cosines):
        score = W_COSINE * float(cos) + W_LEXICAL * lexical_coverage(q_tokens, content_tokens(unit.text))
        if preferred & unit.tags:
            score += KIND_BONUS
        if required is not None:
            if required & unit.tags:
                score += CUE_BONUS
            else:
                score = min(score, ANSWER_THRESHOLD - 0.01)
        scores.append(round(score, 6))
    return scores


def select(
    question: str, label: str, confidence: float, units: Sequence[TextUnit], scores: Sequence[float]
) -> Retrieval:
    if label == IRRELEVANT and confidence >= IRRELEVANT_CONFIDENCE:
        return Retrieval(False, [], 0.0, label, "the question is not about the issue (classified irrelevant)")
    if not units:
        return Retrieval(False, [], 0.0, label, "the text has no usable content")
    order = sorted(range(len(units)), key=lambda k: (-scores[k], k))
    best = scores[order[0]]
    if best < ANSWER_THRESHOLD:
        return Retrieval(False, [], best, label,
                         f"no passage matches well enough (best {best:.2f} < {ANSWER_THRESHOLD})")
    asked = explicit_kinds(question) or set()
    chosen = [
        k for k in order
        if scores[k] >= ANSWER_THRESHOLD and (scores[k] >= best - SECOND_UNIT_MARGIN or asked & units[k].tags)
    ][:MAX_UNITS]
    evidence = list(dict.fromkeys(units[k].text for k in sorted(chosen)))
    kinds = sorted(units[order[0]].tags - {PROSE}) or [PROSE]
    reason = f"best passage scores {best:.2f} >= {ANSWER_THRESHOLD} ({', '.join(kinds)}); question read as {label}"
    return Retrieval(True, evidence, best, label, reason, best_evidence=units[order[0]].text)


def retrieve_batch(items: Sequence[tuple[Sequence[str], str]]) -> list[Retrieval]:
    """For each (source texts, question): the units of the sources that answer it. One embedding call in all."""
    unit_lists = [[u for src in sources if src and src.strip() for u in split_units(src)] for sources, _ in items]
    questions = [q for _, q in items]
    unit_texts = list(dict.fromkeys(u.text for units in unit_lists for u in units))
    vecs = encode(questions + unit_texts)
    qvecs, uvec_all = vecs[: len(questions)], vecs[len(questions):]
    index = {t: k for k, t in enumerate(unit_texts)}
    classified = classify_with_vectors(questions, qvecs)
    out = []
    for (_sources, question), qvec, units, cls in zip(items, qvecs, unit_lists, classified):
        uvecs = uvec_all[[index[u.text] for u in units]] if units else np.zeros((0, qvecs.shape[1]), np.float32)
        scores = rank_units(question, qvec, cls.label, units, uvecs)
        out.append(select(question, cls.label, cls.confidence, units, scores))
    return out


def local_batch(inputs: Sequence[SweUserInput]) -> list[SweUserOutput]:
    results = retrieve_batch([((i.issue, i.hints), i.question) for i in inputs])
    return [
        SweUserOutput(answer="\n".join(r.evidence), answered=True, evidence=r.evidence) if r.answered
        else SweUserOutput(answer=NO_INFO, answered=False, evidence=[])
        for r in results
    ]


def local(inp: SweUserInput) -> SweUserOutput:
    return local_batch([inp])[0]


SPEC = RoleSpec(name="swe_user", input_model=SweUserInput, output_model=SweUserOutput, local=local,
                local_batch=local_batch)
ROLES.add(SPEC.name, SPEC)

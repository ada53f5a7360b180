"""The ``decomposer`` role: a complete optimisation problem text -> typed atomic units.

Local backend, in two steps:

1. **Segmentation** (rules). Paragraphs are split at blank lines. Prose is cut into sentences (and at line breaks
   after lines without final punctuation, so bare ``Budget: $40`` lines stay apart); a markdown table, a LaTeX
   array, a block of code-like or value lines or a list of data items stays one unit together with its lead-in (a
   sentence ending in ``:`` or a ``Table 1-2`` caption just before it). A list whose items are full sentences, or
   whose lead-in is a section label such as ``Constraints:``, is split into its items. Markdown headings and section
   labels are dropped; their words become a kind hint for the units under them. A scene-setting first sentence
   followed by "I need help ..." stays one unit. Every unit's content is a verbatim slice of the input (prose slices
   have their whitespace runs collapsed).
2. **Typing** (cue words + MiniLM). Tables and lists are ``data``. Every other unit gets a score per kind from regex
   cues (``minimise`` -> objective, ``must``/``at most`` -> constraint, ``assume`` -> assumption, ``Label: 12
   units`` -> data, ``I need help`` -> context), plus its MiniLM similarity to short prototype sentences, plus the
   section hint, plus a context bonus for the opening unit (a penalty for later ones); the best score wins.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal, get_args

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from tasks.construction import UNIT_KINDS
from tasks.records import Unit, require_text
from tasks.roles.base import RoleSpec
from tasks.roles.registry import ROLES
from tasks.text import cue_scores as text_cue_scores
from tasks.text import strip_span

Kind = Literal["context", "data", "constraint", "objective", "assumption"]
assert get_args(Kind) == UNIT_KINDS

MAX_DECOMPOSED_UNITS = 64
"""Units one decomposition may have, in the sent schema only (the record does not enforce it). Stated so that a
grammar-constrained server's default list cap (``tasks/llm/client.py: GRAMMAR_MAX_ITEMS``, 8) does not apply: the
sample problems have 10-15 units, OR-Clarify's up to 23."""
MAX_UNIT_CHARS = 1000
"""Characters of one decomposed unit: a table with its lead-in stays one unit (the samples' longest is 627). In the
sent schema only, for the same reason: a grammar's default string cap (240) cut every such table. Not more: llama.cpp's
grammar parser refuses a string bound above about 1,000 ("exceeds sane defaults"; 1,024 and 1,500 were refused),
and llama-cpp-python's server then crashes."""


class DecomposeInput(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    problem_id: str = ""
    text: str
    """The complete problem statement (markdown: prose, bullet lists, tables)."""

    @field_validator("text")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        return require_text(value, "problem text is empty")


class DecomposedUnit(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Kind
    content: str = Field(min_length=1, json_schema_extra={"maxLength": MAX_UNIT_CHARS})
    """A verbatim piece of the problem text (whitespace may differ)."""


class DecomposeOutput(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    units: list[DecomposedUnit] = Field(json_schema_extra={"maxItems": MAX_DECOMPOSED_UNITS})
    """The problem's atomic units in text order."""


def to_units(output: DecomposeOutput) -> list[Unit]:
    """The decomposed units as ``Unit`` records numbered ``U1..Un`` in order."""
    return [Unit(id=f"U{i}", kind=u.kind, content=u.content) for i, u in enumerate(output.units, start=1)]


# ---- segmentation ------------------------------------------------------------------------------------------------


@dataclass
class Segment:
    start: int
    end: int
    structured: bool
    """A table, list, array or block of data lines (never cut further, typed ``data``)."""
    hint: str | None = None
    """The kind named by the section heading above the segment, if any."""
    content: str = field(default="", repr=False)


_TABLE_ROW = re.compile(r"^\s*\|")
_TABLE_SEP = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)+\|?\s*$")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+•·]|\d{1,2}[.)]|\(\d{1,2}\)|\([a-z]\)|[a-z]\))\s+")
_HEADING = re.compile(r"^\s*(?:#{1,6}\s+\S.*|\*\*[^*\n]+\*\*:?|__[^_\n]+__:?)\s*$")
_CAPTION = re.compile(r"^\s*(?:\*\*)?\s*(?:table|tab\.)\s*[A-Za-z]?[\d.\-–]*\b", re.IGNORECASE)
_LATEX_BEGIN = re.compile(r"\\begin\{")
_DATA_LINE = re.compile(r"(?:\d|=|\[|&)")
_CODE_LINE = re.compile(r"^\s*[\w\[\](){}.,' ]{1,40}\s*=|\s&\s|\\\\\s*$")
_LEADIN_END = re.compile(r":\s*(?:\*\*)?\s*$")

_ABBREVIATIONS = {
    "e.g", "i.e", "etc", "vs", "mr", "mrs", "ms", "dr", "prof", "no", "fig", "approx", "inc", "ltd", "st", "co",
    "a.m", "p.m", "u.s", "cf", "al", "resp", "max", "min", "eq", "sec",
}
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9$£€¥(]|[A-Za-z]_)")
_LINE_BREAK = re.compile(r"(?<=[^\s.!?,;(\-–])[ \t]*\n\s*(?=[\"'(\[]?[A-Z0-9$£€¥(])")

_SECTION_WORDS: dict[str, str] = {
    "constraint": "constraint", "constraints": "constraint", "requirement": "constraint",
    "requirements": "constraint", "restriction": "constraint", "restrictions": "constraint", "rules": "constraint",
    "conditions": "constraint",
    "objective": "objective", "objectives": "objective", "goal": "objective", "goals": "objective", "aim": "objective",
    "assumption": "assumption", "assumptions": "assumption",
    "data": "data", "parameters": "data", "inputs": "data",
    "background": "context", "context": "context", "overview": "context", "problem": "context",
    "introduction": "context", "description": "context", "situation": "context",
}


def _heading_kind(line: str) -> str | None:
    """The kind a heading or short section label names (``## Constraints``, ``Objective:``), else None."""
    words = re.findall(r"[a-z]+", line.lower())
    if not words or len(words) > 4:
        return None
    if words[-1] in _SECTION_WORDS:
        return _SECTION_WORDS[words[-1]]
    if words[0] in _SECTION_WORDS and len(words) <= 2:
        return _SECTION_WORDS[words[0]]
    return None


def _is_section_label(line: str) -> bool:
    """A short line such as ``Constraints:`` or ``Problem data`` that only names a section."""
    stripped = line.strip().strip("*_#").strip()
    return bool(stripped) and _heading_kind(line) is not None and not re.search(r"\d", stripped) and (
        stripped.endswith(":") or _HEADING.match(line) is not None or len(stripped.split()) <= 2
    )


def _sentences(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Sentence spans of ``text[start:end]`` (absolute offsets, outer whitespace trimmed).

    A sentence ends at ``.``/``!``/``?`` before a capital, a digit or a symbol name (``x_ij``), except after a known
    abbreviation, and at a line break after a line without final punctuation when the next line starts a new
    statement (a list of bare values written one per line)."""
    cuts: list[tuple[int, int]] = []
    for match in _SENTENCE_END.finditer(text, start, end):
        before = text[start : match.start()]
        token = re.split(r"[\s(]", before)[-1].lower().rstrip(".") if before else ""
        if token not in _ABBREVIATIONS:
            cuts.append((match.start() + len(match.group().rstrip()), match.end()))
    for match in _LINE_BREAK.finditer(text, start, end):
        cuts.append((match.start(), match.end()))
    spans: list[tuple[int, int]] = []
    cursor = start
    for stop, resume in sorted(set(cuts)):
        if stop > cursor:
            spans.append((cursor, stop))
            cursor = max(cursor, resume)
    spans.append((cursor, end))
    return [s for s in (strip_span(text, a, b) for a, b in spans) if s[0] < s[1]]


def _opens_story(text: str, spans: list[tuple[int, int]]) -> bool:
    """A problem that opens with a scene-setting sentence and then asks for help: one context unit."""
    first, second = (text[a:b] for a, b in spans[:2])
    return bool(_ASKS_FOR_HELP.search(second)) and not _ASKS_FOR_HELP.search(first) and not re.search(r"\d", first)


def _is_caption(line: _Line) -> bool:
    return line.kind == "text" and bool(_CAPTION.match(line.text)) and len(line.text.split()) <= 14


@dataclass
class _Line:
    start: int
    end: int
    text: str

    @property
    def kind(self) -> str:
        if _TABLE_ROW.match(self.text) or _TABLE_SEP.match(self.text):
            return "table"
        if _LIST_ITEM.match(self.text):
            return "item"
        return "text"


def _paragraphs(text: str) -> list[list[_Line]]:
    paragraphs: list[list[_Line]] = []
    current: list[_Line] = []
    offset = 0
    for raw in text.split("\n"):
        line = _Line(offset, offset + len(raw), raw)
        offset += len(raw) + 1
        if raw.strip():
            current.append(line)
        elif current:
            paragraphs.append(current)
            current = []
    if current:
        paragraphs.append(current)
    return paragraphs


def _is_value_line(line: _Line) -> bool:
    return bool(_DATA_LINE.search(line.text)) and not re.search(r"[.!?]\s*$", line.text)


def _data_item(text: str) -> bool:
    """A list item that is a name with values (``Chicken: 23 g, $3``) rather than a full sentence."""
    body = _LIST_ITEM.sub("", text, count=1).strip()
    if re.match(r"^[^:]{1,60}:\s*\S", body) and not _CONSTRAINT_WORDS.search(body):
        return True
    return not re.search(r"[.!?]$", body) and bool(re.search(r"\d", body)) and len(body.split()) <= 12


class _Builder:
    """Walks paragraphs and lines, emitting segments; a lead-in waits until we know what follows it."""

    def __init__(self, text: str):
        self.text = text
        self.segments: list[Segment] = []
        self.hint: str | None = None
        self.leadin: tuple[int, int] | None = None

    def emit(self, start: int, end: int, structured: bool) -> None:
        start, end = strip_span(self.text, start, end)
        if start < end:
            self.segments.append(Segment(start, end, structured, self.hint))

    def flush_leadin(self) -> None:
        if self.leadin is not None:
            start, end = self.leadin
            self.leadin = None
            if _is_section_label(self.text[start:end]):
                self.hint = _heading_kind(self.text[start:end])
            else:
                self.emit(start, end, structured=False)

    def structure(self, start: int, end: int) -> None:
        if self.leadin is not None:
            start = self.leadin[0]
            self.leadin = None
        self.emit(start, end, structured=True)

    def prose(self, start: int, end: int) -> None:
        self.flush_leadin()
        spans = _sentences(self.text, start, end)
        if not self.segments and len(spans) >= 2 and _opens_story(self.text, spans):
            spans = [(spans[0][0], spans[1][1])] + spans[2:]
        for n, (a, b) in enumerate(spans):
            piece = self.text[a:b]
            if n == len(spans) - 1 and (_LEADIN_END.search(piece) or _CAPTION.match(piece)):
                self.leadin = (a, b)
            elif _is_section_label(piece):
                self.hint = _heading_kind(piece)
            else:
                self.emit(a, b, structured=False)

    def caption(self, line: _Line) -> None:
        """A caption line joins any pending lead-in (``Unit costs:`` then ``Table 5-6``)."""
        start = self.leadin[0] if self.leadin is not None else line.start
        self.leadin = strip_span(self.text, start, line.end)

    def items(self, lines: list[_Line]) -> None:
        label = self.text[self.leadin[0] : self.leadin[1]] if self.leadin is not None else ""
        item_lines = [ln for ln in lines if ln.kind == "item"]
        keep_whole = (label and not _is_section_label(label)) or (
            not label and 3 * sum(_data_item(ln.text) for ln in item_lines) >= 2 * len(item_lines)
        )
        if keep_whole:
            self.structure(lines[0].start, lines[-1].end)
            return
        self.flush_leadin()
        groups: list[list[_Line]] = []
        for ln in lines:
            if ln.kind == "item" or not groups:
                groups.append([ln])
            else:
                groups[-1].append(ln)
        for group in groups:
            marker = _LIST_ITEM.match(group[0].text)
            start = group[0].start + (marker.end() if marker else 0)
            self.emit(start, group[-1].end, structured=False)

    def paragraph(self, lines: list[_Line]) -> None:
        i = 0
        while i < len(lines):
            line = lines[i]
            kind = line.kind
            above_table = i + 1 < len(lines) and lines[i + 1].kind == "table"
            if kind == "text" and _HEADING.match(line.text) and not above_table:
                self.flush_leadin()
                self.hint = _heading_kind(line.text)
                i += 1
                continue
            if kind == "text" and (_is_caption(line) or (_HEADING.match(line.text) and above_table)):
                self.caption(line)
                i += 1
                continue
            j = i + 1
            if kind == "table":
                while j < len(lines) and lines[j].kind == "table":
                    j += 1
                self.structure(line.start, lines[j - 1].end)
            elif kind == "item":
                while j < len(lines) and lines[j].kind != "table" and not (
                    lines[j].kind == "text" and not lines[j].text[:1].isspace() and not self._continues(lines[j - 1])
                ):
                    j += 1
                self.items(lines[i:j])
            elif _LATEX_BEGIN.search(line.text):
                while j < len(lines) and not re.search(r"\\end\{", lines[j - 1].text):
                    j += 1
                self.structure(line.start, lines[j - 1].end)
            else:
                while j < len(lines) and lines[j].kind == "text" and not _HEADING.match(lines[j].text) and not (
                    _is_caption(lines[j])
                ):
                    j += 1
                run = lines[i:j]
                if self.leadin is not None and all(_is_value_line(ln) for ln in run):
                    self.structure(run[0].start, run[-1].end)
                elif len(run) > 1 and _LEADIN_END.search(run[0].text) and all(_is_value_line(ln) for ln in run[1:]):
                    self.prose(run[0].start, run[0].end)
                    self.structure(run[1].start, run[-1].end)
                elif len(run) > 1 and 2 * sum(bool(_CODE_LINE.search(ln.text)) for ln in run) > len(run):
                    self.structure(run[0].start, run[-1].end)
                else:
                    self.prose(run[0].start, run[-1].end)
            i = j

    @staticmethod
    def _continues(previous: _Line) -> bool:
        """Whether the next unindented text line still belongs to the list item above (no final punctuation)."""
        return not re.search(r"[.!?:;]\s*$", previous.text)

    def build(self) -> list[Segment]:
        for lines in _paragraphs(self.text):
            self.paragraph(lines)
        self.flush_leadin()
        return self.segments


def segment(text: str) -> list[Segment]:
    """Cut a problem text into atomic segments (see the module docstring)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    segments = _Builder(text).build()
    if not segments:
        start, end = strip_span(text, 0, len(text))
        segments = [Segment(start, end, structured=False)]
    for seg in segments:
        raw = text[seg.start : seg.end]
        seg.content = raw if seg.structured else re.sub(r"\s+", " ", raw)
    return segments


# ---- typing ------------------------------------------------------------------------------------------------------

def _rx(pattern: str) -> re.Pattern:
    return re.compile(pattern, re.IGNORECASE)


_CONSTRAINT_WORDS = _rx(
    r"\b(must|cannot|can ?not|can't|may not|mustn't|should(?: not)?|shall|at most|at least|no more than|"
    r"no less than|not (?:be )?(?:exceed|more|less|allowed|permitted)|exceed|exactly|only|required to|"
    r"is required|are required|not allowed|allowed|permitted|forbidden|limited to|up to|either|"
    r"integer|non-?negative|whole|each .{0,40}\bone\b|if\b.{0,80}\bthen\b|if\b.{0,80}, (?:it|they|then)|"
    r"equal(?:s)? to|less than or equal|greater than or equal|fully (?:met|utili[sz]ed)|satisf(?:y|ied))\b"
    r"|[≤≥]|<=|>="
)
_ASKS_FOR_HELP = _rx(
    r"\b(?:i|we) (?:need|want|would like)\b|\bhelp (?:me|us)\b|\b(?:i|we) (?:am|are) (?:looking|trying)\b"
)
_OPTIMISE = r"(?:maximi[sz]|minimi[sz])(?:e|ed|ing)"

CUES: dict[str, list[tuple[re.Pattern, float]]] = {
    "objective": [
        (_rx(rf"^\W*{_OPTIMISE}\b"), 3.0),
        (_rx(rf"\b{_OPTIMISE}\b"), 1.6),
        (_rx(r"\b(?:the|our|my|main|primary) (?:goal|objective|aim)\b|\bobjective\b|\bgoal is\b"), 1.6),
        (_rx(r"^\W*(?:determine|find|achieve|decide|compute|calculate)\b"), 1.2),
        (_rx(r"\bas (?:low|high|small|large|much|little|few) as possible\b"), 1.4),
    ],
    "constraint": [
        (_CONSTRAINT_WORDS, 1.0),
        (_rx(r"\b(?:must|cannot|can ?not|must not|may not|no more than|at most|at least|not exceed)\b"), 0.6),
        (_rx(r"^\W*(?:each|every|all|no|the total|total)\b.{0,80}\b(?:must|can|cannot|should|is|are)\b"), 0.3),
        (_rx(r"\b(?:if|when|unless|only if)\b"), 0.3),
        (_rx(r"^\W*if\b|\b(?:can|may) (?:be|only)\b|\bis (?:allowed|incurred)\b"), 0.8),
        (_rx(r"\bno (?:earlier|later) than\b|\b(?:not |un)acceptable\b|\b(?:do|does|will) not\b|\bnever\b"), 0.8),
    ],
    "assumption": [
        (_rx(r"\b(?:assum\w*|suppos\w*|presum\w*)\b"), 2.5),
        (_rx(r"\b(?:is|are) (?:considered|treated as|regarded as|taken as)\b"), 1.5),
        (_rx(r"\b(?:unlimited|regardless of|any quantity|no longer|as given in|pre-?sorted|negligible|ignored?|"
             r"in parallel)\b"), 1.0),
        (_rx(r"^\W*(?:at the (?:start|beginning) of|initially)\b"), 0.6),
        (_rx(r"\b(?:is|are) (?:less|greater|smaller|larger) than\b"), 0.6),
    ],
    "data": [
        (re.compile(r"^[^:.]{2,80}:\s+\S"), 1.6),
        (re.compile(r"\d"), 0.5),
        (_rx(r"\b(?:costs?|prices?|profits?|revenue|wages?|rates?|capacity|demand|requires?|produces?|consumes?|"
             r"available|per)\b|[$£€¥%]"), 0.4),
        (_rx(r"^\W*there (?:is|are)\b|\bhas (?:a|an)?\s*(?:total|capacity)"), 0.4),
    ],
    "context": [
        (_rx(r"\b(?:i|we) (?:need|want|would like|am|are|have been|run|own|manage)\b|\bhelp (?:me|us)\b|"
             r"\bi'?m\b|\bour (?:company|firm|factory|team|business)\b"), 2.5),
        (_rx(r"\b(?:plan(?:ning)?|schedul\w+|decid\w+|creat\w+|help)\b"), 0.3),
    ],
}
"""Regex cue -> points for a kind. Weights set by hand and checked on OR-Clarify cases 1-50."""

PROTOTYPES: dict[str, list[str]] = {
    "context": [
        "I need help planning production for my bakery.",
        "We are a small logistics firm that wants a delivery schedule.",
        "I would like help deciding which projects to fund this year.",
        "Our company makes garden furniture and sells it to retailers.",
    ],
    "data": [
        "Unit profit: chairs $12, tables $30.",
        "Each machine provides 160 working hours per month.",
        "Storage cost is 3 dollars per unit per week.",
        "There are four warehouses and six retail shops.",
        "Available timber: 400 kg.",
        "Product B needs 2 hours of assembly and 1 hour of painting.",
    ],
    "constraint": [
        "Total machine hours used cannot exceed the available capacity.",
        "At least 20 units of product A must be made each week.",
        "Each order must be assigned to exactly one truck.",
        "If the second warehouse is opened, the third one must also be opened.",
        "The number of shifts must be a whole number.",
        "Demand in every period must be fully met.",
    ],
    "objective": [
        "Minimize the total operating cost.",
        "Maximize the overall profit of the plan.",
        "The goal is to keep total travel distance as short as possible.",
        "Find the schedule that finishes all jobs earliest.",
    ],
    "assumption": [
        "Assume that all trucks travel at the same speed.",
        "Items can be bought in any quantity.",
        "Production starts at the beginning of the first month.",
        "Setup times are negligible and can be ignored.",
        "Storage space in the depot is unlimited.",
    ],
}

_INLINE_LABEL = _rx(r"^\W*(objectives?|goals?|aim|constraints?|assumptions?)\s*:\s+\S")
"""``Objective: minimise cost.`` -- a unit that names its own section."""

EMBED_WEIGHT = 2.5
"""How much one unit of cosine similarity (max over a kind's prototypes) counts against one cue point."""
FIRST_CONTEXT_BONUS = 4.0
LATER_CONTEXT_PENALTY = 2.0
"""Context is the opening of a problem; later units need an explicit cue (``we are a company``) to be context."""
HINT_BONUS = 3.0
UNCUED_OBJECTIVE_PENALTY = 1.0
"""A problem states its objective with a verb such as minimise or determine; without one, objective is unlikely."""


def cue_scores(text: str, cues_by_kind: Mapping[str, Sequence[tuple[re.Pattern, float]]] = CUES,
               kinds: Sequence[str] = UNIT_KINDS) -> dict[str, float]:
    """Summed cue weights per kind (every one of ``kinds``, 0 without a cue) for one unit's text; by default the
    optimisation decomposer's cues (a unit domain passes its own table and kinds)."""
    return text_cue_scores(text, cues_by_kind, kinds)


@lru_cache(maxsize=1)
def _prototype_matrix() -> tuple[tuple[str, ...], np.ndarray]:
    from tasks.llm.embeddings import encode_prototypes

    return encode_prototypes(PROTOTYPES, UNIT_KINDS)


def similarities(texts: Sequence[str]) -> np.ndarray:
    """(n, len(UNIT_KINDS)): the best cosine similarity of each text to each kind's prototypes."""
    from tasks.llm.embeddings import encode

    if not texts:
        return np.zeros((0, len(UNIT_KINDS)), dtype=np.float32)
    labels, protos = _prototype_matrix()
    sims = encode(list(texts)) @ protos.T
    out = np.full((len(texts), len(UNIT_KINDS)), -1.0, dtype=np.float32)
    for col, label in enumerate(labels):
        k = UNIT_KINDS.index(label)
        out[:, k] = np.maximum(out[:, k], sims[:, col])
    return out


def classify(segments: Sequence[Segment], sims: np.ndarray) -> list[str]:
    """One kind per segment; ``sims`` has one row per segment (structured rows are ignored)."""
    kinds: list[str] = []
    for i, seg in enumerate(segments):
        if seg.structured:
            kinds.append("data")
            continue
        scores = cue_scores(seg.content)
        if scores["objective"] == 0.0:
            scores["objective"] -= UNCUED_OBJECTIVE_PENALTY
        for k, kind in enumerate(UNIT_KINDS):
            scores[kind] += EMBED_WEIGHT * float(sims[i, k])
        scores["context"] += FIRST_CONTEXT_BONUS if i == 0 else -LATER_CONTEXT_PENALTY
        label = _INLINE_LABEL.match(seg.content)
        hint = _heading_kind(label.group(1)) if label else seg.hint
        if hint is not None:
            scores[hint] += HINT_BONUS
        kinds.append(max(UNIT_KINDS, key=lambda kind: scores[kind]))
    return kinds


def local_batch(inputs: Sequence[DecomposeInput]) -> list[DecomposeOutput]:
    """Segment every text, embed all prose segments in one call, then type them."""
    all_segments = [segment(inp.text) for inp in inputs]
    flat = [seg for segs in all_segments for seg in segs]
    prose = [i for i, seg in enumerate(flat) if not seg.structured]
    sims = np.zeros((len(flat), len(UNIT_KINDS)), dtype=np.float32)
    if prose:
        sims[prose] = similarities([flat[i].content for i in prose])
    outputs: list[DecomposeOutput] = []
    row = 0
    for segs in all_segments:
        kinds = classify(segs, sims[row : row + len(segs)])
        row += len(segs)
        outputs.append(DecomposeOutput(units=[
            DecomposedUnit(kind=kind, content=seg.content.strip()) for seg, kind in zip(segs, kinds, strict=True)
        ]))
    return outputs


def local(inp: DecomposeInput) -> DecomposeOutput:
    return local_batch([inp])[0]


SPEC = RoleSpec(name="decomposer", input_model=DecomposeInput, output_model=DecomposeOutput, local=local,
                local_batch=local_batch)
ROLES.add(SPEC.name, SPEC)

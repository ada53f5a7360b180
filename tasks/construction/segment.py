"""Segmentation, shared by every unit domain: a complete free-text record -> verbatim segments.

Paragraphs are split at blank lines. Prose is cut into sentences (and at line breaks after lines without final
punctuation, so bare ``Budget: $40`` lines stay apart); a markdown table, a LaTeX array, a block of code-like or value
lines or a list of data items stays one unit together with its lead-in (a sentence ending in ``:`` or a ``Table 1-2``
caption just before it). A list whose items are full sentences, or whose lead-in is a section label such as
``Constraints:``, is split into its items. Markdown headings and section labels are dropped; their words become a kind
hint for the segments under them (``Segment.hint``, read by the optimisation decomposer,
``tasks.domains.optimization.decompose``). A scene-setting first sentence followed by "I need help ..." stays one
unit. Every segment's content is a verbatim slice of the input (prose slices have their whitespace runs collapsed).

Each domain types the segments itself (the optimisation decomposer with its cue words and MiniLM prototypes, the
analytics one with its cue words).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tasks.text import strip_span


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

CONSTRAINT_WORDS = re.compile(
    r"\b(must|cannot|can ?not|can't|may not|mustn't|should(?: not)?|shall|at most|at least|no more than|"
    r"no less than|not (?:be )?(?:exceed|more|less|allowed|permitted)|exceed|exactly|only|required to|"
    r"is required|are required|not allowed|allowed|permitted|forbidden|limited to|up to|either|"
    r"integer|non-?negative|whole|each .{0,40}\bone\b|if\b.{0,80}\bthen\b|if\b.{0,80}, (?:it|they|then)|"
    r"equal(?:s)? to|less than or equal|greater than or equal|fully (?:met|utili[sz]ed)|satisf(?:y|ied))\b"
    r"|[≤≥]|<=|>=",
    re.IGNORECASE,
)
"""Rule words: a list item with them is a full sentence, not a data item (also a cue of the optimisation
decomposer's ``constraint`` kind)."""
ASKS_FOR_HELP = re.compile(
    r"\b(?:i|we) (?:need|want|would like)\b|\bhelp (?:me|us)\b|\b(?:i|we) (?:am|are) (?:looking|trying)\b",
    re.IGNORECASE,
)
"""A request for help: a scene-setting first sentence followed by one stays one segment."""

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


def heading_kind(line: str) -> str | None:
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
    return bool(stripped) and heading_kind(line) is not None and not re.search(r"\d", stripped) and (
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
    return bool(ASKS_FOR_HELP.search(second)) and not ASKS_FOR_HELP.search(first) and not re.search(r"\d", first)


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
    if re.match(r"^[^:]{1,60}:\s*\S", body) and not CONSTRAINT_WORDS.search(body):
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
                self.hint = heading_kind(self.text[start:end])
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
                self.hint = heading_kind(piece)
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
                self.hint = heading_kind(line.text)
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



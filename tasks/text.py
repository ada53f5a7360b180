"""Text helpers every domain's construction shares (the SWE masker, the unit domains' leak checks, the SWE roles'
passage splitters, the samples' span check: :func:`locate`), the pieces the Markdown segmenters and cue classifiers
have in common (a heading line, sentence spans, summed regex cues, cue tags), and how the reports print a number
(:func:`fmt`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TypeVar

T = TypeVar("T")

FENCE = re.compile(r"^\s*(```|~~~)")
"""A Markdown code-fence delimiter line (```` ``` ```` or ``~~~``, with or without a language)."""


def closing_fence(lines: Sequence[str], i: int) -> int:
    """Index of the first fence delimiter line after line ``i`` (``len(lines)`` when the fence is never closed)."""
    j = i + 1
    while j < len(lines) and not FENCE.match(lines[j]):
        j += 1
    return j


def strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    """``text[start:end]`` without its leading and trailing whitespace, as offsets into ``text``."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def matching_tags(text: str, rules: Iterable[tuple[Sequence[Callable[[str], object]], T]]) -> list[T]:
    """The tag of every rule one of whose tests (a pattern's bound ``search`` or ``match``) accepts ``text``, in rule
    order (a prose unit's cue tags)."""
    return [tag for tests, tag in rules if any(test(text) for test in tests)]


def cue_scores(text: str, cues_by_label: Mapping[str, Sequence[tuple[re.Pattern, float]]],
               labels: Iterable[str]) -> dict[str, float]:
    """Per label (every one of ``labels``, 0.0 without a cue), the summed weights of its regex cues found in ``text``
    (the decomposers' unit kinds, the question classifier's categories)."""
    scores = dict.fromkeys(labels, 0.0)
    for label, cues in cues_by_label.items():
        for pattern, weight in cues:
            if pattern.search(text):
                scores[label] += weight
    return scores


def markdown_heading(label: str = "") -> re.Pattern:
    """A Markdown heading line (``# ...``, ``**...**``, ``__...__``, indented at most three spaces); with ``label``
    (a regex), a line that it matches counts too (a ``Label:`` line)."""
    return re.compile(r"^\s{0,3}(#{1,6}\s+\S.*|\*\*[^*]+\*\*:?|__[^_]+__:?" + (f"|{label}" if label else "") + r")\s*$")


def split_spans(text: str, start: int, end: int, pattern: re.Pattern) -> list[tuple[int, int]]:
    """The non-empty pieces of ``text[start:end]`` split at ``pattern`` (sentence ends, say), as offsets into
    ``text``."""
    spans = []
    offset = start
    for piece in pattern.split(text[start:end]):
        if piece:
            idx = text.index(piece, offset)
            offset = idx + len(piece)
            spans.append((idx, offset))
    return spans


def normalise_ws(text: str) -> str:
    """``text`` with every run of whitespace one space, and none at either end (how leaks and spans are compared)."""
    return " ".join(text.split())


def whitespace_pattern(span: str) -> re.Pattern | None:
    """A pattern matching ``span`` with any run of whitespace standing for any other (None for a blank span)."""
    tokens = span.split()
    return re.compile(r"\s+".join(re.escape(t) for t in tokens)) if tokens else None


PIECE_MIN_CHARS = 12
_PIECES = re.compile(r"\.\.\.|…|\n")


def normalise_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def find_all(text: str, span: str) -> list[tuple[int, int]]:
    """Every occurrence of ``span`` in ``text``, any run of whitespace matching any other."""
    pattern = whitespace_pattern(span)
    return [(m.start(), m.end()) for m in pattern.finditer(text)] if pattern else []


def locate(text: str, span: str) -> list[tuple[int, int]]:
    """All occurrences of ``span`` in ``text``, matching any run of whitespace to any other.

    A span quoted with an ellipsis ("first part ... last part") or stitched from non-adjacent lines is located
    piece by piece (pieces shorter than 12 characters are ignored).
    """
    found = find_all(text, span)
    if found:
        return found
    pieces = [p for p in _PIECES.split(span) if len(p.strip()) >= PIECE_MIN_CHARS]
    if len(pieces) == 1 and pieces[0].strip() == span.strip():
        return []
    return sorted(iv for piece in pieces for iv in find_all(text, piece))


def fmt(value: object, digits: int | None = None) -> str:
    """A number as the reports print it (the metrics files keep the exact value): None is an en dash, a bool yes or
    no, an int as it is; a float with ``digits`` decimals, or without ``digits`` 4 significant digits (one decimal
    from 1000 on, an exponent below 1e-4)."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if digits is not None:
            return f"{value:.{digits}f}"
        size = abs(value)
        if value == 0:
            return "0"
        if size >= 1000:
            return f"{value:.1f}"
        if size >= 1e-4:
            return f"{value:.4g}"
        return f"{value:.2e}"
    return str(value)

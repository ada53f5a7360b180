"""Completion text -> clarification questions (CLARITI §5.1, widened to bullets and bare questions).

Order of preference: numbered items (``1.``, ``1)``, ``Q1:``, ``**1.**``), else bullet items (``-``, ``*``, ``•``),
else sentences ending in ``?``. Items of ``MIN_QUESTION_CHARS`` characters or fewer are dropped, as in CLARITI.
Reasoning is removed first: ``<think>…</think>``, an unclosed ``<think>`` (everything after it), and a stray
``</think>`` whose opening tag was in the prompt (everything before it).
"""

from __future__ import annotations

import re

MIN_QUESTION_CHARS = 10

_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_OPEN = re.compile(r"<think>", re.IGNORECASE)
_CLOSE = re.compile(r"</think>", re.IGNORECASE)
_NUMBERED = re.compile(
    r"^\s*(?:[*_]{1,2})?(?:(?:Q|Question)\s*)?\d{1,3}\s*(?:[.):]|\s-)(?=\s|$|\*)(?:[*_]{1,2})?\s*(.*)$", re.IGNORECASE
)
_BULLET = re.compile(r"^\s*[-*•+]\s+(.*)$")
_SENTENCE = re.compile(r"[^.!?\n]*\?")
_EMPHASIS = re.compile(r"(\*\*|__)")


def strip_think(text: str) -> str:
    text = _THINK_BLOCK.sub("", text)
    closes = list(_CLOSE.finditer(text))
    if closes:
        text = text[closes[-1].end():]
    opened = _OPEN.search(text)
    if opened:
        text = text[: opened.start()]
    return text


def _clean(item: str) -> str:
    return " ".join(_EMPHASIS.sub("", item).split())


def _items(lines: list[str], marker: re.Pattern) -> list[str]:
    """Items opened by ``marker``; a following non-blank line continues the open item until a blank line, unless
    it is indented (then it continues across the blank)."""
    items: list[str] = []
    current: list[str] | None = None
    after_blank = False
    for line in lines:
        match = marker.match(line)
        if match:
            if current is not None:
                items.append(" ".join(current))
            current = [match.group(1).strip()]
            after_blank = False
        elif not line.strip():
            after_blank = True
        elif current is not None and (not after_blank or line[:1].isspace()):
            current.append(line.strip())
        elif current is not None:
            items.append(" ".join(current))
            current = None
    if current is not None:
        items.append(" ".join(current))
    return [q for q in (_clean(i) for i in items) if len(q) > MIN_QUESTION_CHARS]


def parse_questions(text: str | None) -> list[str]:
    """The questions a completion asks; ``[]`` for empty output (which the staged reward scores 0)."""
    if not isinstance(text, str):
        return []
    lines = strip_think(text).splitlines()
    for marker in (_NUMBERED, _BULLET):
        found = _items(lines, marker)
        if found:
            return found
    body = "\n".join(lines)
    return [q for q in (_clean(m.group(0)) for m in _SENTENCE.finditer(body)) if len(q) > MIN_QUESTION_CHARS]

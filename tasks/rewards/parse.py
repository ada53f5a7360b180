"""Completion text -> clarification questions (CLARITI §5.1, widened to bullets and bare questions): the one parser
of the project (the staged reward, the SWE evaluation, SFT data and the OR policy clarifier).

Order of preference: numbered items (``1.``, ``1)``, ``Q1:``, ``**1.**``), else bullet items (``-``, ``*``, ``•``),
else sentences ending in ``?``. Items of ``MIN_QUESTION_CHARS`` characters or fewer are dropped, as in CLARITI.
Reasoning is removed first: ``<think>…</think>``, an unclosed ``<think>`` (everything after it), and a stray
``</think>`` whose opening tag was in the prompt (everything before it). ``dedupe=True`` drops exact repeats
(compared after case-folding and collapsing punctuation); the reward keeps them, so that its diversity stage can
penalise them.
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
_NON_WORD = re.compile(r"\W+")


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


def question_key(question: str) -> str:
    """What two questions share when they are exact repeats: case-folded, punctuation and spacing collapsed."""
    return _NON_WORD.sub(" ", question.casefold()).strip()


def _unique(questions: list[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for question in questions:
        key = question_key(question)
        if key not in seen:
            seen.add(key)
            out.append(question)
    return out


def parse_questions(text: str | None, *, dedupe: bool = False) -> list[str]:
    """The questions a completion asks; ``[]`` for empty output (which the staged reward scores 0).
    ``dedupe``: keep only the first of exact repeats."""
    if not isinstance(text, str):
        return []
    lines = strip_think(text).splitlines()
    body = "\n".join(lines)
    found = _items(lines, _NUMBERED) or _items(lines, _BULLET) or \
        [q for q in (_clean(m.group(0)) for m in _SENTENCE.finditer(body)) if len(q) > MIN_QUESTION_CHARS]
    return _unique(found) if dedupe else found

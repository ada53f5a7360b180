"""The CLARITI reference's question parser (clariti.md §5.1), apart so that the reward and its judges share it
without importing each other."""

from __future__ import annotations

import re

MIN_CHARS = 10
"""An item of this many characters or fewer is not a question."""
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)
_NUMBERED = re.compile(r"^\d+\.\s*(.+?)(?=\n\d+\.|$)", re.MULTILINE | re.DOTALL)
_LEADING_NUMBER = re.compile(r"^\d+\.\s*")

def reference_questions(text: str | None) -> list[str]:
    """The reference's parser: ``<think>`` blocks removed; numbered items ``1. …`` (an item runs to the next
    numbered line) longer than 10 characters; if there is no numbered item, every line longer than 10 characters
    (a leading ``1.`` dropped). Empty output or ``<think></think>`` -> no questions."""
    if not isinstance(text, str) or not text.strip() or text.strip() == "<think></think>":
        return []
    text = _THINK.sub("", text)
    numbered = _NUMBERED.findall(text)
    if numbered:
        return [q.strip() for q in numbered if len(q.strip()) > MIN_CHARS]
    lines = (_LEADING_NUMBER.sub("", line).strip() for line in text.split("\n"))
    return [line for line in lines if len(line) > MIN_CHARS]

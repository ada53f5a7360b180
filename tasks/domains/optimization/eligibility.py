"""Filter: which units of a complete problem may be hidden (the hide candidates of ``construct@optimization``).

A unit is a candidate when it is formulation-critical (objective, constraint, assumption: ``HIDEABLE_KINDS``);
raw data and pure context always stay visible. A candidate is then dropped when its meaning is already fixed by
other units, so hiding it would leave no real gap:

- *implied*: every amount it states also appears in one short data/context unit that says nearly the same thing
  (MiniLM cosine) with a compatible bound (a stated total of 15000 hours already implies the capacity bound "at
  most 15000 hours", but not a floor "at least 15000 hours");
- *restates*: it is a near-duplicate of an earlier unit (MiniLM cosine, or the same numbers with high overlap).

Every unit gets a short reason string ("objective", "implied by U5 (same limit 3)", "data", ...).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from tasks.domains.optimization.vocabulary import HIDEABLE_KINDS
from tasks.llm.embeddings import encode
from tasks.records import Eligibility, Unit
from tasks.roles.slot_hit import ENTITY_HEADS, content_words

IMPLIED_SIMILARITY = 0.55
"""Cosine above which a candidate whose numbers all appear in a data/context unit counts as implied by it."""
RESTATE_SIMILARITY = 0.92
"""Cosine above which a candidate is a near-duplicate restatement of an earlier unit, numbers or not."""
RESTATE_WORD_OVERLAP = 0.6
"""Content-word overlap (share of the candidate's words) that, with the same numbers, marks a restatement."""
MAX_IMPLIER_CHARS = 400
"""Long units (whole tables) fix many numbers at once; matching a number there is no evidence of a restatement."""

NUMBER = re.compile(r"(?<![A-Za-z_])\d[\d,]*(?:\.\d+)?")
IDENTIFIER = re.compile(
    r"\btables?\s*[\d.\-]+|\(\s*\d+\s*\)|\b\d+(st|nd|rd|th)\b|\b\d{1,2}:\d{2}\b|"
    rf"\b({ENTITY_HEADS}|quarter|process|stage|vat|type|p)(s|es)?\s*\d+((\s*(,|and|or|to|-)\s*)\d+)*\b",
    re.IGNORECASE,
)
"""Numbers that name things (``project (2)``, ``machines 2 and 3``, ``Table 1-4``, ``8th week``), not amounts."""
UPPER = re.compile(r"\b(at most|cannot exceed|can ?not exceed|must not exceed|not exceed|no more than|up to|"
                   r"maximum|max|less than or equal|limit\w*|capacity|available|≤)\b", re.IGNORECASE)
LOWER = re.compile(r"\b(at least|no less than|not less than|minimum|min|required|requirement|demand|target|"
                   r"≥)\b", re.IGNORECASE)
EQUAL = re.compile(r"\b(exactly|equal\w*|fully utili[sz]\w*|must be \d+|must have \d+|target|required)\b",
                   re.IGNORECASE)


def numbers(text: str) -> set[str]:
    """The amounts a text states, normalised (``15,000`` and ``15000`` match; ``3.0`` and ``3`` match); numbers
    that only name things (identifiers, table numbers, ordinals, clock times) are left out."""
    out = set()
    for raw in NUMBER.findall(IDENTIFIER.sub(" ", text)):
        value = raw.replace(",", "")
        try:
            number = float(value)
        except ValueError:
            continue
        out.add(f"{number:g}")
    return out


def _word_sequence(text: str) -> list[str]:
    """Words and numbers in order: a restatement says the same things about the same entities, in the same roles."""
    return re.findall(r"[a-z0-9]+", text.lower())


def direction(text: str) -> str | None:
    """``upper``, ``lower`` or ``equal`` for a bound statement; None when the text states no bound."""
    if EQUAL.search(text) and not (UPPER.search(text) or LOWER.search(text)):
        return "equal"
    if UPPER.search(text):
        return "upper"
    if LOWER.search(text):
        return "lower"
    return "equal" if EQUAL.search(text) else None


def _same_bound(candidate: str, other: str) -> bool:
    """Does ``other`` state the same kind of bound as ``candidate`` (a plain amount counts as an upper bound)?"""
    kind = direction(candidate)
    if kind == "upper":
        return not (LOWER.search(other) or EQUAL.search(other)) or bool(UPPER.search(other))
    if kind == "lower":
        return bool(LOWER.search(other))
    if kind == "equal":
        return bool(EQUAL.search(other) or LOWER.search(other))
    return False


def _overlap(a: str, b: str) -> float:
    words = content_words(a) - set(numbers(a))
    return len(words & content_words(b)) / len(words) if words else 0.0


def _implier(i: int, units: Sequence[Unit], sims: np.ndarray) -> str | None:
    """The reason ``units[i]`` adds nothing beyond another unit, or None."""
    unit = units[i]
    own = numbers(unit.content)
    for j, other in enumerate(units):
        if j == i:
            continue
        sim = float(sims[i, j])
        shared = own & numbers(other.content)
        same_numbers = bool(own) and own <= shared
        short_fact = other.kind in ("data", "context") and len(other.content) <= MAX_IMPLIER_CHARS
        if short_fact and same_numbers and sim >= IMPLIED_SIMILARITY and _same_bound(unit.content, other.content):
            return f"implied by {other.id} (same limit {', '.join(sorted(own))})"
        if j < i and other.kind in HIDEABLE_KINDS:
            same_words = _word_sequence(unit.content) == _word_sequence(other.content)
            if sim >= RESTATE_SIMILARITY and same_words:
                return f"restates {other.id}"
            same_bound = direction(unit.content) == direction(other.content)
            if same_numbers and same_bound and _overlap(unit.content, other.content) >= RESTATE_WORD_OVERLAP:
                return f"restates {other.id} (same numbers {', '.join(sorted(own))})"
    return None


def eligibility(units: list[Unit]) -> list[Eligibility]:
    """One verdict per unit, in input order."""
    if not units:
        return []
    sims = encode([u.content for u in units])
    sims = sims @ sims.T
    out = []
    for i, unit in enumerate(units):
        if unit.kind not in HIDEABLE_KINDS:
            out.append(Eligibility(unit_id=unit.id, eligible=False, reason=unit.kind))
            continue
        implied = None if unit.kind == "objective" else _implier(i, units, sims)
        if implied:
            out.append(Eligibility(unit_id=unit.id, eligible=False, reason=implied))
        else:
            out.append(Eligibility(unit_id=unit.id, eligible=True, reason=unit.kind))
    return out

"""The rules: classify every unit, possibly into several categories.

Code lines are Reproduction Steps, program output and tracebacks Error Information, unless the section heading
("Expected outcome", "Versions", "Proposed fix") or the lead-in line before the block ("The fix could be:") says
otherwise. Prose units get categories from rules (exception names, "should/expected" wording, fix proposals and file
paths, URLs and issue references, version strings, "when I run ..." conditions) checked against the cosine similarity
to category prototypes (:mod:`tasks.roles.annotator.prototypes`); a very similar prototype alone also tags a unit.
"""

from __future__ import annotations

import re

import numpy as np

from tasks.categories import ORDER, Category
from tasks.roles.annotator.patterns import (
    ASSERT,
    BOILERPLATE,
    COMMENT_ERROR,
    COMMENT_EXPECTED,
    ERROR,
    ERROR_LINE,
    EXPECTED,
    IMPL,
    PATH,
    REF,
    REPRO_PROSE,
    TRACEBACK_LINE,
    URL,
    VERSION,
    VERSION_LINE,
)
from tasks.roles.annotator.records import Unit
from tasks.text import matching_tags

E, R, X, I, L, V = (  # noqa: E741 - the categories' initials
    Category.ERROR,
    Category.REPRODUCTION,
    Category.EXPECTED,
    Category.IMPLEMENTATION,
    Category.EXTERNAL_REFS,
    Category.VERSION_ENV,
)


_STRONG_RULES = (((URL.search, REF.search), L), ((VERSION.search, VERSION_LINE.match), V), ((ERROR_LINE.search,), E),
                 ((PATH.search,), I))
_WEAK_RULES = (((ERROR.search,), E), ((EXPECTED.search,), X), ((IMPL.search,), I), ((REPRO_PROSE.search,), R))


def rule_tags(unit: Unit) -> tuple[set[Category], set[Category]]:
    """(strong, weak) categories of a prose unit from rules; weak ones need some embedding support."""
    return set(matching_tags(unit.text, _STRONG_RULES)), set(matching_tags(unit.text, _WEAK_RULES))


_SIM_WEAK = {E: 0.15, R: 0.15, X: 0.10, I: 0.22, L: 0.25, V: 0.30}
"""Cosine a weak rule hit needs to be kept."""
_SIM_ALONE = {E: 0.42, R: 0.45, X: 0.42, I: 0.45, L: 0.50, V: 0.50}
"""Cosine that tags a unit without any rule hit."""

_SECTION_CUES: tuple[tuple[re.Pattern, Category | None], ...] = (
    (re.compile(r"expect|desired|should|what did you expect|correct (behaviou?r|output|result)", re.I), X),
    (re.compile(r"reproduc|steps|example|mcve|mvce|minimal|code sample|test case|how to|command used|models?$",
                re.I), R),
    (re.compile(r"actual|traceback|error|log output|what happened|bug summary|describe the bug|bug description|"
                r"problem|bug report|pylint output|^output$|current behaviou?r|^result", re.I), E),
    (re.compile(r"version|environment|system|platform|operating system|^os\b|backend|installation|install|"
                r"configuration|dependenc|extensions|extra tools|conda|python|jupyter|setup", re.I), V),
    (re.compile(r"fix|solution|proposal|suggest|implementation|patch|workaround|resolution|alternative", re.I), I),
    (re.compile(r"reference|related|links|see also|resources", re.I), L),
)
_LEAD_CUES: tuple[tuple[re.Pattern, Category], ...] = (
    (re.compile(r"\b(expect\w*|should|instead|correct|desired|want(ed)?|works? (fine|as expected|correctly)|"
                r"work(s|ed)? fine|as expected)\b", re.I), X),
    (re.compile(r"\b(fix|patch|diff|change[sd]?|suggest\w*|solution|propos\w+|something like|replac\w+|"
                r"modif\w+|workaround|implement\w*)\b", re.I), I),
    (re.compile(r"\b(error|traceback|exception|output|result|fails?|failure|crash\w*|get|got|gives?|shows?|"
                r"prints?|returns?|produces?|raises?|see|following)\b", re.I), E),
    (re.compile(r"\b(version|environment|installed|pip (freeze|list)|platform|show_versions)\b", re.I), V),
)



def _heading_category(text: str) -> Category | None:
    label = text.strip().strip("#*_:= ").strip()
    for pattern, cat in _SECTION_CUES:
        if pattern.search(label):
            return cat
    return None


def lead_category(text: str) -> Category | None:
    """The category a prose line ending in a colon announces for the block that follows it."""
    if not text.rstrip().endswith((":", ":\n")) and not re.search(r"\b(following|below)\b", text, re.I):
        return None
    for pattern, cat in _LEAD_CUES:
        if pattern.search(text):
            return cat
    if re.search(r"\b(reproduc\w*|example|code|snippet|run|script|steps?|consider|e\.g\.|like this)\b", text, re.I):
        return R
    return None


def _block_tags(unit: Unit, context: Category | None) -> set[Category]:
    """Categories of one line (or traceback) of a code block, given the category the block was announced with."""
    t = unit.text
    if unit.kind == "traceback" or (unit.kind != "diff" and TRACEBACK_LINE.search(t) and context != I):
        return {E}
    if unit.kind == "diff":
        return {I}
    if VERSION_LINE.match(t) or (context == V and unit.kind == "output"):
        return {V}
    cats: set[Category] = set()
    if context == V and VERSION.search(t):
        cats.add(V)
    if unit.kind == "output":
        cats.add(X if context == X else E)
        return cats
    if unit.kind == "exchange":
        cats.update({R, X if context == X or COMMENT_EXPECTED.search(t) else E})
        return cats
    if context == I:
        cats.add(I)
        return cats
    cats.add(R)
    if ASSERT.match(t) or COMMENT_EXPECTED.search(t) or context == X:
        cats.add(X)
    if COMMENT_ERROR.search(t) or ERROR_LINE.search(t):
        cats.add(E)
    return cats


def _prose_tags(unit: Unit, row: np.ndarray, section: Category | None) -> set[Category]:
    strong, weak = rule_tags(unit)
    cats = set(strong)
    for k, cat in enumerate(ORDER):
        s = float(row[k])
        if (cat in weak and s >= _SIM_WEAK[cat]) or s >= _SIM_ALONE[cat]:
            cats.add(cat)
    if section is not None and section not in (I, L):
        cats.add(section)
    elif section in (I, L) and (cat_weak := section) in weak:
        cats.add(cat_weak)
    if unit.kind == "title":
        cats.add(E)
    return cats


def classify(units: list[Unit], sims: np.ndarray) -> None:
    """Set each unit's ``cats``, ``section`` and ``context`` from the rules; ``sims`` holds each unit's prototype
    cosines (:func:`tasks.roles.annotator.prototypes.similarities`, zeros for units that are not prose)."""
    section: Category | None = None
    lead: Category | None = None
    lead_block = -1
    for unit, row in zip(units, sims):
        unit.section = section
        if unit.kind == "heading":
            section = _heading_category(unit.text)
            unit.cats = {section} if section else set()
            lead, lead_block = None, -1
            continue
        if unit.kind == "comment":
            unit.cats = {L}
            continue
        if BOILERPLATE.search(unit.text):
            unit.cats = set()
            continue
        if unit.block >= 0:
            if lead is not None and lead_block == -1:
                lead_block = unit.block
            context = lead if lead is not None and unit.block == lead_block else section
            unit.context = context
            unit.cats = _block_tags(unit, context)
            if URL.search(unit.text):
                unit.cats.add(L)
            continue
        unit.cats = _prose_tags(unit, row, section)
        lead, lead_block = lead_category(unit.text), -1

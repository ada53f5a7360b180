"""Spans of the issue text: the LLM backend's answer spans located verbatim in the issue, and the local backend's
tagged units merged into spans."""

from __future__ import annotations

from collections.abc import Sequence

from tasks.categories import ORDER, Category
from tasks.records import SpanAnnotation
from tasks.roles.annotator.records import Annotation, TaggedSpan, Unit
from tasks.text import FENCE, whitespace_pattern

# ---- answer spans -> verbatim spans (LLM backend) --------------------------------------------------------------------


def find_span(text: str, span: str) -> tuple[int, int] | None:
    """First occurrence of ``span`` in ``text``: exact, else with any run of whitespace matching any other."""
    idx = text.find(span)
    if idx >= 0:
        return idx, idx + len(span)
    pattern = whitespace_pattern(span)
    match = pattern.search(text) if pattern else None
    return (match.start(), match.end()) if match else None


def verbatim_spans(annotation: Annotation, text: str) -> Annotation:
    """Keep only spans that occur in ``text`` (whitespace-insensitive), rewritten to the issue's own wording.

    Duplicates are dropped; ``present`` keeps the annotator's categories, plus any category that has a span.
    """
    kept: list[TaggedSpan] = []
    seen: set[tuple[Category, str]] = set()
    for span in annotation.spans:
        where = find_span(text, span.text)
        if where is None or not text[where[0] : where[1]].strip():
            continue
        exact = text[where[0] : where[1]]
        if (span.category, exact) not in seen:
            seen.add((span.category, exact))
            kept.append(TaggedSpan(category=span.category, text=exact))
    present = set(annotation.present) | {s.category for s in kept}
    return Annotation(spans=kept, present=[c for c in ORDER if c in present])


def to_span_annotations(annotation: Annotation) -> list[SpanAnnotation]:
    """The annotation as ``IssueRecord.spans`` (use ``annotation.present`` for ``IssueRecord.present``)."""
    return [SpanAnnotation(category=s.category, text=s.text) for s in annotation.spans]


# ---- tagged units -> spans (local backend) ---------------------------------------------------------------------------


def only_fences(gap: str) -> bool:
    """True when nothing but whitespace and code-fence delimiter lines separates two units."""
    return all(not line.strip() or FENCE.match(line) for line in gap.split("\n"))


def merge_spans(text: str, units: list[Unit], cats: Sequence[set[Category]]) -> list[TaggedSpan]:
    """Per category, runs of units tagged with it (``cats[k]`` for ``units[k]``) that only whitespace and fence lines
    separate, as spans of ``text``, in text order."""
    spans: list[tuple[int, int, Category]] = []
    for cat in ORDER:
        open_span: tuple[int, int] | None = None
        for unit, unit_cats in zip(units, cats):
            if cat in unit_cats:
                if open_span and only_fences(text[open_span[1] : unit.start]):
                    open_span = (open_span[0], unit.end)
                else:
                    if open_span:
                        spans.append((*open_span, cat))
                    open_span = (unit.start, unit.end)
            elif open_span:
                spans.append((*open_span, cat))
                open_span = None
        if open_span:
            spans.append((*open_span, cat))
    spans.sort(key=lambda s: (s[0], ORDER.index(s[2])))
    return [TaggedSpan(category=c, text=text[s:e]) for s, e, c in spans]


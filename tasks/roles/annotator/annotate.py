"""Annotating issues locally: segment, classify by the rules, embed the prose once for a whole batch, then merge the
tagged units into spans (the rules' tags, or the learned scorer's when it is shipped)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tasks.categories import ORDER, Category
from tasks.roles.annotator.features import HashedText, hashed_text, unit_features
from tasks.roles.annotator.prototypes import embed_text, similarities
from tasks.roles.annotator.records import AnnotateInput, Annotation, Unit
from tasks.roles.annotator.rules import classify
from tasks.roles.annotator.scorer import UnitScorer, fill_groups, unit_groups, unit_tags
from tasks.roles.annotator.segmentation import segment
from tasks.roles.annotator.spans import merge_spans


@dataclass
class Prepared:
    """An issue cut into units, classified by the rules, with the learned scorer's features."""

    text: str
    units: list[Unit]
    features: np.ndarray
    hashed: HashedText


def prepare_batch(inputs: Sequence[AnnotateInput]) -> list[Prepared]:
    """Segment and rule-classify many issues with one embedding call for all their prose units."""
    from tasks.llm.embeddings import DIM, encode

    segmented = [segment(inp.text) for inp in inputs]
    prose = [u for units in segmented for u in units if u.kind in ("prose", "title")]
    texts = list(dict.fromkeys(embed_text(u) for u in prose))
    index = {t: k for k, t in enumerate(texts)}
    vecs_all = encode(texts) if texts else np.zeros((0, DIM), dtype=np.float32)
    sims_all = similarities(vecs_all) if texts else np.zeros((0, len(ORDER) + 1), dtype=np.float32)
    out = []
    for inp, units in zip(inputs, segmented):
        sims = np.zeros((len(units), len(ORDER) + 1), dtype=np.float32)
        vecs = np.zeros((len(units), DIM), dtype=np.float32)
        for k, unit in enumerate(units):
            if unit.kind in ("prose", "title"):
                sims[k] = sims_all[index[embed_text(unit)]]
                vecs[k] = vecs_all[index[embed_text(unit)]]
        classify(units, sims)
        out.append(Prepared(inp.text, units, unit_features(units, sims, vecs), hashed_text(units)))
    return out


def rules_annotation(prepared: Prepared) -> Annotation:
    """The rules' categories of each unit merged into spans; a category is present when it has a span."""
    cats = [u.cats for u in prepared.units]
    present = [c for c in ORDER if any(c in u for u in cats)]
    return Annotation(spans=merge_spans(prepared.text, prepared.units, cats), present=present)


def scored_annotation(prepared: Prepared, scorer: UnitScorer, scores: np.ndarray | None = None) -> Annotation:
    """Units whose score passes the category's :func:`unit_tags` rule, filled within their paragraph or code block
    (:func:`fill_groups`) and merged into spans, for the categories judged present.

    Presence is "has a tagged unit" where ``presence_from_spans`` says so, else the issue-level regression (threshold 0:
    always present); a category called present with no tagged unit keeps its single best unit (present <=> has spans).
    """
    if not prepared.units:
        return Annotation()
    if scores is None:
        scores = scorer.scores(prepared.features, prepared.hashed)
    presence = scorer.presence(prepared.units, scores)
    tagged = fill_groups(unit_groups(prepared.text, prepared.units),
                         unit_tags(scores, scorer.unit_threshold, scorer.unit_relative))
    cats: list[set[Category]] = [set() for _ in prepared.units]
    present = []
    for j, cat in enumerate(ORDER):
        if scorer.presence_from_spans[j]:
            if not tagged[:, j].any():
                continue
        elif float(presence[j]) < float(scorer.presence_threshold[j]):
            continue
        present.append(cat)
        hits = np.flatnonzero(tagged[:, j])
        for k in hits if len(hits) else [int(np.argmax(scores[:, j]))]:
            cats[k].add(cat)
    return Annotation(spans=merge_spans(prepared.text, prepared.units, cats), present=present)


def annotate_prepared(prepared: Sequence[Prepared], scorer: UnitScorer | None) -> list[Annotation]:
    """The learned scorer's annotation of each issue, or the rules' when there is no scorer."""
    if scorer is None:
        return [rules_annotation(p) for p in prepared]
    return [scored_annotation(p, scorer) for p in prepared]

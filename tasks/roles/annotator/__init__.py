"""The annotator role: tag verbatim spans of a SWE issue with the six CLARITI categories.

Local backend (deterministic):

1. **Segment** the issue into units (``segmentation``): one unit per non-blank line inside code blocks, sentences in
   prose, headings, and the links inside HTML template comments.
2. **Classify** every unit, possibly into several categories (``rules``, on the cues of ``patterns``), the rules'
   weaker hits checked against the cosine similarity to category prototypes (``prototypes``), which are built from the
   project's own annotated samples (``data/samples/swe/issues.jsonl``) and short sentences written there.
3. **Merge** adjacent units of the same category (only whitespace or fence lines between them) into spans (``spans``).

A category is ``present`` when it has at least one span. When ``annotator_weights.npz`` sits next to this package the
learned unit scorer (``scorer``, over the unit features of ``features``) decides which units are tagged and which
categories are present; without the file the annotator is the rules. ``annotate`` runs the steps over a batch of
issues with one embedding call; ``role`` holds the ``RoleSpec``; ``records`` the input, output and unit records.

The LLM backend's answers go through :func:`verbatim_spans`, which drops any span not found in the issue.

The names below load their module on first use (PEP 562), so importing the package runs none of its modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tasks.lazy_exports import lazy_exports

_HOME = {
    "AnnotateInput": "records", "Annotation": "records", "TaggedSpan": "records", "Unit": "records",
    "find_span": "spans", "merge_spans": "spans", "only_fences": "spans", "to_span_annotations": "spans",
    "verbatim_spans": "spans",
    "segment": "segmentation",
    "FEATURE_VERSION": "features", "TEXT_BITS": "features", "HashedText": "features", "hashed_text": "features",
    "unit_features": "features",
    "TEXT_WEIGHT": "scorer", "WEIGHTS": "scorer", "UnitScorer": "scorer", "default_scorer": "scorer",
    "fill_groups": "scorer", "presence_features": "scorer", "trees_from_lightgbm": "scorer", "unit_groups": "scorer",
    "unit_tags": "scorer",
    "Prepared": "annotate", "annotate_prepared": "annotate", "prepare_batch": "annotate",
    "rules_annotation": "annotate", "scored_annotation": "annotate",
    "SPEC": "role", "local": "role", "local_batch": "role",
}

__all__ = [
    "FEATURE_VERSION",
    "SPEC",
    "TEXT_BITS",
    "TEXT_WEIGHT",
    "WEIGHTS",
    "AnnotateInput",
    "Annotation",
    "HashedText",
    "Prepared",
    "TaggedSpan",
    "Unit",
    "UnitScorer",
    "annotate_prepared",
    "default_scorer",
    "fill_groups",
    "find_span",
    "hashed_text",
    "local",
    "local_batch",
    "merge_spans",
    "only_fences",
    "prepare_batch",
    "presence_features",
    "rules_annotation",
    "scored_annotation",
    "segment",
    "to_span_annotations",
    "trees_from_lightgbm",
    "unit_features",
    "unit_groups",
    "unit_tags",
    "verbatim_spans",
]

if TYPE_CHECKING:
    from tasks.roles.annotator.annotate import (
        Prepared,
        annotate_prepared,
        prepare_batch,
        rules_annotation,
        scored_annotation,
    )
    from tasks.roles.annotator.features import FEATURE_VERSION, TEXT_BITS, HashedText, hashed_text, unit_features
    from tasks.roles.annotator.records import AnnotateInput, Annotation, TaggedSpan, Unit
    from tasks.roles.annotator.role import SPEC, local, local_batch
    from tasks.roles.annotator.scorer import (
        TEXT_WEIGHT,
        WEIGHTS,
        UnitScorer,
        default_scorer,
        fill_groups,
        presence_features,
        trees_from_lightgbm,
        unit_groups,
        unit_tags,
    )
    from tasks.roles.annotator.segmentation import segment
    from tasks.roles.annotator.spans import find_span, merge_spans, only_fences, to_span_annotations, verbatim_spans


__getattr__, __dir__ = lazy_exports(__name__, _HOME)

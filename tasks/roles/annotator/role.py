"""The annotator role: its ``RoleSpec`` and local backend (the learned scorer when its weights are shipped, else the
rules). The LLM backend's answers go through :func:`tasks.roles.annotator.spans.verbatim_spans`, which drops any span
not found in the issue."""

from __future__ import annotations

from collections.abc import Sequence

from tasks.roles.annotator.annotate import annotate_prepared, prepare_batch
from tasks.roles.annotator.records import AnnotateInput, Annotation
from tasks.roles.annotator.scorer import default_scorer
from tasks.roles.base import RoleSpec
from tasks.roles.registry import ROLES


def local_batch(inputs: Sequence[AnnotateInput]) -> list[Annotation]:
    """Annotate many issues with one embedding call for all their prose units (learned scorer when shipped)."""
    return annotate_prepared(prepare_batch(inputs), default_scorer())


def local(inp: AnnotateInput) -> Annotation:
    return local_batch([inp])[0]


SPEC = RoleSpec(name="annotator", input_model=AnnotateInput, output_model=Annotation, local=local,
                local_batch=local_batch)
ROLES.add(SPEC.name, SPEC)

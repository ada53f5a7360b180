"""The ``decomposer`` role: a complete optimisation problem text -> typed atomic units.

Local backend, in two steps:

1. **Segmentation** (rules, shared by every unit domain: ``tasks.construction.segment``). Paragraphs, sentences,
   tables and lists become verbatim segments; section headings and labels are dropped and become a kind hint for the
   segments under them.
2. **Typing** (cue words + MiniLM). Tables and lists are ``data``. Every other unit gets a score per kind from regex
   cues (``minimise`` -> objective, ``must``/``at most`` -> constraint, ``assume`` -> assumption, ``Label: 12
   units`` -> data, ``I need help`` -> context), plus its MiniLM similarity to short prototype sentences, plus the
   section hint, plus a context bonus for the opening unit (a penalty for later ones); the best score wins.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Literal, get_args

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from tasks.construction.segment import CONSTRAINT_WORDS, Segment, heading_kind, segment
from tasks.domains.optimization.vocabulary import UNIT_KINDS
from tasks.records import Unit, require_text
from tasks.roles.base import RoleSpec
from tasks.roles.registry import ROLES
from tasks.text import cue_scores as text_cue_scores

Kind = Literal["context", "data", "constraint", "objective", "assumption"]
assert get_args(Kind) == UNIT_KINDS

MAX_DECOMPOSED_UNITS = 64
"""Units one decomposition may have, in the sent schema only (the record does not enforce it). Stated so that a
grammar-constrained server's default list cap (``tasks/llm/client.py: GRAMMAR_MAX_ITEMS``, 8) does not apply: the
sample problems have 10-15 units, OR-Clarify's up to 23."""
MAX_UNIT_CHARS = 1000
"""Characters of one decomposed unit: a table with its lead-in stays one unit (the samples' longest is 627). In the
sent schema only, for the same reason: a grammar's default string cap (240) cut every such table. Not more: llama.cpp's
grammar parser refuses a string bound above about 1,000 ("exceeds sane defaults"; 1,024 and 1,500 were refused),
and llama-cpp-python's server then crashes."""


class DecomposeInput(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    problem_id: str = ""
    text: str
    """The complete problem statement (markdown: prose, bullet lists, tables)."""

    @field_validator("text")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        return require_text(value, "problem text is empty")


class DecomposedUnit(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Kind
    content: str = Field(min_length=1, json_schema_extra={"maxLength": MAX_UNIT_CHARS})
    """A verbatim piece of the problem text (whitespace may differ)."""


class DecomposeOutput(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    units: list[DecomposedUnit] = Field(json_schema_extra={"maxItems": MAX_DECOMPOSED_UNITS})
    """The problem's atomic units in text order."""


def to_units(output: DecomposeOutput) -> list[Unit]:
    """The decomposed units as ``Unit`` records numbered ``U1..Un`` in order."""
    return [Unit(id=f"U{i}", kind=u.kind, content=u.content) for i, u in enumerate(output.units, start=1)]


# ---- typing ------------------------------------------------------------------------------------------------------

def _rx(pattern: str) -> re.Pattern:
    return re.compile(pattern, re.IGNORECASE)


_OPTIMISE = r"(?:maximi[sz]|minimi[sz])(?:e|ed|ing)"

CUES: dict[str, list[tuple[re.Pattern, float]]] = {
    "objective": [
        (_rx(rf"^\W*{_OPTIMISE}\b"), 3.0),
        (_rx(rf"\b{_OPTIMISE}\b"), 1.6),
        (_rx(r"\b(?:the|our|my|main|primary) (?:goal|objective|aim)\b|\bobjective\b|\bgoal is\b"), 1.6),
        (_rx(r"^\W*(?:determine|find|achieve|decide|compute|calculate)\b"), 1.2),
        (_rx(r"\bas (?:low|high|small|large|much|little|few) as possible\b"), 1.4),
    ],
    "constraint": [
        (CONSTRAINT_WORDS, 1.0),
        (_rx(r"\b(?:must|cannot|can ?not|must not|may not|no more than|at most|at least|not exceed)\b"), 0.6),
        (_rx(r"^\W*(?:each|every|all|no|the total|total)\b.{0,80}\b(?:must|can|cannot|should|is|are)\b"), 0.3),
        (_rx(r"\b(?:if|when|unless|only if)\b"), 0.3),
        (_rx(r"^\W*if\b|\b(?:can|may) (?:be|only)\b|\bis (?:allowed|incurred)\b"), 0.8),
        (_rx(r"\bno (?:earlier|later) than\b|\b(?:not |un)acceptable\b|\b(?:do|does|will) not\b|\bnever\b"), 0.8),
    ],
    "assumption": [
        (_rx(r"\b(?:assum\w*|suppos\w*|presum\w*)\b"), 2.5),
        (_rx(r"\b(?:is|are) (?:considered|treated as|regarded as|taken as)\b"), 1.5),
        (_rx(r"\b(?:unlimited|regardless of|any quantity|no longer|as given in|pre-?sorted|negligible|ignored?|"
             r"in parallel)\b"), 1.0),
        (_rx(r"^\W*(?:at the (?:start|beginning) of|initially)\b"), 0.6),
        (_rx(r"\b(?:is|are) (?:less|greater|smaller|larger) than\b"), 0.6),
    ],
    "data": [
        (re.compile(r"^[^:.]{2,80}:\s+\S"), 1.6),
        (re.compile(r"\d"), 0.5),
        (_rx(r"\b(?:costs?|prices?|profits?|revenue|wages?|rates?|capacity|demand|requires?|produces?|consumes?|"
             r"available|per)\b|[$£€¥%]"), 0.4),
        (_rx(r"^\W*there (?:is|are)\b|\bhas (?:a|an)?\s*(?:total|capacity)"), 0.4),
    ],
    "context": [
        (_rx(r"\b(?:i|we) (?:need|want|would like|am|are|have been|run|own|manage)\b|\bhelp (?:me|us)\b|"
             r"\bi'?m\b|\bour (?:company|firm|factory|team|business)\b"), 2.5),
        (_rx(r"\b(?:plan(?:ning)?|schedul\w+|decid\w+|creat\w+|help)\b"), 0.3),
    ],
}
"""Regex cue -> points for a kind. Weights set by hand and checked on OR-Clarify cases 1-50."""

PROTOTYPES: dict[str, list[str]] = {
    "context": [
        "I need help planning production for my bakery.",
        "We are a small logistics firm that wants a delivery schedule.",
        "I would like help deciding which projects to fund this year.",
        "Our company makes garden furniture and sells it to retailers.",
    ],
    "data": [
        "Unit profit: chairs $12, tables $30.",
        "Each machine provides 160 working hours per month.",
        "Storage cost is 3 dollars per unit per week.",
        "There are four warehouses and six retail shops.",
        "Available timber: 400 kg.",
        "Product B needs 2 hours of assembly and 1 hour of painting.",
    ],
    "constraint": [
        "Total machine hours used cannot exceed the available capacity.",
        "At least 20 units of product A must be made each week.",
        "Each order must be assigned to exactly one truck.",
        "If the second warehouse is opened, the third one must also be opened.",
        "The number of shifts must be a whole number.",
        "Demand in every period must be fully met.",
    ],
    "objective": [
        "Minimize the total operating cost.",
        "Maximize the overall profit of the plan.",
        "The goal is to keep total travel distance as short as possible.",
        "Find the schedule that finishes all jobs earliest.",
    ],
    "assumption": [
        "Assume that all trucks travel at the same speed.",
        "Items can be bought in any quantity.",
        "Production starts at the beginning of the first month.",
        "Setup times are negligible and can be ignored.",
        "Storage space in the depot is unlimited.",
    ],
}

_INLINE_LABEL = _rx(r"^\W*(objectives?|goals?|aim|constraints?|assumptions?)\s*:\s+\S")
"""``Objective: minimise cost.`` -- a unit that names its own section."""

EMBED_WEIGHT = 2.5
"""How much one unit of cosine similarity (max over a kind's prototypes) counts against one cue point."""
FIRST_CONTEXT_BONUS = 4.0
LATER_CONTEXT_PENALTY = 2.0
"""Context is the opening of a problem; later units need an explicit cue (``we are a company``) to be context."""
HINT_BONUS = 3.0
UNCUED_OBJECTIVE_PENALTY = 1.0
"""A problem states its objective with a verb such as minimise or determine; without one, objective is unlikely."""


def cue_scores(text: str, cues_by_kind: Mapping[str, Sequence[tuple[re.Pattern, float]]] = CUES,
               kinds: Sequence[str] = UNIT_KINDS) -> dict[str, float]:
    """Summed cue weights per kind (every one of ``kinds``, 0 without a cue) for one unit's text; by default the
    optimisation decomposer's cues (a unit domain passes its own table and kinds)."""
    return text_cue_scores(text, cues_by_kind, kinds)


@lru_cache(maxsize=1)
def _prototype_matrix() -> tuple[tuple[str, ...], np.ndarray]:
    from tasks.llm.embeddings import encode_prototypes

    return encode_prototypes(PROTOTYPES, UNIT_KINDS)


def similarities(texts: Sequence[str]) -> np.ndarray:
    """(n, len(UNIT_KINDS)): the best cosine similarity of each text to each kind's prototypes."""
    from tasks.llm.embeddings import encode

    if not texts:
        return np.zeros((0, len(UNIT_KINDS)), dtype=np.float32)
    labels, protos = _prototype_matrix()
    sims = encode(list(texts)) @ protos.T
    out = np.full((len(texts), len(UNIT_KINDS)), -1.0, dtype=np.float32)
    for col, label in enumerate(labels):
        k = UNIT_KINDS.index(label)
        out[:, k] = np.maximum(out[:, k], sims[:, col])
    return out


def classify(segments: Sequence[Segment], sims: np.ndarray) -> list[str]:
    """One kind per segment; ``sims`` has one row per segment (structured rows are ignored)."""
    kinds: list[str] = []
    for i, seg in enumerate(segments):
        if seg.structured:
            kinds.append("data")
            continue
        scores = cue_scores(seg.content)
        if scores["objective"] == 0.0:
            scores["objective"] -= UNCUED_OBJECTIVE_PENALTY
        for k, kind in enumerate(UNIT_KINDS):
            scores[kind] += EMBED_WEIGHT * float(sims[i, k])
        scores["context"] += FIRST_CONTEXT_BONUS if i == 0 else -LATER_CONTEXT_PENALTY
        label = _INLINE_LABEL.match(seg.content)
        hint = heading_kind(label.group(1)) if label else seg.hint
        if hint is not None:
            scores[hint] += HINT_BONUS
        kinds.append(max(UNIT_KINDS, key=lambda kind: scores[kind]))
    return kinds


def local_batch(inputs: Sequence[DecomposeInput]) -> list[DecomposeOutput]:
    """Segment every text, embed all prose segments in one call, then type them."""
    all_segments = [segment(inp.text) for inp in inputs]
    flat = [seg for segs in all_segments for seg in segs]
    prose = [i for i, seg in enumerate(flat) if not seg.structured]
    sims = np.zeros((len(flat), len(UNIT_KINDS)), dtype=np.float32)
    if prose:
        sims[prose] = similarities([flat[i].content for i in prose])
    outputs: list[DecomposeOutput] = []
    row = 0
    for segs in all_segments:
        kinds = classify(segs, sims[row : row + len(segs)])
        row += len(segs)
        outputs.append(DecomposeOutput(units=[
            DecomposedUnit(kind=kind, content=seg.content.strip()) for seg, kind in zip(segs, kinds, strict=True)
        ]))
    return outputs


def local(inp: DecomposeInput) -> DecomposeOutput:
    return local_batch([inp])[0]


SPEC = RoleSpec(name="decomposer", input_model=DecomposeInput, output_model=DecomposeOutput, local=local,
                local_batch=local_batch)
ROLES.add(SPEC.name, SPEC)

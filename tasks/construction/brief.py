"""Mask: choose which eligible units a case hides, and render the public brief from the visible units.

The choice is deterministic per (problem id, seed): either about ``fraction`` of the eligible units, at least
``min_hidden`` and at most ``max_hidden`` (:func:`choose_hidden`), or OR-Clarify's shape (:func:`choose_hidden_shaped`):
a number of slots drawn from a distribution (1-3, about 1.8 on average) and units drawn with weights that follow a
target severity mix (the published 75 P0 / 83 P1 / 20 P2).

The brief is written by the ``rewriter`` role. Its local backend joins the visible units in their original order:
consecutive one-line prose units form a paragraph, and a unit spanning several lines (a table, a list) stands as its
own paragraph. No marker or numbering shows where a unit was removed.
An LLM rewrite that reproduces a hidden unit verbatim is rejected in favour of the local join (see
``render_briefs``).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from tasks.llm.records import RoleConfig, RoleFailure
from tasks.records import Unit
from tasks.roles.base import RoleSpec, run_role
from tasks.roles.registry import ROLES
from tasks.text import normalise_ws


def choose_hidden(
    problem_id: str, seed: int, eligible_ids: Sequence[str], *, fraction: float, min_hidden: int, max_hidden: int
) -> list[str]:
    """The hidden unit ids, in the order the eligible ids were given (the units' order)."""
    if not eligible_ids:
        return []
    want = round(fraction * len(eligible_ids))
    k = max(min_hidden, min(max_hidden, want, len(eligible_ids)))
    k = min(k, len(eligible_ids))
    picked = set(random.Random(f"{problem_id}:{seed}").sample(list(eligible_ids), k))
    return [u for u in eligible_ids if u in picked]


def choose_hidden_shaped(
    problem_id: str, seed: int, eligible: Sequence[tuple[str, str]], *, counts: dict[int, float],
    severity_mix: dict[str, float], min_hidden: int, max_hidden: int,
) -> list[str]:
    """The hidden unit ids, in the given order, for ``eligible`` ``(unit id, estimated severity)`` pairs.

    The number of slots is drawn from ``counts`` (slots -> probability), clipped to ``[min_hidden, max_hidden]`` and
    to the candidates. Units are then drawn one at a time without replacement: a severity class is picked with
    probability proportional to its ``severity_mix`` share among the classes still available, then a unit of that
    class uniformly, so across many problems the hidden slots follow the mix wherever the candidates allow it.
    """
    if not eligible:
        return []
    rng = random.Random(f"{problem_id}:{seed}:shape")
    sizes = sorted(counts)
    want = rng.choices(sizes, weights=[counts[n] for n in sizes])[0]
    k = min(max(min_hidden, min(max_hidden, want)), len(eligible))
    pool = list(eligible)
    picked: set[str] = set()
    for _ in range(k):
        classes = sorted({sev for _, sev in pool})
        weights = [severity_mix.get(c, 0.0) for c in classes]
        if sum(weights) <= 0:
            weights = [1.0] * len(classes)
        cls = rng.choices(classes, weights=weights)[0]
        uid = rng.choice([u for u, sev in pool if sev == cls])
        picked.add(uid)
        pool = [(u, sev) for u, sev in pool if u != uid]
    return [u for u, _ in eligible if u in picked]


class RewriteInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    problem_id: str = ""
    units: list[Unit] = Field(description="The visible units, in order; the brief must state all of them.")


class RewriteOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    brief: str = Field(min_length=1, description="The public brief, in the stakeholder's voice, no gap markers.")


def _is_block(content: str) -> bool:
    return "\n" in content.strip()


def join_units(units: Sequence[Unit]) -> str:
    paragraphs: list[str] = []
    current: list[str] = []
    for unit in units:
        text = unit.content.strip()
        if _is_block(text):
            if current:
                paragraphs.append(" ".join(current))
                current = []
            paragraphs.append(text)
        else:
            current.append(text)
    if current:
        paragraphs.append(" ".join(current))
    return "\n\n".join(paragraphs)


def local(inp: RewriteInput) -> RewriteOutput:
    return RewriteOutput(brief=join_units(inp.units) or "(no visible details)")


SPEC = RoleSpec(name="rewriter", input_model=RewriteInput, output_model=RewriteOutput, local=local)
ROLES.add(SPEC.name, SPEC)


def leaked_units(brief: str, hidden: Sequence[Unit]) -> list[str]:
    """Ids of hidden units whose content appears verbatim (whitespace-normalised) in the brief."""
    norm = normalise_ws(brief)
    return [u.id for u in hidden if normalise_ws(u.content) in norm]


def render_briefs(
    requests: Sequence[tuple[RewriteInput, list[Unit]]], cfg: RoleConfig, *, client=None
) -> tuple[list[str], dict[str, int]]:
    """A brief per (visible units, hidden units) request, plus counts of LLM failures and leak fallbacks."""
    outputs = run_role(SPEC, [inp for inp, _ in requests], cfg, client=client)
    briefs: list[str] = []
    notes = {"rewriter_failures": 0, "rewriter_leak_fallbacks": 0}
    for (inp, hidden), out in zip(requests, outputs):
        if isinstance(out, RoleFailure):
            notes["rewriter_failures"] += 1
            out = local(inp)
        elif cfg.backend == "llm" and leaked_units(out.brief, hidden):
            notes["rewriter_leak_fallbacks"] += 1
            out = local(inp)
        briefs.append(out.brief)
    return briefs, notes

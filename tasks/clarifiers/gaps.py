"""The gap-inventory protocol: formulation gaps a brief leaves open, as specific questions an agent may ask.

This is what the local (offline) agent backends ask from. A domain brings its own inventory (``Domain.gap_inventory``,
see ``tasks/domains/api.py``): a :class:`GapInventory` turns a public brief into :class:`GapCandidate` gaps (one
InterOPT gap category each, :data:`GAP_CATEGORIES`, or-clarify.md §6.1) and :class:`BriefFacts`. The optimisation
inventory is ``tasks.domains.optimization.gaps.OPTIMIZATION``, the analytics one ``tasks.domains.analytics.gaps``.
An evaluation hands its domain's inventory down (``DomainContext.gaps``, in ``MethodContext.domain``), and every
local agent backend asks from the inventory it is given, so it asks the questions of the domain it is playing in.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from tasks.episodes.records import TranscriptRow

GAP_CATEGORIES = ("objective", "decision_scope", "constraint_set", "time_boundary", "entity_relation",
                  "hard_soft_policy")


class GapCandidate(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str
    """Stable identity of the gap (category + subject), used to de-duplicate across turns."""
    category: str
    description: str
    evidence_quote: str
    question: str
    options: dict[str, str]
    """Three mutually exclusive business hypotheses keyed A, B, C."""
    priority: int
    """Lower asks first."""


class BriefFacts(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    entities: list[str]
    time_unit: str | None
    has_objective: bool
    objective_hint: str
    """``cost``, ``profit``, ``time`` or ``output``: what the brief's numbers suggest the goal is about."""
    has_demand: bool
    has_demand_policy: bool
    mentions_integrality: bool
    groups: list[list[str]] = []
    """Entities listed together (one table's rows, one enumeration, one family of numbered names), largest first."""


class GapInventory(Protocol):
    """What the local agent backends ask from, per domain (``Domain.gap_inventory``)."""

    name: str

    def gaps(self, brief: str) -> Sequence[GapCandidate]:
        """Every gap the brief leaves open, most important first; each ``category`` is one of
        :data:`GAP_CATEGORIES` (the InterOPT ledger categories that rank and group the questions)."""
        ...

    def facts(self, brief: str) -> BriefFacts:
        """The brief's entities, time unit and cues (summaries and the ORPilot interview read them)."""
        ...

    def interview(self, brief: str) -> list[str] | None:
        """ORPilot's fixed interview for this domain, or None for the optimisation interview."""
        ...

    goal_placeholder: str
    """What a summary says while the goal is unconfirmed ("what the plan should optimise")."""

    def goal(self, brief: str) -> str:
        """The brief's sentence that states the goal (at most 200 characters), "" when none does."""
        ...


def all_gaps(inventory: GapInventory, brief: str) -> list[GapCandidate]:
    """Every gap the brief leaves open, most important first (a fresh list; the gaps are frozen records)."""
    return list(inventory.gaps(brief))


def asked_keys(transcript: Sequence[TranscriptRow], gaps: Sequence[GapCandidate]) -> set[str]:
    """Keys of the gaps whose question already appears among the agent's messages."""
    asked = " ".join(r.content for r in transcript if r.speaker == "agent")
    return {g.key for g in gaps if g.question in asked}


def open_gaps(inventory: GapInventory, brief: str, transcript: Sequence[TranscriptRow] = ()) -> list[GapCandidate]:
    """The gaps not yet asked about, most important first."""
    gaps = all_gaps(inventory, brief)
    done = asked_keys(transcript, gaps)
    return [g for g in gaps if g.key not in done]

"""The domain an episode evaluation plays in, as the layers below the domains see it: :class:`DomainContext` (its
judge hints and its gap inventory) and the gap-inventory protocol.

The gap-inventory protocol: formulation gaps a brief leaves open, as specific questions an agent may ask. This is
what the local (offline) agent backends ask from. A domain brings its own inventory (``Domain.gap_inventory``, see
``tasks/domains/api.py``): a :class:`GapInventory` turns a public brief into :class:`GapCandidate` gaps (one InterOPT
gap category each, :data:`GAP_CATEGORIES`, or-clarify.md §6.1) and :class:`BriefFacts`. The optimisation inventory
is ``tasks.domains.optimization.gaps.OPTIMIZATION``, the analytics one ``tasks.domains.analytics.gaps``. An
evaluation hands its domain's inventory down (``DomainContext.gaps``, in ``MethodContext.domain``), and every local
agent backend asks from the inventory it is given, so it asks the questions of the domain it is playing in (the
helpers that read a transcript, ``open_gaps`` and ``asked_keys``, are ``tasks.clarifiers.gaps``).

Below the roles, the episodes, construction and the domains, so that each of them imports these records from here
and none reaches up into the domains or the clarifiers for them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from pydantic import BaseModel, ConfigDict

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


@dataclass(frozen=True)
class JudgeHints:
    """How the judges (and reports) should read this domain's cases."""

    subject: str
    """What the brief is, e.g. "an optimisation problem" (LLM judge prompts say "... about {subject}")."""
    deliverable: str
    """What the agent builds once READY, e.g. "an optimisation model" or "a SQL query"."""
    core: str = ""
    """What makes a slot core (P0/P1) in this domain, in one sentence."""
    analyst: str = "an analyst"
    """Who interviews the user, e.g. "an operations-research analyst" (agent and simulated-user prompts)."""


@dataclass(frozen=True)
class DomainContext:
    """The domain one episode evaluation plays in, as one value: built once where the evaluation starts
    (:func:`tasks.domains.domain_context`) and handed down to the episode loop, the methods (``MethodContext.domain``)
    and every role call they make.

    Every role prompt sees ``hints`` as ``domain`` (``{{ domain.analyst }}``, ``{{ domain.subject }}``,
    ``{{ domain.deliverable }}``), so the agents, the simulated user and the judges of an analytics episode talk about
    a data-analysis request, not an optimisation model."""

    name: str
    hints: JudgeHints
    gaps: GapInventory
    """What the local agent backends ask from."""
    user_aspects: Mapping[str, tuple[str, ...]] = field(default_factory=dict, hash=False)
    """``Domain.user_aspects``: per unit kind, how questions about it are put (the simulated user's matching)."""

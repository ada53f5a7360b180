"""EVPI: a value-of-information questioner beside InterOPT (docs/personas.md, "EVPI questioner").

After SAGE-Agent's idea (choose the question with the highest expected value of perfect information), in our own
simple form. The agent keeps a belief over each open gap's candidate values: the three hypotheses A/B/C its gap
inventory offers (``GapCandidate.options``, the same public inventory every local agent asks from), plus "none of
these". Per gap:

    value(gap) = P(current best guess is wrong) x weight(gap category) x P(the user answers informatively)

where P(best guess wrong) = 1 - max belief, the weights are the method's ``weights`` option (by gap category) and
P(informative) is a Laplace estimate from the answers to this gap so far (a user who keeps saying "I don't know"
makes asking worth less). The agent asks the gap with the highest value and declares READY_TO_MODEL as soon as the
highest value falls below ``question_cost``: a real cost trade-off, not a question cap (``max_turns`` still ends an
episode, as for every method).

Belief updates: an option pick (or an Open reply that states something) sets the picked value's probability to
``answer_reliability``; a D comment moves the mass to "none of these" likewise; a non-answer leaves the belief as
it was. When a later reply to the same gap picks another value (a user who corrects an earlier answer), the agent
records a ``contradiction`` event and the belief drops back to an even split between the two values, so the gap is
worth asking again.

The agent reads only the public brief and transcript; it never calls a role, so it runs the same under every
backend (with an LLM backend the hypotheses still come from the local gap inventory, a departure from the issue's
"hypotheses sampled from the agent role"; docs/personas.md says so).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from tasks.clarifiers import alignment
from tasks.clarifiers.base import BaseAgent, MethodContext, method
from tasks.clarifiers.freeqa import parse_options, ready_summary
from tasks.clarifiers.gaps import all_gaps
from tasks.domain_context import GapCandidate
from tasks.episodes.records import AgentAction, AgentView, Protocol, TranscriptRow

NONE_OF_THESE = "D"


class EvpiOptions(BaseModel):
    """``evaluate.<domain>.methods[].options`` of an ``evpi`` row."""

    model_config = ConfigDict(extra="forbid")

    question_cost: float = Field(default=0.5, ge=0.0)
    """The cost of one question, in the units of the gap weights; the agent stops once no gap is worth more."""
    weights: dict[str, float] = {"objective": 3.0, "constraint_set": 2.0, "hard_soft_policy": 2.0,
                                 "decision_scope": 2.0, "time_boundary": 1.0, "entity_relation": 1.0}
    """Value of getting each gap category right (a category not listed: ``default_weight``)."""
    default_weight: float = Field(default=1.0, ge=0.0)
    prior_lead: float = Field(default=0.4, gt=0.0, lt=1.0)
    """Prior probability of the inventory's first hypothesis; the rest is split evenly over B, C and "none"."""
    answer_reliability: float = Field(default=0.9, gt=0.0, le=1.0)
    """Belief in a value the user stated."""


@dataclass
class GapBelief:
    gap: GapCandidate
    probs: dict[str, float]
    asks: int = 0
    answers: int = 0
    stated: str | None = None

    def wrong(self) -> float:
        return 1.0 - max(self.probs.values())

    def informative(self) -> float:
        return (self.answers + 1) / (self.asks + 2)


def prior(options: EvpiOptions) -> dict[str, float]:
    rest = (1.0 - options.prior_lead) / 3
    return {"A": options.prior_lead, "B": rest, "C": rest, NONE_OF_THESE: rest}


def value(belief: GapBelief, options: EvpiOptions) -> float:
    weight = options.weights.get(belief.gap.category, options.default_weight)
    return belief.wrong() * weight * belief.informative()


def settle(belief: GapBelief, picked: str, options: EvpiOptions) -> bool:
    """Set the belief to the stated value; True when it contradicts an earlier stated value."""
    contradiction = belief.stated is not None and belief.stated != picked
    belief.answers += 1
    if contradiction:
        belief.probs = dict.fromkeys(belief.probs, 0.0) | {belief.stated: 0.5, picked: 0.5}
    else:
        others = (1.0 - options.answer_reliability) / (len(belief.probs) - 1)
        belief.probs = {k: (options.answer_reliability if k == picked else others) for k in belief.probs}
    belief.stated = picked
    return contradiction


def _open_pick(reply: str, previous: str | None, earlier: Sequence[str]) -> str:
    """Open protocol: a stated reply is "A" (the stated value) unless it differs from an earlier stated reply."""
    _, text = alignment.reply_text(reply)
    if previous is None or not earlier:
        return "A"
    return previous if text.strip().lower() == earlier[-1].strip().lower() else ("B" if previous != "B" else "C")


@dataclass
class EvpiAgent(BaseAgent):
    options: EvpiOptions
    ctx: MethodContext
    beliefs: dict[str, GapBelief] = field(default_factory=dict)
    last: str | None = None
    replies: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        BaseAgent.__init__(self)

    def _read(self, transcript: Sequence[TranscriptRow], protocol: Protocol) -> dict[str, Any] | None:
        """Update the belief of the gap just asked from the user's last reply."""
        if self.last is None or not transcript or transcript[-1].speaker != "user":
            return None
        belief = self.beliefs[self.last]
        reply = transcript[-1].content
        picked, text = alignment.reply_text(reply)
        if protocol != "open" and picked is None and alignment.D_REPLY.search(reply) is None:
            return {"event": "answer", "gap_key": self.last, "informative": False}
        if picked is None and protocol == "open":
            if alignment.is_non_answer(text):
                return {"event": "answer", "gap_key": self.last, "informative": False}
            picked = _open_pick(reply, belief.stated, self.replies.get(self.last, []))
            self.replies.setdefault(self.last, []).append(text)
        elif picked is None:
            picked = NONE_OF_THESE
        contradiction = settle(belief, picked, self.options)
        if contradiction:
            self.bump("contradictions")
        return {"event": "contradiction" if contradiction else "answer", "gap_key": self.last, "informative": True,
                "value": picked}

    def act(self, view: AgentView) -> AgentAction:
        if not self.beliefs:
            self.beliefs = {g.key: GapBelief(g, prior(self.options)) for g in all_gaps(self.ctx.domain.gaps,
                                                                                        view.brief)}
        events = [e for e in [self._read(view.transcript, view.protocol)] if e]
        ranked = sorted(self.beliefs.values(), key=lambda b: (-value(b, self.options), b.gap.priority))
        best = ranked[0] if ranked else None
        best_value = value(best, self.options) if best else 0.0
        too_dear = best is None or best_value < self.options.question_cost
        if too_dear or view.turn >= view.max_turns:
            self.bump("stopped_by_cost" if too_dear else "stopped_by_cap")
            return AgentAction(kind="ready", summary=ready_summary(view.brief, view.transcript),
                               events=events + [{"event": "ready", "best_value": round(best_value, 4),
                                                 "question_cost": self.options.question_cost}])
        best.asks += 1
        self.last = best.gap.key
        options = dict(best.gap.options) if view.protocol != "open" else {}
        return AgentAction(kind="ask", question=best.gap.question, options=options,
                           events=events + [{"event": "question", "gap_key": best.gap.key,
                                             "value": round(best_value, 4), "wrong": round(best.wrong(), 4)}])


@dataclass
class EvpiMethod:
    name: str
    options: EvpiOptions
    protocols: tuple[Protocol, ...] = ("open", "mc", "mc_d")
    uses_detector: bool = True

    def new_agent(self, case_id: str, brief: str, protocol: Protocol, *, seed: int, ctx: MethodContext) -> EvpiAgent:
        return EvpiAgent(options=self.options, ctx=ctx)


@method("evpi")
def evpi(name: str, options: dict[str, Any]) -> EvpiMethod:
    return EvpiMethod(name=name, options=parse_options(name, options, EvpiOptions))

"""ReadyGate (MC-D): the MC-D agent plus an independent stopping reviewer (or-clarify.md §8).

When the inner agent declares READY_TO_MODEL, the reviewer (role ``or_ready_gate``) sees only the brief, the public
transcript and the READY summary and answers PASS or BLOCK with feedback of at most 500 words. PASS accepts the stop.
BLOCK sends the feedback privately to the inner agent (``AgentView.private_feedback``, never the transcript) and
asks it again in the same turn. A reviewer that fails for good counts as PASS.

Caps (our choice; the paper leaves a maximum open): at most ``max_blocks_per_turn`` BLOCKs per turn (default 2),
after which the inner agent's READY stands, and optionally ``max_blocks_total`` per episode (default: none, so the
turn limit bounds it). The feedback accumulates: the inner agent sees every earlier BLOCK note on later turns too.

Local reviewer: BLOCK while the brief's gap inventory still holds an unasked objective, hard/soft policy or
constraint gap, naming that gap and the question that would settle it; otherwise PASS.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tasks.clarifiers.base import BaseAgent, MethodContext, method
from tasks.clarifiers.choice import ChoiceAgent
from tasks.clarifiers.freeqa import parse_options
from tasks.clarifiers.gaps import open_gaps
from tasks.domain_context import DomainContext
from tasks.episodes.records import AgentAction, AgentView, Protocol, TranscriptRow
from tasks.llm.records import RoleFailure
from tasks.roles.base import RoleSpec
from tasks.roles.registry import ROLES

EVENT_LOG = "counterfactual_ready_gate_events"
MAX_FEEDBACK_WORDS = 500
BLOCKING_CATEGORIES = ("objective", "hard_soft_policy", "constraint_set")


class GateInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    brief: str
    transcript: list[TranscriptRow] = []
    summary: str = Field(description="The agent's READY_TO_MODEL summary under review.")


class GateOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    decision: Literal["PASS", "BLOCK"]
    feedback: str = Field(default="", description="With BLOCK: what is still open and what to ask (at most 500 "
                                                  "words). May be empty with PASS.")

    @field_validator("feedback")
    @classmethod
    def _at_most_500_words(cls, text: str) -> str:
        words = text.split()
        return text if len(words) <= MAX_FEEDBACK_WORDS else " ".join(words[:MAX_FEEDBACK_WORDS])

    @model_validator(mode="after")
    def _block_explains(self) -> GateOutput:
        if self.decision == "BLOCK" and not self.feedback.strip():
            raise ValueError("BLOCK needs feedback")
        return self


def gate_local(inp: GateInput, domain: DomainContext) -> GateOutput:
    pending = [g for g in open_gaps(domain.gaps, inp.brief, inp.transcript) if g.category in BLOCKING_CATEGORIES]
    if not pending:
        return GateOutput(decision="PASS", feedback="No unasked objective, policy or constraint point is left.")
    gap = pending[0]
    return GateOutput(decision="BLOCK", feedback=f"Not ready yet. {gap.description} The answer could change the "
                                                 f"model. Ask before stopping: {gap.question}")


SPEC = RoleSpec(name="or_ready_gate", input_model=GateInput, output_model=GateOutput, local=gate_local,
                reads_domain=True)
ROLES.add(SPEC.name, SPEC)


class GateOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_blocks_per_turn: int = Field(default=2, ge=0)
    max_blocks_total: int | None = Field(default=None, ge=0)


class ReadyGateAgent(BaseAgent):
    def __init__(self, inner: ChoiceAgent, ctx: MethodContext, options: GateOptions):
        super().__init__()
        self.inner = inner
        self.ctx = ctx
        self.options = options
        self.feedback: list[str] = []
        self.blocks = 0

    def _may_block(self, this_turn: int) -> bool:
        total = self.options.max_blocks_total
        return this_turn < self.options.max_blocks_per_turn and (total is None or self.blocks < total)

    def act(self, view: AgentView) -> AgentAction:
        this_turn = 0
        events: list[dict[str, Any]] = []
        while True:
            seen = view.model_copy(update={"private_feedback": list(view.private_feedback) + self.feedback})
            action = self.inner.act(seen)
            events += action.events
            if action.kind != "ready":
                return action.model_copy(update={"events": events})
            if not self._may_block(this_turn):
                if this_turn:
                    self.bump("ready_gate_cap_reached")
                    events.append({"event": "ready_gate_cap_reached", "blocks_this_turn": this_turn})
                return action.model_copy(update={"events": events})
            review = self.ctx.run_one(SPEC, GateInput(brief=view.brief, transcript=list(view.transcript),
                                                      summary=action.summary))
            self.bump("ready_gate_calls")
            failed = isinstance(review, RoleFailure)
            decision = "PASS" if failed else review.decision
            record = {"turn": view.turn, "attempt": this_turn + 1, "decision": decision,
                      "feedback": "" if failed else review.feedback, "summary": action.summary,
                      "reviewer_failure": review.message if failed else None}
            self.log(EVENT_LOG, record)
            events.append({"event": "ready_gate", "decision": decision, "reviewer_failure": failed})
            if failed:
                self.bump("ready_gate_failures")
            if decision == "PASS":
                return action.model_copy(update={"events": events})
            self.bump("ready_gate_blocks")
            self.blocks += 1
            this_turn += 1
            self.feedback.append(review.feedback)

    def counters(self) -> dict[str, float]:
        merged = dict(self.inner.counters())
        merged.update(super().counters())
        merged.setdefault("ready_gate_calls", 0)
        merged.setdefault("ready_gate_blocks", 0)
        return merged

    def event_logs(self) -> dict[str, list[dict]]:
        logs = self.inner.event_logs()
        logs.update(super().event_logs())
        logs.setdefault(EVENT_LOG, [])
        return logs


@dataclass
class ReadyGate:
    name: str
    options: GateOptions
    protocols: tuple[Protocol, ...] = ("mc_d",)
    uses_detector: bool = True

    def new_agent(self, case_id: str, brief: str, protocol: Protocol, *, seed: int,
                  ctx: MethodContext) -> ReadyGateAgent:
        return ReadyGateAgent(ChoiceAgent(brief, protocol, ctx), ctx, self.options)


@method("readygate")
def readygate(name: str, options: dict[str, Any]) -> ReadyGate:
    return ReadyGate(name=name, options=parse_options(name, options, GateOptions))

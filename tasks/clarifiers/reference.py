"""Reference methods for tests and the sanity ladder (each declares itself a reference row where it registers:
their results are reported apart from the ranked methods, never ranked with them).

- ``oracle`` (privileged: it is bound to the cases and reads their hidden slots): asks each hidden slot's first
  reference question, one per turn in slot order, then declares READY. Under MC / MC-D each question carries the
  simulator's answer and two distractors as options A/B/C (the answer's position drawn from the episode seed).
  It bounds what the loop, the simulated user and the judge can credit.
- ``ready_now`` (a bound): declares READY_TO_MODEL at turn 1 with the brief as its summary (a floor: every slot
  is missed).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tasks.clarifiers.base import BaseAgent, MethodContext, method
from tasks.clarifiers.freeqa import NoOptions, parse_options, ready_summary
from tasks.episodes.records import PROTOCOLS, AgentAction, AgentView, Protocol
from tasks.records import Case, HiddenSlot, MethodReference
from tasks.roles.slot_hit import humanise

DISTRACTORS = (
    "There is no rule about this; the plan is free to choose.",
    "This is already fully covered by the request as written.",
)


def reference_question(slot: HiddenSlot) -> str:
    if slot.reference_questions and slot.reference_questions[0].strip():
        return slot.reference_questions[0].strip()
    return f"What should the plan assume about {humanise(slot.name)}?"


def reference_options(slot: HiddenSlot, rng: random.Random) -> dict[str, str]:
    texts = list(DISTRACTORS)
    texts.insert(rng.randrange(3), slot.simulator_answer.strip())
    return dict(zip("ABC", texts))


class OracleAgent(BaseAgent):
    def __init__(self, case: Case, protocol: Protocol, seed: int):
        super().__init__()
        self.slots = list(case.hidden_slots)
        self.protocol = protocol
        self.rng = random.Random(seed)
        self.next = 0

    def act(self, view: AgentView) -> AgentAction:
        if self.next >= len(self.slots) or view.turn >= view.max_turns:
            return AgentAction(kind="ready", summary=ready_summary(view.brief, view.transcript),
                               events=[{"event": "ready", "slots_asked": self.next}])
        slot = self.slots[self.next]
        self.next += 1
        options = reference_options(slot, self.rng) if self.protocol != "open" else {}
        return AgentAction(kind="ask", question=reference_question(slot), options=options,
                           events=[{"event": "question", "slot_id": slot.slot_id}])


@dataclass
class Oracle:
    name: str
    protocols: tuple[Protocol, ...] = PROTOCOLS
    uses_detector: bool = True
    cases: dict[str, Case] = field(default_factory=dict)

    def bind_cases(self, cases: Mapping[str, Case]) -> None:
        self.cases.update(cases)

    def new_agent(self, case_id: str, brief: str, protocol: Protocol, *, seed: int, ctx: MethodContext) -> OracleAgent:
        if case_id not in self.cases:
            raise KeyError(f"oracle method {self.name!r} is not bound to case {case_id!r} (call bind_cases first)")
        return OracleAgent(self.cases[case_id], protocol, seed)


class ReadyNowAgent(BaseAgent):
    def act(self, view: AgentView) -> AgentAction:
        return AgentAction(kind="ready", summary=view.brief.strip(), events=[{"event": "ready"}])


@dataclass
class ReadyNow:
    name: str
    protocols: tuple[Protocol, ...] = PROTOCOLS
    uses_detector: bool = True

    def new_agent(self, case_id: str, brief: str, protocol: Protocol, *, seed: int,
                  ctx: MethodContext) -> ReadyNowAgent:
        return ReadyNowAgent()


@method("oracle", reference=MethodReference(
    kind="privileged", reads="the hidden slots: asks each slot's reference question (under MC / MC-D with the "
    "simulator's answer as an option)"))
def oracle(name: str, options: dict[str, Any]) -> Oracle:
    parse_options(name, options, NoOptions)
    return Oracle(name=name)


@method("ready_now", reference=MethodReference(
    kind="bound", reads="nothing: declares READY at turn 1 with the brief as its summary (the floor)"))
def ready_now(name: str, options: dict[str, Any]) -> ReadyNow:
    parse_options(name, options, NoOptions)
    return ReadyNow(name=name)

"""ORPilot-style interview adapter (Open protocol; an external baseline, or-clarify.md §8).

Only ORPilot's interview stage: one focused question at a time about the objective, the decisions, the constraints,
the parameters and indices, and whether distinct entity types stay separate; never a question for numbers or data.
Before stopping it asks one final confirmation question that states its understanding; ``[INTERVIEW_COMPLETE]`` (or
``READY_TO_MODEL``) then ends the interview. No detector: each question turn counts as one atomic question.

The role ``or_orpilot_agent`` returns raw text (``{message}``), normalised here the way the external adapters are:
a JSON ASK/READY object, a ``READY_TO_MODEL`` prefix, a ``QUESTION:`` prefix, ``[INTERVIEW_COMPLETE]``, or any text
with a "?" as a question; anything else is ``agent_format_invalid``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from tasks.clarifiers.base import BaseAgent, MethodContext, method
from tasks.clarifiers.freeqa import (
    AgentInput,
    NoOptions,
    exchanges,
    parse_options,
    request_statement,
    run_agent_role,
    view_fields,
)
from tasks.domain_context import DomainContext, GapInventory
from tasks.domains.optimization.gaps import OBJECTIVE_CUE
from tasks.episodes.records import READY_MARKER, AgentAction, AgentView, Protocol
from tasks.roles.base import RoleSpec
from tasks.roles.registry import ROLES

COMPLETE_MARKER = "[INTERVIEW_COMPLETE]"
CONFIRMATION_OPENING = "To confirm my understanding before I build the model"
QUESTION_PREFIX = re.compile(r"^\s*QUESTION\s*[:：]\s*", re.I)
READY_PREFIX = re.compile(r"^\s*\**\s*READY[_ ]TO[_ ]MODEL\b\**\s*[:：\-]?\s*", re.I)
ASK_ACTIONS = {"ask", "question", "ask_question", "clarify"}
READY_ACTIONS = {"ready", "ready_to_model", "complete", "interview_complete", "done"}


class OrpilotOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    message: str = Field(description="Your whole reply: 'QUESTION: <one question>' or '[INTERVIEW_COMPLETE]' "
                                     "followed by your summary.")


def normalise(message: str) -> AgentAction:
    """An external adapter's raw reply as an episode action."""
    text = message.strip()
    if text.startswith("{"):
        try:
            payload = json.loads(text)
        except json.JSONDecodeError:
            payload = None
        if isinstance(payload, dict):
            kind = str(payload.get("action") or payload.get("type") or "").strip().lower()
            if kind in ASK_ACTIONS and str(payload.get("question") or "").strip():
                return AgentAction(kind="ask", question=str(payload["question"]).strip(), atomic_questions=1, raw=text)
            if kind in READY_ACTIONS or kind == READY_MARKER.lower():
                summary = str(payload.get("summary") or payload.get("message") or "").strip()
                return AgentAction(kind="ready", summary=summary, raw=text)
    if READY_PREFIX.match(text):
        return AgentAction(kind="ready", summary=READY_PREFIX.sub("", text, count=1).strip(), raw=text)
    if QUESTION_PREFIX.match(text):
        question = QUESTION_PREFIX.sub("", text, count=1).strip()
        if question:
            return AgentAction(kind="ask", question=question, atomic_questions=1, raw=text)
    if COMPLETE_MARKER in text:
        return AgentAction(kind="ready", summary=text.replace(COMPLETE_MARKER, "").strip(), raw=text)
    if "?" in text:
        return AgentAction(kind="ask", question=text, atomic_questions=1, raw=text)
    return AgentAction(kind="invalid", failure="agent_format_invalid", raw=text or "(empty reply)")


# ---- local backend: the interview plan from the brief -------------------------------------------------------------


def _listing(names: list[str]) -> str:
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def _objective_sentence(brief: str) -> str:
    for sentence in re.split(r"(?<=[.!?])\s+|\n+", brief):
        if OBJECTIVE_CUE.search(sentence) and not sentence.lstrip().startswith("|"):
            return sentence.strip()
    return ""


def interview_plan(inventory: GapInventory, brief: str) -> list[str]:
    """The questions of the interview, in ORPilot's order, built from the brief's own entities.

    Each is one sentence ending in "?" (no colon or full stop inside), so the whole question stays one unit for
    the simulated user. A domain's gap inventory may bring its own interview (``GapInventory.interview``).
    """
    own = inventory.interview(brief)
    if own:
        return list(own)
    facts = inventory.facts(brief)
    items = facts.entities[:3]
    things = _listing(items) if items else "the items in the request"
    stated = _objective_sentence(brief).rstrip(" .!")
    plan = [
        f"Besides the goal the request states ({stated}), is there a second goal or a tradeoff the plan must weigh?"
        if stated else
        "What single result should the plan optimise, for example the lowest total cost or the highest profit?",
        (f"Which decisions should the plan make about {things}, for example how much of each to use or whether to "
         f"use each one at all?"),
        (f"Beyond what the request already says, is there a rule the plan must never break, such as a limit, a "
         f"minimum level or a combination of {things} that is not allowed?"),
    ]
    dims = [f"each {facts.time_unit}"] if facts.time_unit else []
    if items:
        dims.append(f"each of {things}" if len(items) > 1 else f"each {items[0]}")
    plan.append(f"Should the plan be broken down by {' and by '.join(dims)}, or by some other dimension the request "
                f"does not mention?" if dims else
                "Along which dimensions should the plan be broken down, for example per period, per site or per "
                "product?")
    if len(items) >= 2:
        plan.append(f"Should {items[0]} and {items[1]} be planned as separate items with their own rules, or can "
                    f"they be treated as one group?")
    return plan


def understanding(inventory: GapInventory, brief: str, inp: AgentInput) -> str:
    facts = inventory.facts(brief)
    parts = [f"the request reads \"{request_statement(brief, 240).rstrip(' .')}\""]
    if facts.entities:
        parts.append(f"the plan covers {_listing(facts.entities[:4])}")
    learnt = [e.reply.rstrip(".") for e in exchanges(inp.transcript)
              if not e.non_answer and not e.question.startswith(CONFIRMATION_OPENING)]
    if learnt:
        parts.append("you also told me: " + "; ".join(learnt))
    return "; ".join(p.rstrip(" .") for p in parts)


def orpilot_local(inp: AgentInput, domain: DomainContext) -> OrpilotOutput:
    asked = [e.question for e in exchanges(inp.transcript)]
    if any(q.startswith(CONFIRMATION_OPENING) for q in asked) or inp.turn >= inp.max_turns:
        return OrpilotOutput(message=f"{COMPLETE_MARKER}\nInterview summary: "
                                     f"{understanding(domain.gaps, inp.brief, inp)}.")
    plan = interview_plan(domain.gaps, inp.brief)
    if len(asked) >= len(plan) or inp.turn >= inp.max_turns - 1:
        return OrpilotOutput(message=f"QUESTION: {CONFIRMATION_OPENING}: {understanding(domain.gaps, inp.brief, inp)}. "
                                     f"Is this understanding correct and complete?")
    return OrpilotOutput(message=f"QUESTION: {plan[len(asked)]}")


SPEC = RoleSpec(name="or_orpilot_agent", input_model=AgentInput, output_model=OrpilotOutput, local=orpilot_local,
                reads_domain=True)
ROLES.add(SPEC.name, SPEC)


# ---- the method ---------------------------------------------------------------------------------------------------


CONFIRMATION_CUE = re.compile(r"\b(confirm|my understanding|to summari[sz]e|summary)\b", re.I)


class OrpilotAgent(BaseAgent):
    def __init__(self, ctx: MethodContext):
        super().__init__()
        self.ctx = ctx
        self.last_question = ""

    def act(self, view: AgentView) -> AgentAction:
        out = run_agent_role(self, self.ctx, SPEC, AgentInput(**view_fields(view)))
        if isinstance(out, AgentAction):
            return out
        action = normalise(out.message)
        event: dict[str, Any] = {"event": action.kind}
        if action.kind == "ready":
            confirmed = bool(CONFIRMATION_CUE.search(self.last_question))
            event["confirmation_asked"] = confirmed
            if not confirmed:
                self.bump("orpilot_ready_without_confirmation")
        elif action.kind == "ask":
            self.last_question = action.question
        else:
            self.bump("agent_format_invalid")
        return action.model_copy(update={"events": [event]})


@dataclass
class Orpilot:
    name: str
    protocols: tuple[Protocol, ...] = ("open",)
    uses_detector: bool = False

    def new_agent(self, case_id: str, brief: str, protocol: Protocol, *, seed: int, ctx: MethodContext) -> OrpilotAgent:
        return OrpilotAgent(ctx)


@method("orpilot")
def orpilot(name: str, options: dict[str, Any]) -> Orpilot:
    parse_options(name, options, NoOptions)
    return Orpilot(name=name)

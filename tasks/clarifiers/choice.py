"""MC and MC-D (Choice protocols): a generic agent that asks each question with exactly three options A/B/C.

Under MC the simulated user must pick one of them; under MC-D the loop also offers the fixed option D for a
free-text correction (or-clarify.md §2.2, §8). The one model call is the role ``or_choice_agent``. Its record's
validation keeps ``options`` open on purpose: an answer with other than three distinct options A/B/C, or with an
"other" option of its own, is the agent's format error (``agent_format_invalid``), not a reason to regenerate. The
schema a model is sent is the closed A/B/C object (strict structured output refuses open maps).

Local backend: the brief's gap inventory in priority order, one gap per gap category, each gap's question with its
three hypotheses; it stops when every category was asked, at the last turn, or after the user's last answers said
"nothing more to model here" (the null hypothesis) or could not be confirmed. A gap named in a reviewer's private
feedback (ReadyGate) is asked first. Under MC-D the agent also reads the user's D comment: one that does not settle
the point it asked (the alignment judgement of ``alignment.py``: a non-answer, nothing stated on the point, or
another entity) is followed up once, narrower, with the same hypotheses. Under MC there is no comment to read.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, model_validator

from tasks.clarifiers import alignment
from tasks.clarifiers.base import BaseAgent, MethodContext, method
from tasks.clarifiers.freeqa import (
    AgentInput,
    NoOptions,
    check_action_filled,
    clean_question,
    gap_key_of,
    next_gap,
    parse_options,
    ready_summary,
    run_agent_role,
    stalled,
    view_fields,
)
from tasks.clarifiers.gaps import all_gaps, open_gaps
from tasks.clarifiers.interopt_roles import OPTION_SET_SCHEMA, narrow_question, parse_agent_turn
from tasks.domain_context import DomainContext, GapCandidate, GapInventory
from tasks.episodes.records import AgentAction, AgentView, Protocol, TranscriptRow
from tasks.roles.base import RoleSpec
from tasks.roles.registry import ROLES

OPTION_KEYS = ("A", "B", "C")
OTHER_OPTION = re.compile(r"^\s*(other\b|none of (the|these)\b|something else\b|not sure\b|i'?d like to explain\b|"
                          r"(let me|i'?ll) (explain|describe)\b)", re.I)


class ChoiceAgentInput(AgentInput):
    protocol: Literal["mc", "mc_d"] = Field(description="mc: the user must pick A, B or C; mc_d: the user may also "
                                                        "pick the fixed option D and explain.")


class ChoiceAgentOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: Literal["question", "ready_to_model"]
    question: str = Field(default="", description="With action 'question': one single question, without the options.")
    options: Annotated[dict[str, str], WithJsonSchema(OPTION_SET_SCHEMA)] = Field(
        default={}, description="With action 'question': exactly three short, mutually exclusive business hypotheses "
                                "keyed A, B, C.")
    allow_other: bool = Field(default=False, description="True under MC-D (the runner adds option D), else false.")
    summary: str = Field(default="", description="With action 'ready_to_model': what the model should contain.")

    @model_validator(mode="after")
    def _filled(self) -> ChoiceAgentOutput:
        check_action_filled(self.action, self.question, self.summary)
        return self


def option_problem(options: dict[str, str]) -> str:
    """Why a set of options breaks the choice format ("" when it is fine)."""
    if sorted(options) != list(OPTION_KEYS):
        return f"needs exactly the options A, B, C (got {sorted(options)})"
    texts = [options[k].strip() for k in OPTION_KEYS]
    if not all(texts):
        return "an option is empty"
    if len({re.sub(r"[\s.]+", " ", t.casefold()).strip() for t in texts}) < len(texts):
        return "options are not distinct"
    if any(OTHER_OPTION.search(t) for t in texts):
        return "an option is an 'other / none of these' catch-all (the runner adds D itself)"
    return ""


def d_follow_up(inventory: GapInventory, brief: str, transcript: list[TranscriptRow]) -> GapCandidate | None:
    """MC-D: the inventory gap of the last question, reworded narrower, when the user's D comment left it unsettled
    (a follow-up is not followed up again: its wording is no inventory question)."""
    if len(transcript) < 2 or transcript[-2].speaker != "agent" or transcript[-1].speaker != "user":
        return None
    reply = transcript[-1].content
    if transcript[-1].structured.get("choice") != "D" and not alignment.D_REPLY.search(reply):
        return None
    question, options = parse_agent_turn(transcript[-2].content)
    gap = next((g for g in all_gaps(inventory, brief) if g.question == question), None)
    if gap is None or alignment.judge(inventory=inventory, brief=brief, category=gap.category,
                                      description=gap.description, question=question, options=options,
                                      reply=reply).settled:
        return None
    return gap.model_copy(update={"question": narrow_question(gap, "mc_d")})


def choice_local(inp: ChoiceAgentInput, domain: DomainContext) -> ChoiceAgentOutput:
    gap, named = next_gap(domain.gaps, inp.brief, inp.transcript, inp.private_feedback)
    if inp.protocol == "mc_d" and not named and inp.turn < inp.max_turns and not stalled(inp.transcript):
        gap = d_follow_up(domain.gaps, inp.brief, list(inp.transcript)) or gap
    if gap is None or inp.turn >= inp.max_turns or (stalled(inp.transcript) and not named):
        return ChoiceAgentOutput(action="ready_to_model", summary=ready_summary(inp.brief, inp.transcript))
    return ChoiceAgentOutput(action="question", question=gap.question, options=dict(gap.options),
                             allow_other=inp.protocol == "mc_d")


SPEC = RoleSpec(name="or_choice_agent", input_model=ChoiceAgentInput, output_model=ChoiceAgentOutput,
                local=choice_local, reads_domain=True)
ROLES.add(SPEC.name, SPEC)


class ChoiceAgent(BaseAgent):
    def __init__(self, brief: str, protocol: Protocol, ctx: MethodContext):
        super().__init__()
        self.brief = brief
        self.protocol = protocol
        self.ctx = ctx

    def act(self, view: AgentView) -> AgentAction:
        out = run_agent_role(self, self.ctx, SPEC, ChoiceAgentInput(**view_fields(view), protocol=view.protocol))
        if isinstance(out, AgentAction):
            return out
        raw = out.model_dump_json()
        if out.action == "ready_to_model":
            return AgentAction(kind="ready", summary=out.summary.strip(), raw=raw,
                               events=[{"event": "ready", "open_gaps": len(open_gaps(self.ctx.domain.gaps, view.brief,
                                                                                     view.transcript))}])
        question = clean_question(out.question)
        problem = option_problem(out.options)
        if problem:
            self.bump("agent_format_invalid")
            return AgentAction(kind="invalid", failure="agent_format_invalid",
                               raw=f"{problem}: {json.dumps(out.model_dump(mode='json'), ensure_ascii=False)}",
                               events=[{"event": "format_invalid", "problem": problem}])
        options = {k: out.options[k].strip() for k in OPTION_KEYS}
        return AgentAction(kind="ask", question=question, options=options, raw=raw,
                           events=[{"event": "question", "gap_key": gap_key_of(self.ctx.domain.gaps, view.brief,
                                                                                 question),
                                    "allow_other": out.allow_other,
                                    "feedback_used": bool(view.private_feedback)}])


@dataclass
class ChoiceMethod:
    name: str
    protocols: tuple[Protocol, ...]
    uses_detector: bool = True

    def new_agent(self, case_id: str, brief: str, protocol: Protocol, *, seed: int, ctx: MethodContext) -> ChoiceAgent:
        return ChoiceAgent(brief, protocol, ctx)


@method("mc")
def mc(name: str, options: dict[str, Any]) -> ChoiceMethod:
    parse_options(name, options, NoOptions)
    return ChoiceMethod(name=name, protocols=("mc",))


@method("mc_d")
def mc_d(name: str, options: dict[str, Any]) -> ChoiceMethod:
    parse_options(name, options, NoOptions)
    return ChoiceMethod(name=name, protocols=("mc_d",))

"""FreeQA (Open protocol): a generic clarification agent with no method of its own (or-clarify.md §8).

Each turn it asks one concrete question, or declares READY_TO_MODEL with a summary. Its one model call is the role
``or_generic_agent``. The local backend asks from the brief's gap inventory (:mod:`tasks.clarifiers.gaps`) in
priority order, one gap per gap category, and stops when every category was asked, at the last turn, or when the
user's last answers keep coming back as non-answers ("still needs internal confirmation"), which a generic agent
reads as diminishing returns. A gap named in a reviewer's private feedback is asked first.

This module also holds the transcript helpers the other non-InterOPT methods share (what was asked and answered,
the READY summary, reviewer feedback that names a gap).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from tasks.clarifiers.base import BaseAgent, MethodContext, method
from tasks.clarifiers.gaps import all_gaps, asked_keys, open_gaps
from tasks.domain_context import DomainContext, GapCandidate, GapInventory
from tasks.episodes.records import QUESTION_PREFIX, USER_PREFIX, AgentAction, AgentView, Protocol, TranscriptRow
from tasks.errors import InputError
from tasks.llm.records import RoleFailure
from tasks.roles.base import RoleSpec
from tasks.roles.registry import ROLES

NON_ANSWER_PATIENCE = 3
"""Consecutive non-answers after which the local agents stop asking."""
UNCONFIRMED = re.compile(
    r"still needs? (internal )?confirm|can'?t give you a firm answer|no firm answer|not (sure|certain)|"
    r"(don'?t|do not) know|unknown to me", re.I)
"""A reply that leaves the point open (the simulated user's NEEDS_CONFIRMATION and its paraphrases)."""
ALREADY_STATED = re.compile(r"^\s*as (stated )?in the request\b", re.I)
"""A reply that only points back at the brief: nothing new."""
NULL_OPTION = re.compile(
    r"\bno extra rule\b|\bare independent\b|\bno (additional|further|other|extra|special) "
    r"(rules?|limits?|restrictions?|requirements?)\b", re.I)
"""A choice option that states "nothing more to model here" (gaps.py's null hypotheses)."""
CHOICE_REPLY = re.compile(r"selected option ([ABC])\b")


# ---- shared transcript helpers ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Exchange:
    """One question turn of the public transcript, as the agent can read it."""

    turn: int
    question: str
    options: dict[str, str]
    reply: str
    """The user's answer in plain words (the chosen option's text under the choice protocols)."""
    non_answer: bool
    """Nothing new came back: the point is unconfirmed, already in the brief, or "nothing more to model"."""

    @property
    def unconfirmed(self) -> bool:
        return bool(UNCONFIRMED.search(self.reply))


def clean_question(text: str) -> str:
    return QUESTION_PREFIX.sub("", text.strip()).strip()


def check_action_filled(action: str, question: str, summary: str) -> None:
    """An agent's reply carries what its action needs: a question to ask, or the summary when ready to model."""
    if action == "question" and not clean_question(question):
        raise ValueError("action 'question' needs a question")
    if action == "ready_to_model" and not summary.strip():
        raise ValueError("action 'ready_to_model' needs a summary")


def _question_of(row: TranscriptRow) -> str:
    text = row.content.strip()
    if text.startswith("Question:"):
        text = text.split("\nOptions:", 1)[0]
    return clean_question(text)


def _options_of(row: TranscriptRow) -> dict[str, str]:
    options = row.structured.get("options", {}) if isinstance(row.structured, dict) else {}
    return {str(k): str(v) for k, v in options.items()} if isinstance(options, dict) else {}


def exchanges(transcript: Sequence[TranscriptRow]) -> list[Exchange]:
    """The question turns of a transcript, each with the user's reply (if it came)."""
    out: list[Exchange] = []
    rows = list(transcript)
    for i, row in enumerate(rows):
        if row.speaker != "agent" or row.structured.get("action") == "ready_to_model":
            continue
        if row.content.lstrip().startswith("READY_TO_MODEL"):
            continue
        reply_row = rows[i + 1] if i + 1 < len(rows) and rows[i + 1].speaker == "user" else None
        if reply_row is None:
            continue
        options = _options_of(row)
        reply = reply_row.content.strip()
        if reply.startswith(USER_PREFIX):
            reply = reply[len(USER_PREFIX):].strip()
        choice = reply_row.structured.get("choice") or (m.group(1) if (m := CHOICE_REPLY.search(reply)) else None)
        if options and choice in options:
            reply = options[choice]
            null = bool(NULL_OPTION.search(reply))
        elif choice == "D":
            reply = str(reply_row.structured.get("comment") or reply.split("match.", 1)[-1]).strip()
            null = bool(UNCONFIRMED.search(reply))
        else:
            null = not reply or bool(UNCONFIRMED.search(reply) or ALREADY_STATED.search(reply))
        out.append(Exchange(turn=row.turn, question=_question_of(row), options=options, reply=reply,
                            non_answer=null))
    return out


def stalled(transcript: Sequence[TranscriptRow], patience: int = NON_ANSWER_PATIENCE) -> bool:
    """The last ``patience`` answers all came back as non-answers (or "nothing more to model")."""
    done = exchanges(transcript)
    return len(done) >= patience and all(e.non_answer for e in done[-patience:])


def request_statement(brief: str, limit: int = 400) -> str:
    """The brief's opening paragraph (tables left out), for a summary."""
    for block in re.split(r"\n\s*\n", brief.strip()):
        lines = [ln for ln in block.splitlines() if ln.strip() and not ln.lstrip().startswith("|")]
        if lines:
            text = " ".join(ln.strip() for ln in lines)
            return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
    return ""


def ready_summary(brief: str, transcript: Sequence[TranscriptRow]) -> str:
    """What was learnt: the request, each confirmed answer, and the points the user could not confirm."""
    done = exchanges(transcript)
    lines = [f"Request: {request_statement(brief)}"]
    confirmed = [e for e in done if not e.unconfirmed]
    unconfirmed = [e for e in done if e.unconfirmed]
    if confirmed:
        lines.append("Confirmed with the user:")
        lines += [f"- {e.question} -> {e.reply}" for e in confirmed]
    if unconfirmed:
        lines.append("Still unconfirmed (the user could not say yet):")
        lines += [f"- {e.question}" for e in unconfirmed]
    lines.append("Everything else is modelled as stated in the request.")
    return "\n".join(lines)


def named_gap(feedback: Sequence[str], gaps: Sequence[GapCandidate]) -> GapCandidate | None:
    """The first open gap a reviewer's feedback names (its question or its description), latest feedback first."""
    for note in reversed(list(feedback)):
        for gap in gaps:
            if gap.question in note or gap.description in note:
                return gap
    return None


def next_gap(inventory: GapInventory, brief: str, transcript: Sequence[TranscriptRow],
             feedback: Sequence[str] = ()) -> tuple[GapCandidate | None, bool]:
    """What a generic local agent asks next, and whether a reviewer's feedback named it.

    A gap the feedback names comes first; otherwise the highest-priority open gap of a category not asked yet. A
    generic agent covers each kind of gap once and then stops (no ledger keeps the rest in view), which is where
    it stops early compared with a method that tracks every gap.
    """
    gaps = all_gaps(inventory, brief)
    done = asked_keys(transcript, gaps)
    remaining = [g for g in gaps if g.key not in done]
    named = named_gap(feedback, remaining)
    if named is not None:
        return named, True
    covered = {g.category for g in gaps if g.key in done}
    return next((g for g in remaining if g.category not in covered), None), False


def gap_key_of(inventory: GapInventory, brief: str, question: str) -> str | None:
    """The inventory gap a question asks (for the event log); None for questions the inventory does not hold."""
    return next((g.key for g in all_gaps(inventory, brief) if g.question == question), None)


def role_failure_action(spec: RoleSpec, failure: RoleFailure) -> AgentAction:
    return AgentAction(kind="invalid", failure="agent_role_failure", raw=f"{spec.name}: {failure.message}"[:2000],
                       events=[{"event": "role_failure", "role": spec.name, "kind": failure.kind}])


def view_fields(view: AgentView) -> dict[str, Any]:
    """The fields every agent role's input takes from the episode view."""
    return {"brief": view.brief, "transcript": list(view.transcript), "turn": view.turn, "max_turns": view.max_turns,
            "private_feedback": list(view.private_feedback)}


def run_agent_role(agent: BaseAgent, ctx: MethodContext, spec: RoleSpec, inp: BaseModel) -> Any:
    """The agent role's output, or (a failed call, counted in ``agent_role_failures``) the invalid action to play."""
    out = ctx.run_one(spec, inp)
    if isinstance(out, RoleFailure):
        agent.bump("agent_role_failures")
        return role_failure_action(spec, out)
    return out


def parse_options(name: str, options: dict[str, Any], model: type[BaseModel]) -> BaseModel:
    """A method's options from params, or an InputError naming the offending option."""
    try:
        return model.model_validate(options)
    except ValidationError as err:
        first = err.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or None
        raise InputError(f"evaluate.methods.{name}", first["msg"], field=field) from None


class NoOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")


# ---- the role -----------------------------------------------------------------------------------------------------


class AgentInput(BaseModel):
    """What a clarification agent's model call sees: the public brief and transcript, plus private feedback."""

    model_config = ConfigDict(extra="forbid")

    brief: str
    transcript: list[TranscriptRow] = []
    turn: int = Field(default=1, ge=1)
    max_turns: int = Field(default=20, ge=1)
    private_feedback: list[str] = Field(default=[], description="Reviewer notes addressed only to the agent.")


class GenericAgentOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: Literal["question", "ready_to_model"]
    question: str = Field(default="", description="With action 'question': one single concrete question, no list.")
    summary: str = Field(default="", description="With action 'ready_to_model': what the model should contain and "
                                                 "which points are still unconfirmed.")

    @model_validator(mode="after")
    def _filled(self) -> GenericAgentOutput:
        check_action_filled(self.action, self.question, self.summary)
        return self


def generic_local(inp: AgentInput, domain: DomainContext) -> GenericAgentOutput:
    gap, named = next_gap(domain.gaps, inp.brief, inp.transcript, inp.private_feedback)
    if gap is None or inp.turn >= inp.max_turns or (stalled(inp.transcript) and not named):
        return GenericAgentOutput(action="ready_to_model", summary=ready_summary(inp.brief, inp.transcript))
    return GenericAgentOutput(action="question", question=gap.question)


SPEC = RoleSpec(name="or_generic_agent", input_model=AgentInput, output_model=GenericAgentOutput, local=generic_local,
                reads_domain=True)
ROLES.add(SPEC.name, SPEC)


# ---- the method ---------------------------------------------------------------------------------------------------


class FreeQAAgent(BaseAgent):
    def __init__(self, brief: str, ctx: MethodContext):
        super().__init__()
        self.brief = brief
        self.ctx = ctx

    def act(self, view: AgentView) -> AgentAction:
        out = run_agent_role(self, self.ctx, SPEC, AgentInput(**view_fields(view)))
        if isinstance(out, AgentAction):
            return out
        if out.action == "ready_to_model":
            return AgentAction(kind="ready", summary=out.summary.strip(), raw=out.model_dump_json(),
                               events=[{"event": "ready", "open_gaps": len(open_gaps(self.ctx.domain.gaps, view.brief,
                                                                                     view.transcript))}])
        question = clean_question(out.question)
        return AgentAction(kind="ask", question=question, raw=out.model_dump_json(),
                           events=[{"event": "question",
                                    "gap_key": gap_key_of(self.ctx.domain.gaps, view.brief, question)}])


@dataclass
class FreeQA:
    name: str
    protocols: tuple[Protocol, ...] = ("open",)
    uses_detector: bool = True

    def new_agent(self, case_id: str, brief: str, protocol: Protocol, *, seed: int, ctx: MethodContext) -> FreeQAAgent:
        return FreeQAAgent(brief, ctx)


@method("freeqa")
def freeqa(name: str, options: dict[str, Any]) -> FreeQA:
    parse_options(name, options, NoOptions)
    return FreeQA(name=name)

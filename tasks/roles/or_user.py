"""The OR-Clarify simulated business user (OR-Clarify §2), in two protocols.

- ``OPEN_SPEC`` (``or_open_user``): answers a free-text question from the case's hidden-slot facts only, with
  minimal disclosure: each independent part of the question gets the one fact it asks about, nothing else is
  volunteered, and a point no fact settles "still needs internal confirmation".
- ``CHOICE_SPEC`` (``or_choice_user``): picks one of the agent's options A/B/C; under MC-D it may pick the fixed
  option D with a short comment drawn from the relevant fact, under MC it must pick the closest option.

Local backends match the question against each fact (slot name, hidden unit, simulator answer) with embeddings,
content-word overlap, an objective cue and an entity-conflict cue (helpers shared with ``slot_hit``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tasks.records import Case
from tasks.roles import slot_hit as sh
from tasks.roles.base import RoleSpec
from tasks.roles.question_detector import split_questions
from tasks.roles.registry import ROLES

NEEDS_CONFIRMATION = "That point still needs internal confirmation on our side, so I can't give you a firm answer yet."
FIXED_OPTION_D_TEXT = "D. None of these fits our situation; I'll describe it in my own words."
"""The option the runner appends under MC-D (our own wording)."""
CHOICE_PROMPT_INTRO = "The assistant asks a multiple-choice clarification question."

MATCH_THRESHOLD = 0.56
"""Fact score at which a question part counts as asking about that fact (set on OR-Clarify cases 1-50)."""
BRIEF_THRESHOLD = 0.6
"""Similarity at which a question is answered from a sentence of the public brief instead."""
EXACT_OPTION = 0.70
ACCEPTABLE_OPTION = 0.55
OPTION_MARGIN = 0.04


# ---- shared fact matching -----------------------------------------------------------------------------------------


class SlotFact(BaseModel):
    """What the simulated user privately knows about one hidden slot."""

    model_config = ConfigDict(extra="forbid")

    slot_id: str
    name: str
    simulator_answer: str
    unit_content: str = ""
    unit_kind: str = ""
    aspects: list[str] = []
    """How questions about this kind of fact are usually put (``Domain.user_aspects``); the local backend matches
    questions against them as well as against the fact. Empty for domains without aspects (optimisation)."""


class TranscriptTurn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    speaker: Literal["agent", "user"]
    content: str


def facts_from_case(case: Case, aspects: Mapping[str, Sequence[str]]) -> list[SlotFact]:
    """What the simulated user knows of each hidden slot; ``aspects`` are the domain's ``user_aspects``."""
    units = {u.id: u for u in case.units}
    facts = []
    for slot in case.hidden_slots:
        hidden = [units[i] for i in slot.unit_ids if i in units]
        kind = hidden[0].kind if hidden else ""
        facts.append(SlotFact(slot_id=slot.slot_id, name=slot.name, simulator_answer=slot.simulator_answer,
                              unit_content="\n".join(u.content for u in hidden), unit_kind=kind,
                              aspects=list(aspects.get(kind, ()))))
    return facts


@dataclass(frozen=True)
class _Fact:
    fact: SlotFact
    prepared: sh.PreparedSlot


def _prepare(fact: SlotFact) -> _Fact:
    unit = fact.unit_content or fact.simulator_answer
    prepared = sh.prepare_slot(fact.name, unit, unit_kind=fact.unit_kind)
    prepared.texts["answer"] = [fact.simulator_answer]
    prepared.words.update(sh.content_words(fact.simulator_answer))
    if fact.aspects:
        prepared.texts["aspect"] = list(fact.aspects)
        prepared.words.update(sh.content_words(" ".join(fact.aspects)))
    return _Fact(fact=fact, prepared=prepared)


def fact_score(piece: str, fact: _Fact, emb: sh.Embeddings) -> float:
    """How squarely ``piece`` asks about ``fact`` (about 0-1; the conflict cue can push it below 0)."""
    p = fact.prepared
    if sh.is_catch_all(piece, p.words):
        return 0.0
    sims = [emb.best(piece, p.texts[k]) or 0.0 for k in ("name", "unit", "answer")]
    if p.texts.get("aspect"):  # a question about this kind of fact counts as much as one that echoes the answer
        sims[2] = max(sims[2], emb.best(piece, p.texts["aspect"]) or 0.0)
    words = sh.content_words(piece)
    cover = len(words & p.words) / len(words) if words else 0.0
    objective = float(bool(sh.OBJECTIVE_Q.search(piece))) * p.objective
    conflict = float(sh.entity_conflict(piece, p.core))
    return 0.2 * sims[0] + 0.35 * sims[1] + 0.35 * sims[2] + 0.25 * cover + 0.1 * objective - 0.5 * conflict


def _fact_texts(facts: Sequence[_Fact]) -> list[str]:
    return [t for f in facts for t in sh.all_texts(f.prepared) + f.prepared.texts["answer"]]


def _brief_sentences(brief: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?;])\s+|\n+", brief) if len(sh.content_words(s)) >= 3]


# ---- open protocol ------------------------------------------------------------------------------------------------


class OpenUserInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    brief: str
    facts: list[SlotFact]
    transcript: list[TranscriptTurn] = []
    question: str
    persona: str = ""
    """LLM backend: how this user departs from a cooperative one (tasks/roles/personas.py); the local backend
    ignores it (the episode loop rewrites its replies instead)."""


class OpenUserOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reply: str = Field(description="What the business user says back, in plain business language.")
    disclosed_slot_ids: list[str] = Field(description="Audit only, never shown to the agent: the hidden slots the "
                                                      "reply reveals.")


def question_parts(question: str) -> list[str]:
    """The independent parts of a question (at least the question itself)."""
    return split_questions(question) or [question.strip()]


def _open_answer(inp: OpenUserInput, facts: list[_Fact], emb: sh.Embeddings) -> OpenUserOutput:
    disclosed: list[str] = []
    for part in question_parts(inp.question):
        scores = [fact_score(part, f, emb) for f in facts]
        if scores and max(scores) >= MATCH_THRESHOLD:
            best = facts[scores.index(max(scores))].fact.slot_id
            if best not in disclosed:
                disclosed.append(best)
    if disclosed:
        answers = {f.fact.slot_id: f.fact.simulator_answer.strip() for f in facts}
        return OpenUserOutput(reply=" ".join(answers[s] for s in disclosed), disclosed_slot_ids=disclosed)
    sentences = _brief_sentences(inp.brief)
    near = [(emb.best(inp.question, [s]) or 0.0, s) for s in sentences]
    if near and max(near)[0] >= BRIEF_THRESHOLD:
        return OpenUserOutput(reply=f"As in the request: {max(near)[1]}", disclosed_slot_ids=[])
    return OpenUserOutput(reply=NEEDS_CONFIRMATION, disclosed_slot_ids=[])


def open_local_batch(inputs: Sequence[OpenUserInput]) -> list[OpenUserOutput]:
    prepared = [[_prepare(f) for f in inp.facts] for inp in inputs]
    texts: list[str] = []
    for inp, facts in zip(inputs, prepared):
        texts += _fact_texts(facts) + question_parts(inp.question) + [inp.question] + _brief_sentences(inp.brief)
    emb = sh.Embeddings(texts)
    return [_open_answer(inp, facts, emb) for inp, facts in zip(inputs, prepared)]


def open_local(inp: OpenUserInput) -> OpenUserOutput:
    return open_local_batch([inp])[0]


OPEN_SPEC = RoleSpec(name="or_open_user", input_model=OpenUserInput, output_model=OpenUserOutput, local=open_local,
                     local_batch=open_local_batch)
ROLES.add(OPEN_SPEC.name, OPEN_SPEC)


# ---- choice protocol (MC / MC-D) ----------------------------------------------------------------------------------

OptionId = Literal["A", "B", "C"]
MatchStatus = Literal["exact_match", "acceptable_match", "no_match", "undetermined"]


class ChoiceUserInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    brief: str = ""
    facts: list[SlotFact]
    question: str
    options: dict[OptionId, str] = Field(description="The agent's options, keyed A, B, C.")
    allow_d: bool = Field(description="True under MC-D (the fixed option D is offered), False under MC.")
    d_option_text: str = FIXED_OPTION_D_TEXT
    persona: str = ""
    """As ``OpenUserInput.persona``."""

    @model_validator(mode="after")
    def _two_options(self) -> ChoiceUserInput:
        if len(self.options) < 2:
            raise ValueError("a choice question needs at least two options")
        return self


class ChoiceUserOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    choice: Literal["A", "B", "C", "D"]
    comment: str | None = Field(default=None, description="Only with choice D: a short correction in business "
                                                          "language, drawn from the relevant fact.")
    rationale: str = Field(description="Audit only: why this option.")
    match_status: MatchStatus

    @model_validator(mode="after")
    def _d_rules(self) -> ChoiceUserOutput:
        if self.choice == "D":
            if not (self.comment and self.comment.strip()):
                raise ValueError("choice D needs a comment")
            if self.match_status != "no_match":
                raise ValueError("choice D always has match_status no_match")
        elif self.comment:
            raise ValueError("only choice D carries a comment")
        return self


def render_choice_question(inp: ChoiceUserInput) -> str:
    """The message the simulated user reads: question, the agent's options and, under MC-D, option D."""
    lines = [CHOICE_PROMPT_INTRO, f"Question: {inp.question}", "Options:"]
    lines += [f"{key}. {text}" for key, text in sorted(inp.options.items())]
    if inp.allow_d:
        lines.append(inp.d_option_text)
    return "\n".join(lines)


def render_choice_reply(out: ChoiceUserOutput) -> str:
    """What the agent (and the transcript and judge) sees; rationale and match_status stay private."""
    if out.choice == "D":
        return f"Business user response: none of the offered options match. {out.comment}"
    return f"Business user selected option {out.choice}."


NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
NEGATION = re.compile(r"\b(no|not|never|none|cannot|can't|don't|doesn't|isn't|aren't|without|neither|nor|"
                      r"prohibited|forbidden)\b", re.I)


def _numbers(text: str) -> set[str]:
    return {n.replace(",", "") for n in NUMBER.findall(text)}


def _option_score(option: str, question: str, fact: _Fact, emb: sh.Embeddings) -> float:
    """Agreement of one option with the fact: meaning, then penalties for contradicting numbers or polarity."""
    evidence = fact.prepared.texts["answer"] + fact.prepared.texts["unit"]
    score = max(emb.best(option, evidence) or 0.0, emb.best(f"{question} {option}", evidence) or 0.0)
    fact_text = " ".join(evidence)
    option_numbers = _numbers(option) - _numbers(question)
    if option_numbers and not option_numbers & _numbers(fact_text):
        score -= 0.15
    first_fact = re.split(r"(?<=[.!?])\s+", fact.fact.simulator_answer.strip())[0]
    if bool(NEGATION.search(option)) != bool(NEGATION.search(first_fact)):
        score -= 0.05
    return score


def _short_comment(answer: str, limit: int = 240) -> str:
    """The first sentence of the fact (or its first ``limit`` characters): enough to correct, nothing adjacent."""
    first = re.split(r"(?<=[.!?])\s+", answer.strip())[0]
    return first if len(first) <= limit else first[: limit - 1].rstrip() + "…"


def _choose(inp: ChoiceUserInput, facts: list[_Fact], emb: sh.Embeddings) -> ChoiceUserOutput:
    asked = " ".join([inp.question, *inp.options.values()])
    scores = [max(fact_score(inp.question, f, emb), fact_score(asked, f, emb)) for f in facts]
    keys = sorted(inp.options)
    if not scores or max(scores) < MATCH_THRESHOLD:
        near = {k: max((emb.best(inp.options[k], _brief_sentences(inp.brief)) or 0.0), 0.0) for k in keys}
        pick = max(keys, key=lambda k: (near[k], -keys.index(k)))
        return ChoiceUserOutput(choice=pick, rationale="The facts I have do not settle this; this option is the "
                                                       "closest honest reading of what we know.",
                                match_status="undetermined")
    fact = facts[scores.index(max(scores))]
    option_scores = {k: _option_score(inp.options[k], inp.question, fact, emb) for k in keys}
    ranked = sorted(keys, key=lambda k: (-option_scores[k], keys.index(k)))
    best = ranked[0]
    margin = option_scores[best] - option_scores[ranked[1]] if len(ranked) > 1 else 1.0
    name = sh.humanise(fact.fact.name)
    if option_scores[best] >= EXACT_OPTION and margin >= OPTION_MARGIN:
        return ChoiceUserOutput(choice=best, rationale=f"Option {best} states our rule on {name}.",
                                match_status="exact_match")
    if option_scores[best] >= ACCEPTABLE_OPTION and margin >= OPTION_MARGIN:
        return ChoiceUserOutput(choice=best, rationale=f"Option {best} is close enough to our rule on {name}.",
                                match_status="acceptable_match")
    if inp.allow_d:
        return ChoiceUserOutput(choice="D", comment=_short_comment(fact.fact.simulator_answer),
                                rationale=f"None of A-C matches our rule on {name}.", match_status="no_match")
    return ChoiceUserOutput(choice=best, rationale=f"None of the options matches our rule on {name}; {best} is the "
                                                   f"closest.", match_status="no_match")


def choice_local_batch(inputs: Sequence[ChoiceUserInput]) -> list[ChoiceUserOutput]:
    prepared = [[_prepare(f) for f in inp.facts] for inp in inputs]
    texts: list[str] = []
    for inp, facts in zip(inputs, prepared):
        texts += _fact_texts(facts) + _brief_sentences(inp.brief)
        texts += [inp.question, " ".join([inp.question, *inp.options.values()])]
        texts += [t for o in inp.options.values() for t in (o, f"{inp.question} {o}")]
    emb = sh.Embeddings(texts)
    return [_choose(inp, facts, emb) for inp, facts in zip(inputs, prepared)]


def choice_local(inp: ChoiceUserInput) -> ChoiceUserOutput:
    return choice_local_batch([inp])[0]


CHOICE_SPEC = RoleSpec(name="or_choice_user", input_model=ChoiceUserInput, output_model=ChoiceUserOutput,
                       local=choice_local, local_batch=choice_local_batch)
ROLES.add(CHOICE_SPEC.name, CHOICE_SPEC)

"""The InterOPT roles (or-clarify.md §6, §7): typed inputs and outputs, local backends, LLM prompts in
``prompts/<role>/``.

Choice (MC-D), with the persistent ledger (``tasks/clarifiers/ledger.py``):
- ``or_gap_search`` (``GAP_SEARCH_SPEC``): Stage 1, proposes ADD updates for the ledger.
- ``or_candidate_agent`` (``CANDIDATE_SPEC``): Stage 2, three candidate clarification states C1-C3 and three MC-D
  questions Q1-Q3 each bound to an OPEN gap, or READY.
- ``or_question_selector`` (``SELECTOR_SPEC``): picks one of Q1-Q3 by the published priority order.
- ``or_direct_question`` (``DIRECT_SPEC``): InterOPT without Stage 2, gap search plus one bound question in one call.
- ``or_gap_alignment`` (``ALIGNMENT_SPEC``): does the user's reply settle the asked gap (our aligned mode)?

Open:
- ``or_open_gap_search`` (``OPEN_GAP_SEARCH_SPEC``): per-turn gap search over brief + transcript, no ledger.
- ``or_open_candidate_agent`` (``OPEN_CANDIDATE_SPEC``): three private candidates, one public question, or READY
  with a formulatable confidence.

Local backends read only the public brief and transcript and ask from the brief's gap inventory
(``tasks/clarifiers/gaps.py``); a ledger gap that came from a model and is not in the inventory gets a question
from a per-category template. Without a ledger (InterOPT without Stage 1) the candidate agents read what is still
open from the transcript (:func:`transcript_open_gaps`); the local alignment check is ``alignment.py``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, model_validator

from tasks.clarifiers import alignment
from tasks.clarifiers.alignment import CHOICE_PICK, D_REPLY, USER_PREFIX_RE, is_non_answer
from tasks.clarifiers.gaps import all_gaps
from tasks.clarifiers.ledger import MAX_NEW_PER_TURN, GapRow, GapUpdate, normalise
from tasks.domain_context import DomainContext, GapCandidate, GapInventory
from tasks.episodes.records import PublicTurn
from tasks.roles.base import RoleSpec
from tasks.roles.registry import ROLES

OptionId = Literal["A", "B", "C"]
OPTION_SET_SCHEMA = {"type": "object", "properties": {k: {"type": "string"} for k in ("A", "B", "C")},
                     "required": ["A", "B", "C"], "additionalProperties": False}
"""The schema of three options as a model sees it: a closed object with the keys A, B and C, all required. An open
map (``dict[str, str]``'s ``additionalProperties: {type: string}``) breaks strict structured output (OpenAI, Azure);
this shape is accepted by every provider's schema mode (``tasks/llm/strict_schema.py``)."""
OptionSet = Annotated[dict[OptionId, str], WithJsonSchema(OPTION_SET_SCHEMA)]
"""Options keyed A, B, C; validated as the dict (the records' own validators require all three), sent closed."""
OpenCategory = Literal["objective", "feasible_rule", "decision_scope", "entity_relation", "time_boundary",
                       "hard_soft_policy"]
SourceStatus = Literal["not stated", "inferred but unconfirmed", "partially answered"]

CATEGORY_RANK = {"objective": 0, "constraint_set": 1, "hard_soft_policy": 1, "feasible_rule": 1, "decision_scope": 2,
                 "entity_relation": 2, "time_boundary": 2}
"""The published selector priority: objective > rules and policies > scope / entities / time > the rest."""
TO_OPEN = {"constraint_set": "feasible_rule"}
TO_LEDGER = {"feasible_rule": "constraint_set"}


def category_rank(category: str) -> int:
    return CATEGORY_RANK.get(category, 3)


# ---- the public transcript as the roles see it --------------------------------------------------------------------


class QA(BaseModel):
    """One asked question and the reply the agent saw, read back from the public transcript."""

    model_config = ConfigDict(extra="forbid")

    turn: int
    question: str
    options: dict[str, str] = {}
    reply: str
    answer: str
    """What the reply means: the chosen option's text, the D comment, or the free-text reply."""
    choice: str | None = None
    non_answer: bool


OPTION_LINE = re.compile(r"^\s*([ABC])\.\s+(.+)$")


def parse_agent_turn(content: str) -> tuple[str, dict[str, str]]:
    """(question, options) of an agent message; ('', {}) for READY or anything that is no question."""
    text = content.strip()
    if text.startswith("READY_TO_MODEL"):
        return "", {}
    lines = text.splitlines()
    options = {m.group(1): m.group(2).strip() for line in lines if (m := OPTION_LINE.match(line))}
    question_lines = [line for line in lines if not OPTION_LINE.match(line) and line.strip() != "Options:"]
    question = re.sub(r"^\s*(QUESTION|Question)\s*:\s*", "", " ".join(question_lines).strip())
    return question, options


def qa_pairs(transcript: Sequence[PublicTurn]) -> list[QA]:
    pairs: list[QA] = []
    rows = list(transcript)
    for i, row in enumerate(rows):
        if row.speaker != "agent":
            continue
        question, options = parse_agent_turn(row.content)
        if not question or i + 1 >= len(rows) or rows[i + 1].speaker != "user":
            continue
        reply = rows[i + 1].content.strip()
        choice, answer = None, USER_PREFIX_RE.sub("", reply).strip()
        if m := CHOICE_PICK.search(reply):
            choice = m.group(1)
            answer = options.get(choice, answer)
            non_answer = False
        elif m := D_REPLY.search(reply):
            choice, answer = "D", m.group(1).strip()
            non_answer = is_non_answer(answer)
        else:
            non_answer = is_non_answer(answer)
        pairs.append(QA(turn=row.turn, question=question, options=options, reply=reply, answer=answer, choice=choice,
                        non_answer=non_answer))
    return pairs


def asked_texts(transcript: Sequence[PublicTurn]) -> str:
    return normalise(" ".join(parse_agent_turn(r.content)[0] for r in transcript if r.speaker == "agent"))


# ---- questions for a gap ------------------------------------------------------------------------------------------

CATEGORY_GUESS = [
    ("objective", re.compile(r"\b(goal|objective|optimi[sz]\w*|maximi[sz]\w*|minimi[sz]\w*|success)\b", re.I)),
    ("hard_soft_policy", re.compile(r"\b(must|strict|penalt\w*|allowed|may|in full|unmet|late|backlog\w*|"
                                    r"preference|violat\w*)\b", re.I)),
    ("entity_relation", re.compile(r"\b(depend\w*|requires?|exclude\w*|proportion|together|both)\b", re.I)),
    ("constraint_set", re.compile(r"\b(limit\w*|maximum|minimum|at most|at least|capacity|rules?)\b", re.I)),
    ("time_boundary", re.compile(r"\b(when|timing|start|end|horizon|hours?|days?|weeks?|months?|periods?|"
                                 r"years?|shifts?)\b", re.I)),
    ("decision_scope", re.compile(r"\b(decide|decisions?|whole numbers?|integers?|yes/no|quantit\w+|scope)\b", re.I)),
]


def guess_category(text: str) -> str:
    """The gap category a free question most likely targets (for candidates bound to no gap)."""
    return next((c for c, cue in CATEGORY_GUESS if cue.search(text)), "other")


FALLBACK_OPTIONS: dict[str, dict[str, str]] = {
    "objective": {"A": "Minimise the total cost", "B": "Maximise the total profit", "C": "Maximise the total output"},
    "constraint_set": {"A": "There is an upper limit", "B": "There is a minimum requirement",
                       "C": "No extra rule applies"},
    "hard_soft_policy": {"A": "It must always hold", "B": "It may be broken at a penalty",
                         "C": "It is only a preference"},
    "decision_scope": {"A": "It is part of what the plan decides", "B": "It is fixed in advance",
                       "C": "It is outside this plan"},
    "time_boundary": {"A": "It applies from the start of each period", "B": "It applies at the end of each period",
                      "C": "It applies only in some periods"},
    "entity_relation": {"A": "They exclude each other", "B": "One requires the other", "C": "They are independent"},
}


def _sentence_core(description: str) -> str:
    core = description.strip().rstrip(".")
    return core[:1].lower() + core[1:] if core else core


def template_for(inventory: GapInventory, row: GapRow, brief: str) -> GapCandidate:
    """The inventory gap with this description, else a per-category question about the description."""
    by_description = {normalise(g.description): g for g in all_gaps(inventory, brief)}
    found = by_description.get(normalise(row.description)) or sibling_by_description(inventory, brief,
                                                                                      row.description)
    if found is not None:
        return found
    question = (f"Which goal should the plan optimise, given that {_sentence_core(row.description)}?"
                if row.category == "objective"
                else f"Which of these best describes how this works for you: {_sentence_core(row.description)}?")
    return GapCandidate(key=f"ledger:{normalise(row.description)}", category=row.category, description=row.description,
                        evidence_quote=row.evidence_quote, question=question,
                        options=FALLBACK_OPTIONS[row.category], priority=category_rank(row.category))


LOWER_FIRST = frozenset("""a an the every each all any some no none one exactly at only it there they using unmet late
actions amounts everything nothing minimise minimize maximise maximize""".split())


def topic_of(gap: GapCandidate) -> str:
    """A short noun phrase for the gap (for narrower re-asks)."""
    kind = gap.key.partition(":")[0]
    if kind == "limit":
        return f"rules on {gap.description.removeprefix('Limits or rules on ').removesuffix(' are not stated.')}"
    if kind == "relation":
        return gap.description.removesuffix(" to each other is not stated.").replace("How ", "how ", 1)
    fixed = {"objective": "the goal of the plan", "demand_policy": "meeting demand",
             "selection": "how many of the options to choose", "sequence": "the order of the steps",
             "timing": "timing rules", "horizon_end": "what must hold at the end of the horizon",
             "decisions": "what the plan decides"}
    return fixed.get(kind, _sentence_core(gap.description))


def narrow_question(gap: GapCandidate, protocol: Literal["open", "mc_d"]) -> str:
    """A narrower re-ask of an unsettled gap: under Open an assumption check on the leading hypothesis, under MC-D
    the same hypotheses framed as current practice."""
    if protocol == "open":
        first = gap.options.get("A", gap.description).rstrip(".")
        if first.split()[0].lower() in LOWER_FIRST:  # keep entity names as written ("Seeded rye", "Harry")
            first = first[:1].lower() + first[1:]
        if re.match(r"(minimi[sz]e|maximi[sz]e)\b", first):
            first = f"the goal is to {first}"
        return f"For now, may I assume that {first}?"
    return f"Even if it is not final yet, which of these is closest to your current practice on {topic_of(gap)}?"


def gap_question_variants(gap: GapCandidate) -> list[str]:
    return [gap.question, narrow_question(gap, "open"), narrow_question(gap, "mc_d")]


# ---- clarification states and summaries ---------------------------------------------------------------------------


class ClarificationState(BaseModel):
    model_config = ConfigDict(extra="forbid")

    confirmed_business_goal: str = Field(min_length=1)
    confirmed_decision_scope: list[str] = Field(min_length=1)
    confirmed_constraints_and_rules: list[str] = Field(min_length=1)
    known_inputs_entities_and_indices: list[str] = Field(min_length=1)
    unresolved_business_assumptions: list[str] = Field(min_length=1)


def build_state(inventory: GapInventory, brief: str, transcript: Sequence[PublicTurn],
                unresolved: Sequence[str]) -> ClarificationState:
    facts = inventory.facts(brief)
    goal = inventory.goal(brief)
    scope: list[str] = []
    rules: list[str] = []
    pending: list[str] = []
    for qa in qa_pairs(transcript):
        if qa.non_answer:
            pending.append(f"Not confirmed yet: {qa.question}")
            continue
        kind = guess_category(qa.question)
        line = f"{qa.question} -> {qa.answer}"
        if kind == "objective":
            goal = qa.answer
        elif kind == "decision_scope":
            scope.append(line)
        else:
            rules.append(line)
    known = ([f"Entities named in the request: {', '.join(facts.entities)}"] if facts.entities else [])
    known += [f"Time unit: {facts.time_unit}"] if facts.time_unit else []
    return ClarificationState(
        confirmed_business_goal=goal or f"Not confirmed yet: {inventory.goal_placeholder}",
        confirmed_decision_scope=scope or ["Not confirmed yet: the exact decisions and their units"],
        confirmed_constraints_and_rules=rules or ["Not confirmed yet: rules beyond those stated in the request"],
        known_inputs_entities_and_indices=known or ["Not confirmed yet: the entities and indices of the model"],
        unresolved_business_assumptions=[*unresolved, *pending] or ["None identified"],
    )


def compose_summary(inventory: GapInventory, brief: str, transcript: Sequence[PublicTurn],
                    unresolved: Sequence[str]) -> str:
    """A model-ready summary that lists what the interview confirmed and flags what still needs confirmation."""
    state = build_state(inventory, brief, transcript, unresolved)
    lines = [f"Goal: {state.confirmed_business_goal}"]
    lines += [f"Confirmed: {line}" for line in state.confirmed_decision_scope + state.confirmed_constraints_and_rules
              if not line.startswith("Not confirmed")]
    lines += [f"Still needs confirmation: {u}" for u in [*unresolved]]
    lines += [f"Still needs confirmation: {qa.question}" for qa in qa_pairs(transcript) if qa.non_answer]
    return "\n".join(lines)


# ---- Stage 1 (choice): gap search --------------------------------------------------------------------------------


class GapSearchInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    brief: str
    transcript: list[PublicTurn] = []
    ledger: list[GapRow] = Field(default=[], description="The current ledger; never re-report one of its gaps.")


class GapSearchOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    decision: Literal["CONTINUE", "NO_NEW_GAP"]
    search_summary: str
    updates: list[GapUpdate] = Field(default=[], description=f"At most {MAX_NEW_PER_TURN} ADD updates; empty with "
                                                             f"NO_NEW_GAP.")

    @model_validator(mode="after")
    def _no_new_gap_is_empty(self) -> GapSearchOutput:
        if self.decision == "NO_NEW_GAP" and self.updates:
            raise ValueError("NO_NEW_GAP must come with empty updates")
        return self


def settled_by_transcript(gap: GapCandidate, transcript: Sequence[PublicTurn], asked: str) -> bool:
    """The gap's own question (or a narrower variant) was asked, or, for the objective, any objective question got a
    real answer (an agent may word it its own way)."""
    if any(normalise(v) in asked for v in gap_question_variants(gap)):
        return True
    return gap.category == "objective" and any(guess_category(qa.question) == "objective" and not qa.non_answer
                                               for qa in qa_pairs(transcript))


# ---- Stage 1's reading of the replies: gaps a reply reveals ------------------------------------------------------

FOLLOWUP_KINDS = {"limit": 3, "relation": 2}
"""The inventory gaps whose confirmation reveals sibling gaps (a rule on one entity, a link between two), and at most
how many siblings one confirming reply reveals."""
EMPTY_REPLY = re.compile(r"^\s*(no\b|none\b|nothing\b|not really\b|there (is|are) no\b)|\bindependent\b|"
                         r"\bno (extra|other|further|additional|special) (rule|limit|link)", re.I)
"""A reply that says there is nothing of the asked kind (the agent's own words for "no rule here")."""
EMPTY_OPTION = "C"
"""The limit and relation gaps offer "no extra rule" / "independent" as option C."""


def _kind(gap: GapCandidate) -> str:
    return gap.key.partition(":")[0]


def _names(gap: GapCandidate) -> list[str]:
    """The entity names a limit or relation gap is about, as its key holds them (lower case)."""
    return gap.key.partition(":")[2].split("|")


def _group_of(inventory: GapInventory, brief: str, name: str) -> list[str]:
    facts = inventory.facts(brief)
    for group in facts.groups:
        if any(e.lower() == name for e in group):
            return list(group)
    return list(facts.entities)


def _renamed(gap: GapCandidate, old: Sequence[str], new: Sequence[str]) -> GapCandidate:
    """The same gap about other entities: each old name (matched case-insensitively) replaced by the new one."""
    def sub(text: str) -> str:
        for i, name in sorted(enumerate(old), key=lambda t: -len(t[1])):
            text = re.sub(re.escape(name), f"\x00{i}\x00", text, flags=re.I)
        return re.sub(r"\x00(\d+)\x00", lambda m: new[int(m.group(1))], text)

    kind = _kind(gap)
    return gap.model_copy(update={"key": f"{kind}:{'|'.join(n.lower() for n in new)}",
                                  "description": sub(gap.description), "question": sub(gap.question),
                                  "options": {k: sub(v) for k, v in gap.options.items()}})


def sibling_gaps(inventory: GapInventory, brief: str, gap: GapCandidate) -> list[GapCandidate]:
    """The gaps of the same kind about the entities listed with the gap's own: a limit on each other member of its
    group, or a link between each member of the pair and each other member of the group (group order)."""
    if _kind(gap) not in FOLLOWUP_KINDS:
        return []
    names = _names(gap)
    group = _group_of(inventory, brief, names[0])
    by_lower = {e.lower(): e for e in group}
    if any(n not in by_lower for n in names):
        return []
    others = [e for e in group if e.lower() not in names]
    if _kind(gap) == "limit":
        return [_renamed(gap, [by_lower[names[0]]], [e]) for e in others]
    a, b = by_lower[names[0]], by_lower[names[1]]
    return [_renamed(gap, [a, b], pair) for e in others for pair in ([a, e], [b, e])]


def sibling_by_description(inventory: GapInventory, brief: str, description: str) -> GapCandidate | None:
    """A reply-revealed gap of this brief with this description (for a ledger row that came from one)."""
    wanted = normalise(description)
    for gap in all_gaps(inventory, brief):
        for sibling in sibling_gaps(inventory, brief, gap):
            if normalise(sibling.description) == wanted:
                return sibling
    return None


def confirms_rule(qa: QA) -> bool:
    """The reply to a limit or relation question says a rule of that kind exists: a picked option other than the
    "no extra rule" one, or a free answer (D comment, open reply) that is neither a non-answer, nor a pointer back to
    the request, nor a "no"."""
    if qa.non_answer:
        return False
    if qa.choice in ("A", "B", "C"):
        return qa.choice != EMPTY_OPTION
    return not (alignment.AS_IN_REQUEST.match(qa.answer) or EMPTY_REPLY.search(qa.answer))


def revealed_gaps(inventory: GapInventory, brief: str, transcript: Sequence[PublicTurn]) -> list[GapCandidate]:
    """Stage 1's reading of the replies (or-clarify.md §6.2: the search reads the transcript; its space covers
    entity coverage and relations): a reply that confirms a rule on one entity, or a link between two, reveals the
    same question about the entities listed with them, which the brief alone did not put in the inventory: at most
    three limits or two links per confirming reply (:data:`FOLLOWUP_KINDS`), in the group's order. Only the brief's
    own gaps reveal siblings (a revealed gap does not reveal further ones), so the search stays bounded."""
    known = {g.key for g in all_gaps(inventory, brief)}
    found: list[GapCandidate] = []
    pool = list(all_gaps(inventory, brief))
    for qa in qa_pairs(transcript):
        q = normalise(qa.question)
        gap = next((g for g in pool if any(normalise(v) == q for v in gap_question_variants(g))), None)
        if gap is None or _kind(gap) not in FOLLOWUP_KINDS or not confirms_rule(qa):
            continue
        fresh = []
        for sibling in sibling_gaps(inventory, brief, gap):
            names = _names(sibling)
            if sibling.key in known or f"{_kind(sibling)}:{'|'.join(reversed(names))}" in known:
                continue
            fresh.append(sibling)
            known.add(sibling.key)
            if len(fresh) == FOLLOWUP_KINDS[_kind(gap)]:
                break
        found += fresh
    return found


def stage1_gaps(inventory: GapInventory, brief: str, transcript: Sequence[PublicTurn]) -> list[GapCandidate]:
    """What the local Stage 1 searches: the brief's inventory, then the gaps the replies revealed."""
    return all_gaps(inventory, brief) + revealed_gaps(inventory, brief, transcript)


def inventory_new_gaps(inventory: GapInventory, brief: str, transcript: Sequence[PublicTurn],
                       ledger: Sequence[GapRow]) -> list[GapCandidate]:
    """Stage 1 gaps (the inventory and the reply-revealed ones) not yet in the ledger (by description) and not settled
    by the transcript."""
    known = {normalise(r.description) for r in ledger}
    asked = asked_texts(transcript)
    return [g for g in stage1_gaps(inventory, brief, transcript)
            if normalise(g.description) not in known and not settled_by_transcript(g, transcript, asked)]


# ---- Stage 2's readiness review: assumptions a reply left unconfirmed ---------------------------------------------

ASSUMPTION_CATEGORIES = ("objective", "hard_soft_policy")
"""What the readiness review will not leave to a silent assumption: the goal, and whether a requirement is hard or
soft (the first two items of the agent's published priority; each gets one narrower check)."""

def unconfirmed_assumptions(inventory: GapInventory, brief: str, transcript: Sequence[PublicTurn]
                            ) -> list[GapCandidate]:
    """What the Stage 2 agent's clarification states still list as unresolved once no gap is left to search
    (or-clarify.md §6.3: ASK while an unresolved assumption could change the objective or the rules; free candidates
    when no OPEN gap remains): a gap of the objective or of a hard/soft policy (:data:`ASSUMPTION_CATEGORIES`) whose
    question got a non-answer, and whose narrower assumption check was not asked yet. Objective first."""
    pairs = qa_pairs(transcript)
    asked = asked_texts(transcript)
    out = []
    for gap in stage1_gaps(inventory, brief, transcript):
        if gap.category not in ASSUMPTION_CATEGORIES:
            continue
        if any(normalise(narrow_question(gap, p)) in asked for p in ("open", "mc_d")):
            continue
        own = normalise(gap.question)
        if any(normalise(qa.question) == own and qa.non_answer for qa in pairs):
            out.append(gap)
    return sorted(out, key=lambda g: category_rank(g.category))


RULE_FAMILY = {"constraint_set": "rules", "hard_soft_policy": "rules", "feasible_rule": "rules"}
MAX_TRANSCRIPT_ASKS = 2
"""Without a ledger, a gap asked this often without a settling reply is let go."""


class TranscriptGap(BaseModel):
    """A gap that an agent without a ledger reads as still open from the public transcript."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    gap: GapCandidate
    asks: int
    """How often its question (or a narrower variant) was asked without a reply that settled it."""


def _reply_settles(inventory: GapInventory, gap: GapCandidate, qa: QA, brief: str, question: str) -> bool:
    return alignment.judge(inventory=inventory, brief=brief, category=gap.category, description=gap.description,
                           question=question, options=qa.options if question == qa.question else {},
                           reply=qa.reply).settled


def _settled_in_passing(inventory: GapInventory, gap: GapCandidate, qa: QA, brief: str) -> bool:
    """A free-text reply to another question that states a rule of this gap's kind for this gap's subject."""
    if qa.choice in ("A", "B", "C") or qa.non_answer:
        return False
    subject = alignment.subjects(inventory, brief, f"{gap.question} {gap.description}")
    if not subject or not subject & alignment.subjects(inventory, brief, qa.answer):
        return False
    kind = guess_category(qa.answer)
    if RULE_FAMILY.get(kind, kind) != RULE_FAMILY.get(gap.category, gap.category):
        return False
    return _reply_settles(inventory, gap, qa, brief, gap.question)


def transcript_open_gaps(inventory: GapInventory, brief: str, transcript: Sequence[PublicTurn]) -> list[TranscriptGap]:
    """What an agent without a ledger (InterOPT without Stage 1) infers is still open, from the brief and the public
    transcript alone: an inventory gap stays open until a reply to its question settles it (the alignment judgement,
    ``alignment.py``), so an unsettled one is asked again, narrower, up to :data:`MAX_TRANSCRIPT_ASKS` times; and a
    free-text reply to another question that already states a rule for the gap's subject closes it unasked. The
    ledger, by contrast, marks a gap ASKED whatever the reply and never revisits it."""
    pairs = qa_pairs(transcript)
    out: list[TranscriptGap] = []
    for gap in all_gaps(inventory, brief):
        variants = [normalise(v) for v in gap_question_variants(gap)]
        own = [qa for qa in pairs if any(v in normalise(qa.question) for v in variants)
               or (gap.category == "objective" and guess_category(qa.question) == "objective")]
        if any(_reply_settles(inventory, gap, qa, brief, qa.question) for qa in own) or len(own) >= MAX_TRANSCRIPT_ASKS:
            continue
        if any(_settled_in_passing(inventory, gap, qa, brief) for qa in pairs if qa not in own):
            continue
        out.append(TranscriptGap(gap=gap, asks=len(own)))
    return out


def gap_search_local(inp: GapSearchInput, domain: DomainContext) -> GapSearchOutput:
    new = inventory_new_gaps(domain.gaps, inp.brief, inp.transcript, inp.ledger)[:MAX_NEW_PER_TURN]
    if not new:
        return GapSearchOutput(decision="NO_NEW_GAP", search_summary="Every gap the request leaves open is already "
                                                                     "in the ledger.")
    return GapSearchOutput(
        decision="CONTINUE",
        search_summary=f"{len(new)} new gap(s): " + "; ".join(f"{g.category}: {g.description}" for g in new),
        updates=[GapUpdate(category=g.category, description=g.description, evidence_quote=g.evidence_quote)
                 for g in new],
    )


GAP_SEARCH_SPEC = RoleSpec(name="or_gap_search", input_model=GapSearchInput, output_model=GapSearchOutput,
                           local=gap_search_local, reads_domain=True)
ROLES.add(GAP_SEARCH_SPEC.name, GAP_SEARCH_SPEC)


# ---- Stage 2 (choice): candidate states and questions ------------------------------------------------------------


class CandidateQuestion(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1, description="One semantic question.")
    options: OptionSet = Field(description="Exactly three short, mutually exclusive business hypotheses A, B, C; no "
                                           "'other' option.")
    allow_other: Literal[True] = True
    frontier_gap_id: str = Field(description="The OPEN ledger gap this question targets, or NONE when no gap is open.")

    @model_validator(mode="after")
    def _three_options(self) -> CandidateQuestion:
        if sorted(self.options) != ["A", "B", "C"] or any(not v.strip() for v in self.options.values()):
            raise ValueError("exactly three non-empty options A, B, C are required")
        if len({normalise(v) for v in self.options.values()}) < 3:
            raise ValueError("the options must be distinct")
        return self


class CandidateInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    brief: str
    transcript: list[PublicTurn] = []
    open_gaps: list[GapRow] = Field(default=[], description="The OPEN ledger gaps; every candidate binds to one.")
    ledger: bool = Field(default=True, description="False without Stage 1: there is no ledger, so what is still open "
                                                   "must be read from the transcript.")
    attempt: int = 1
    feedback: str = ""
    """Why the previous attempt was rejected (binding or format), empty on the first attempt."""


class CandidateOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    decision: Literal["ASK", "READY"]
    C1: ClarificationState
    C2: ClarificationState
    C3: ClarificationState
    Q1: CandidateQuestion | None = None
    Q2: CandidateQuestion | None = None
    Q3: CandidateQuestion | None = None
    deep_search_decision_evidence: str = ""
    evidence: str = ""
    summary: str = ""

    @model_validator(mode="after")
    def _shape(self) -> CandidateOutput:
        if self.decision == "ASK" and not (self.Q1 and self.Q2 and self.Q3):
            raise ValueError("ASK needs three candidate questions Q1, Q2, Q3")
        if self.decision == "READY" and not self.summary.strip():
            raise ValueError("READY needs a summary")
        return self

    def questions(self) -> dict[str, CandidateQuestion]:
        return {k: q for k, q in (("Q1", self.Q1), ("Q2", self.Q2), ("Q3", self.Q3)) if q is not None}


def _ranked(rows: Sequence[GapRow]) -> list[GapRow]:
    return sorted(rows, key=lambda r: (category_rank(r.category), r.gap_id))


def _choice_question(inventory: GapInventory, row: GapRow, brief: str, frontier_id: str) -> CandidateQuestion:
    gap = template_for(inventory, row, brief)
    question = narrow_question(gap, "mc_d") if row.ask_count else gap.question
    return CandidateQuestion(question=question, options=gap.options, frontier_gap_id=frontier_id)


def unguided_gaps(inventory: GapInventory, brief: str, transcript: Sequence[PublicTurn]) -> list[GapCandidate]:
    """What an agent without gap guidance still has in view: nothing keeps a list of gaps for it, so (as the local
    generic agents do) it covers each gap category once, with the highest-priority unasked gap of a category it has
    not asked about yet."""
    asked = asked_texts(transcript)
    gaps = all_gaps(inventory, brief)
    done = {g.key for g in gaps if any(normalise(v) in asked for v in gap_question_variants(g))}
    covered = {g.category for g in gaps if g.key in done}
    return [g for g in gaps if g.key not in done and g.category not in covered]


def _free_rows(inventory: GapInventory, brief: str, transcript: Sequence[PublicTurn], ledger: bool) -> list[GapRow]:
    """Without open ledger gaps: the agent's own view of what is still open. With a ledger whose gaps were all asked,
    the free reading of a generic agent (one gap per category); without a ledger, the transcript reading."""
    if ledger:
        found = [(g, 0) for g in unguided_gaps(inventory, brief, transcript)]
    else:
        found = [(t.gap, t.asks) for t in transcript_open_gaps(inventory, brief, transcript)]
    return [GapRow(gap_id="NONE", category=g.category, description=g.description, evidence_quote=g.evidence_quote,
                   created_turn=1, updated_turn=1, ask_count=asks) for g, asks in found]


def _assumption_rows(inventory: GapInventory, brief: str, transcript: Sequence[PublicTurn]) -> list[GapRow]:
    """Free rows (bound to NONE) for the assumption checks of :func:`unconfirmed_assumptions`; ``ask_count`` 1 makes
    their question the narrower re-ask."""
    return [GapRow(gap_id="NONE", category=g.category, description=g.description, evidence_quote=g.evidence_quote,
                   created_turn=1, updated_turn=1, ask_count=1)
            for g in unconfirmed_assumptions(inventory, brief, transcript)]


def candidate_local(inp: CandidateInput, domain: DomainContext) -> CandidateOutput:
    free = [] if inp.open_gaps else _free_rows(domain.gaps, inp.brief, inp.transcript, inp.ledger)
    if not inp.open_gaps and inp.ledger:  # the readiness review: no READY while its states list such an assumption
        free += _assumption_rows(domain.gaps, inp.brief, inp.transcript)
    rows = _ranked(inp.open_gaps or free)
    unresolved = [r.description for r in rows]
    state = build_state(domain.gaps, inp.brief, inp.transcript, unresolved)
    if not rows:
        summary = compose_summary(domain.gaps, inp.brief, inp.transcript, [])
        return CandidateOutput(decision="READY", C1=state, C2=state, C3=state,
                               evidence="No open gap remains in the ledger or the request.", summary=summary)
    top = rows[:3]
    while len(top) < 3:  # fewer than three open gaps: pad with the narrower variant of the leading gap
        top.append(top[0].model_copy(update={"ask_count": top[0].ask_count + 1}))
    questions = []
    for row in top:
        frontier = row.gap_id if inp.open_gaps else "NONE"
        questions.append(_choice_question(domain.gaps, row, inp.brief, frontier))
    states = [state.model_copy(update={"unresolved_business_assumptions": [r.description] + [
        u for u in unresolved if u != r.description]}) for r in top]
    evidence = "Open: " + "; ".join(f"{r.gap_id} ({r.category}) {r.description}" for r in rows[:5])
    return CandidateOutput(decision="ASK", C1=states[0], C2=states[1], C3=states[2], Q1=questions[0], Q2=questions[1],
                           Q3=questions[2], deep_search_decision_evidence=evidence)


CANDIDATE_SPEC = RoleSpec(name="or_candidate_agent", input_model=CandidateInput, output_model=CandidateOutput,
                          local=candidate_local, reads_domain=True)
ROLES.add(CANDIDATE_SPEC.name, CANDIDATE_SPEC)


# ---- selector ----------------------------------------------------------------------------------------------------


class SelectorCandidate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question_id: Literal["Q1", "Q2", "Q3"]
    question: str
    options: dict[str, str]
    frontier_gap_id: str


class FrontierGap(BaseModel):
    model_config = ConfigDict(extra="forbid")

    gap_id: str
    category: str
    description: str


class SelectorInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    transcript: list[PublicTurn] = []
    states: list[ClarificationState] = Field(default=[], description="The candidate clarification states C1-C3.")
    candidates: list[SelectorCandidate]
    eligible_frontier: list[FrontierGap] = Field(default=[], description="The OPEN gaps a candidate may bind to.")
    attempt: int = 1


class SelectorOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    evaluation_process: str
    selected_question_id: Literal["Q1", "Q2", "Q3"]


def _candidate_category(c: SelectorCandidate, frontier: dict[str, FrontierGap]) -> str:
    gap = frontier.get(c.frontier_gap_id)
    return gap.category if gap is not None else guess_category(c.question)


def selector_local(inp: SelectorInput) -> SelectorOutput:
    frontier = {g.gap_id: g for g in inp.eligible_frontier}
    eligible = [c for c in inp.candidates if not frontier or c.frontier_gap_id in frontier] or inp.candidates
    asked = asked_texts(inp.transcript)
    fresh = [c for c in eligible if normalise(c.question) not in asked] or eligible
    best = min(fresh, key=lambda c: (category_rank(_candidate_category(c, frontier)), c.question_id))
    ranks = ", ".join(f"{c.question_id}={_candidate_category(c, frontier)}" for c in inp.candidates)
    return SelectorOutput(evaluation_process=f"Priority objective > rules > scope/entities/time; candidates: {ranks}.",
                          selected_question_id=best.question_id)


SELECTOR_SPEC = RoleSpec(name="or_question_selector", input_model=SelectorInput, output_model=SelectorOutput,
                         local=selector_local)
ROLES.add(SELECTOR_SPEC.name, SELECTOR_SPEC)


# ---- InterOPT without Stage 2 (choice): gap search and one question in one call -------------------------------------


class DirectInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    brief: str
    transcript: list[PublicTurn] = []
    ledger: list[GapRow] = []
    attempt: int = 1
    feedback: str = ""


class DirectOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    decision: Literal["ASK", "READY"]
    search_summary: str = ""
    updates: list[GapUpdate] = []
    selected_gap_ref: str = Field(default="", description="An existing OPEN gap id (G###) or N1-N3 for the n-th "
                                                          "new gap in updates.")
    question: str = ""
    options: OptionSet = {}
    allow_other: Literal[True] = True
    summary: str = ""

    @model_validator(mode="after")
    def _shape(self) -> DirectOutput:
        if self.decision == "ASK":
            if not self.question.strip() or sorted(self.options) != ["A", "B", "C"]:
                raise ValueError("ASK needs a question and exactly three options A, B, C")
            if not re.fullmatch(r"G\d{3,}|N[1-3]", self.selected_gap_ref):
                raise ValueError("selected_gap_ref must be G### or N1-N3")
        elif not self.summary.strip():
            raise ValueError("READY needs a summary")
        return self


def direct_local(inp: DirectInput, domain: DomainContext) -> DirectOutput:
    new = inventory_new_gaps(domain.gaps, inp.brief, inp.transcript, inp.ledger)[:MAX_NEW_PER_TURN]
    updates = [GapUpdate(category=g.category, description=g.description, evidence_quote=g.evidence_quote) for g in new]
    pool = [(r.gap_id, r) for r in inp.ledger if r.status == "OPEN"]
    pool += [(f"N{i}", GapRow(gap_id=f"N{i}", category=u.category, description=u.description,
                              evidence_quote=u.evidence_quote, created_turn=1, updated_turn=1))
             for i, u in enumerate(updates, 1)]
    summary = f"{len(updates)} new gap(s)" + (": " + "; ".join(u.description for u in updates) if updates else "")
    if not pool:
        return DirectOutput(decision="READY", search_summary=summary,
                            summary=compose_summary(domain.gaps, inp.brief, inp.transcript, []))
    ref, row = pool[0]  # no candidates, no selector: the oldest OPEN gap, in the ledger's order of discovery
    q = _choice_question(domain.gaps, row, inp.brief, ref)
    return DirectOutput(decision="ASK", search_summary=summary, updates=updates, selected_gap_ref=ref,
                        question=q.question, options=q.options)


DIRECT_SPEC = RoleSpec(name="or_direct_question", input_model=DirectInput, output_model=DirectOutput,
                       local=direct_local, reads_domain=True)
ROLES.add(DIRECT_SPEC.name, DIRECT_SPEC)


# ---- answer-gap alignment (our aligned mode) -----------------------------------------------------------------------


class AlignmentInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    brief: str = Field(default="", description="The public request (the local backend reads its entity names).")
    gap_category: str
    gap_description: str
    question: str
    options: dict[str, str] = {}
    reply: str = Field(description="The user's public reply, exactly as the agent saw it.")


class AlignmentOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    settled: bool = Field(description="True when the reply pins down the gap firmly enough to model it.")
    rationale: str


def alignment_local(inp: AlignmentInput, domain: DomainContext) -> AlignmentOutput:
    verdict = alignment.judge(inventory=domain.gaps, brief=inp.brief, category=inp.gap_category,
                              description=inp.gap_description, question=inp.question, options=inp.options,
                              reply=inp.reply)
    return AlignmentOutput(settled=verdict.settled, rationale=verdict.rationale)


ALIGNMENT_SPEC = RoleSpec(name="or_gap_alignment", input_model=AlignmentInput, output_model=AlignmentOutput,
                          local=alignment_local, reads_domain=True)
ROLES.add(ALIGNMENT_SPEC.name, ALIGNMENT_SPEC)


# ---- Open: Stage 1 gap search ------------------------------------------------------------------------------------


class OpenGap(BaseModel):
    model_config = ConfigDict(extra="forbid")

    gap_id: str
    category: OpenCategory
    description: str
    direct_question: str = Field(min_length=1)
    source_status: SourceStatus
    why_material: str


class OpenGapSearchInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    brief: str
    transcript: list[PublicTurn] = []


class OpenGapSearchOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    search_summary: str
    ready_to_model: bool
    gaps: list[OpenGap] = Field(default=[], max_length=5, description="1-5 gaps by priority; empty only when "
                                                                      "ready_to_model is true.")

    @model_validator(mode="after")
    def _gaps_or_ready(self) -> OpenGapSearchOutput:
        if not self.gaps and not self.ready_to_model:
            raise ValueError("list at least one gap unless ready_to_model is true")
        return self


WHY_MATERIAL = {
    "objective": "Without the goal the model has nothing to optimise.",
    "feasible_rule": "A missing rule changes which plans are feasible.",
    "hard_soft_policy": "Whether a requirement is strict changes feasibility and the objective.",
    "decision_scope": "The decisions and their domains define the variables.",
    "entity_relation": "Links between entities add constraints.",
    "time_boundary": "Timing rules change how periods connect.",
}


def unsettled_inventory(inventory: GapInventory, brief: str, transcript: Sequence[PublicTurn]) -> list[GapCandidate]:
    """Inventory gaps whose question (or a narrower variant) was never asked: each gap is asked at most once, so a
    reply that only says the point needs confirmation does not make the search loop on it."""
    asked = asked_texts(transcript)
    return [g for g in stage1_gaps(inventory, brief, transcript) if not settled_by_transcript(g, transcript, asked)]


def to_open_gap(g: GapCandidate, status: SourceStatus = "not stated") -> OpenGap:
    category = TO_OPEN.get(g.category, g.category)
    return OpenGap(gap_id=g.key, category=category, description=g.description, direct_question=g.question,
                   source_status=status, why_material=WHY_MATERIAL[category])


def open_gap_search_local(inp: OpenGapSearchInput, domain: DomainContext) -> OpenGapSearchOutput:
    gaps = unsettled_inventory(domain.gaps, inp.brief, inp.transcript)[:5]
    if not gaps:
        return OpenGapSearchOutput(search_summary="The request and the answers so far settle every gap found.",
                                   ready_to_model=True)
    return OpenGapSearchOutput(search_summary="Open: " + "; ".join(g.description for g in gaps), ready_to_model=False,
                               gaps=[to_open_gap(g) for g in gaps])


OPEN_GAP_SEARCH_SPEC = RoleSpec(name="or_open_gap_search", input_model=OpenGapSearchInput,
                                output_model=OpenGapSearchOutput, local=open_gap_search_local, reads_domain=True)
ROLES.add(OPEN_GAP_SEARCH_SPEC.name, OPEN_GAP_SEARCH_SPEC)


# ---- Open: Stage 2 candidate questions ---------------------------------------------------------------------------


class OpenCandidate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1)
    why_it_matters: str
    answerability: Literal["high", "medium", "low"]
    overask_risk: Literal["low", "medium", "high"]
    selection_score: float = Field(ge=0.0, le=1.0)


class OpenCandidateInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    brief: str
    transcript: list[PublicTurn] = []
    guidance: OpenGapSearchOutput | None = Field(default=None, description="Private Stage 1 gap-search guidance; "
                                                                           "absent without Stage 1.")
    attempt: int = 1
    feedback: str = ""


class OpenCandidateOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    decision: Literal["ASK", "READY"]
    candidates: list[OpenCandidate] = []
    public_question: str = Field(default="", description="ASK: one single question, no list, nothing about solvers, "
                                                         "formats or code.")
    formulatable_confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    confidence_rationale: str = ""
    summary: str = ""

    @model_validator(mode="after")
    def _shape(self) -> OpenCandidateOutput:
        if self.decision == "ASK":
            if len(self.candidates) != 3 or not self.public_question.strip():
                raise ValueError("ASK needs exactly three candidates and a public_question")
        elif self.formulatable_confidence is None or not self.summary.strip():
            raise ValueError("READY needs formulatable_confidence and a summary")
        return self


def open_confidence(transcript: Sequence[PublicTurn], remaining: int) -> float:
    """Local formulatable confidence: 0.9, less 0.15 per point that still needs confirmation, within [0.1, 0.95]."""
    pending = sum(qa.non_answer for qa in qa_pairs(transcript)) + remaining
    return round(min(0.95, max(0.1, 0.9 - 0.15 * pending)), 2)


def open_candidate_local(inp: OpenCandidateInput, domain: DomainContext) -> OpenCandidateOutput:
    guidance = inp.guidance
    if guidance is None:
        found = sorted(transcript_open_gaps(domain.gaps, inp.brief, inp.transcript),
                       key=lambda t: category_rank(t.gap.category))
        own = [to_open_gap(t.gap, "partially answered" if t.asks else "not stated") for t in found[:5]]
        guidance = OpenGapSearchOutput(search_summary="own reading of the request", ready_to_model=not own, gaps=own)
    elif guidance.ready_to_model or not guidance.gaps:  # the readiness review (as the choice agent's)
        checks = unconfirmed_assumptions(domain.gaps, inp.brief, inp.transcript)
        if checks:
            guidance = OpenGapSearchOutput(search_summary="Unconfirmed assumptions: " + "; ".join(
                g.description for g in checks), ready_to_model=False,
                gaps=[to_open_gap(g, "partially answered") for g in checks[:5]])
    gaps = list(guidance.gaps)
    if guidance.ready_to_model or not gaps:
        return OpenCandidateOutput(decision="READY", formulatable_confidence=open_confidence(inp.transcript, 0),
                                   confidence_rationale="No material gap is left unasked.",
                                   summary=compose_summary(domain.gaps, inp.brief, inp.transcript, []))
    asked = asked_texts(inp.transcript)
    inventory = {g.key: g for g in stage1_gaps(domain.gaps, inp.brief, inp.transcript)}
    candidates: list[OpenCandidate] = []
    for rank, gap in enumerate(sorted(gaps, key=lambda g: category_rank(g.category))[:3]):
        question = gap.direct_question
        if gap.source_status == "partially answered" and gap.gap_id in inventory:
            question = narrow_question(inventory[gap.gap_id], "open")
        if normalise(question) in asked:
            continue
        candidates.append(OpenCandidate(question=question, why_it_matters=gap.why_material, answerability="high",
                                        overask_risk="low", selection_score=round(0.9 - 0.2 * rank, 2)))
    if not candidates:
        return OpenCandidateOutput(decision="READY", formulatable_confidence=open_confidence(inp.transcript, len(gaps)),
                                   confidence_rationale="Every remaining gap was already asked.",
                                   summary=compose_summary(domain.gaps, inp.brief, inp.transcript,
                                                           [g.description for g in gaps]))
    lead = inventory.get(min(gaps, key=lambda g: category_rank(g.category)).gap_id)
    while len(candidates) < 3:  # pad with lower-scored assumption checks, never selected over a direct question
        text = narrow_question(lead, "open") if lead else f"Can you confirm this point: {candidates[0].question}"
        candidates.append(OpenCandidate(question=text, why_it_matters="A narrower check of the leading gap.",
                                        answerability="medium", overask_risk="medium",
                                        selection_score=round(0.3 - 0.1 * len(candidates), 2)))
    best = max(candidates, key=lambda c: c.selection_score)
    return OpenCandidateOutput(decision="ASK", candidates=candidates, public_question=best.question)


OPEN_CANDIDATE_SPEC = RoleSpec(name="or_open_candidate_agent", input_model=OpenCandidateInput,
                               output_model=OpenCandidateOutput, local=open_candidate_local, reads_domain=True)
ROLES.add(OPEN_CANDIDATE_SPEC.name, OPEN_CANDIDATE_SPEC)

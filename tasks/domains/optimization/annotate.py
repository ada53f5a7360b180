"""``slot_annotator``: the rubric of one hidden unit (name, severity, questions, hit rule, failure modes, answer).

The local backend reads the hidden unit's kind and wording and fills templates:

- the *shape* of the fact (an upper bound, a floor, an exact requirement, a logical link between choices, a
  prohibition, a timing or order rule, integrality, a goal ranking, an objective) picks the question, hit-rule and
  failure-mode templates;
- the *topic* (the unit's content words minus numbers and bound words) fills them, so no question states the
  hidden number or the direction of the bound;
- *severity* follows or-clarify.md §1.3: an objective, a ranking of goals, or the one rule that forces activity
  under a minimisation (demand to meet, customers to cover) changes the problem (P0); a secondary objective, a
  business rule or a timing assumption leaves the model materially wrong (P1); a bound the visible units already
  imply, a floor on the very quantity being maximised, or a rounding/reporting detail is minor (P2).

Deterministic; the only model it touches is the cached MiniLM embedder (through ``eligibility``'s implied check).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tasks.construction.slot_names import FILLER, MAX_NAME_WORDS, OBJECTIVE_VERB, slot_name
from tasks.domains.optimization.eligibility import LOWER, UPPER, eligibility, numbers
from tasks.records import Unit, require_text
from tasks.roles.base import RoleSpec
from tasks.roles.registry import ROLES
from tasks.roles.slot_hit import ENTITY_HEADS

SNAKE = re.compile(r"^[a-z0-9]+(?:_[a-z0-9]+){0,5}$")
SNAKE_SCHEMA = r"^[a-z0-9]{1,32}(_[a-z0-9]{1,32}){0,5}$"
"""``SNAKE`` as the sent schema states it, in the regex subset llama.cpp's JSON-schema converter reads: no ``(?:``
(it refuses the whole schema, and llama-cpp-python's server then falls back to free JSON without saying so), and
words bounded so a grammar cannot loop inside the name. Validation still uses ``SNAKE``."""
MAX_TOPIC_WORDS = 7


class SlotAnnotateInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    problem_id: str
    unit: Unit = Field(description="The hidden unit.")
    units: list[Unit] = Field(description="All units of the complete problem, visible and hidden, in order.")
    visible_brief: str = ""


class SlotAnnotation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="snake_case, at most 6 words, taken from the unit's content words.",
                      json_schema_extra={"pattern": SNAKE_SCHEMA})  # a grammar-constrained server then writes it so
    severity: Literal["P0", "P1", "P2"]
    severity_reason: str = Field(min_length=1)
    reference_questions: list[str] = Field(min_length=2, description="Questions that target the fact without "
                                                                     "stating it.")
    semantic_hit_rule: str = Field(min_length=1)
    failure_modes: list[str] = Field(min_length=1, description="Silent wrong assumptions an agent would make.")
    simulator_answer: str = Field(min_length=1, description="The unit's fact in plain business language, nothing "
                                                            "more.")

    @field_validator("name")
    @classmethod
    def _snake(cls, value: str) -> str:
        if not SNAKE.match(value):
            raise ValueError(f"name {value!r} is not snake_case with at most {MAX_NAME_WORDS} words")
        return value

    @field_validator("severity_reason", "semantic_hit_rule", "simulator_answer")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        return require_text(value, "is blank")

    @field_validator("reference_questions", "failure_modes")
    @classmethod
    def _no_blank_items(cls, values: list[str]) -> list[str]:
        if any(not v.strip() for v in values):
            raise ValueError("contains a blank entry")
        return values


# ---- wording ------------------------------------------------------------------------------------------------------

IDENT = re.compile(r"[A-Z]|[IVX]{1,4}|\d{1,2}")
HEAD = re.compile(rf"(?i:({ENTITY_HEADS}|quarter|process|stage|vat|type|table)(s|es)?)")
"""A token that names an entity after its head noun (``product II``, ``supplier A``, ``machine 2``)."""
NEGATION = re.compile(r"\b(not|no|never|cannot|can't|won't|nor|prohibit\w*|forbid\w*)\b", re.IGNORECASE)

MINIMISE = re.compile(r"\b(minimi[sz]\w*|reduc\w*|lowest|smallest|as (low|little|few) as possible)\b", re.IGNORECASE)
PRIORITY = re.compile(r"\b(priorit\w*|lexicographic\w*|preemptive|rank(ed|ing)? (the )?(goals|objectives))\b",
                      re.IGNORECASE)
DEMAND = re.compile(r"\bdemands?\b", re.IGNORECASE)
MEET = re.compile(r"\b(must|shall|has to|have to|needs? to)\b[^.;]*\b(met|meet|satisf\w*|fulfil\w*|equal\w*|"
                  r"cover\w*)\b|\b(fully|exactly|in full)\b", re.IGNORECASE)
COVERAGE = re.compile(r"\bat least one\b", re.IGNORECASE)
COVERAGE_CUE = re.compile(r"\b(within|distance|cover\w*|serve\w*|reach\w*)\b", re.IGNORECASE)
LOGICAL = re.compile(r"\b(if|then|either|unless|only if|not both|mutual\w*|exclusive\w*|depend\w*|requires? (that|"
                     r"also)|at the same time|together with)\b", re.IGNORECASE)
TIMING = re.compile(r"\b(beginning|start\w*|end of|before|after|during|until|first|then|sequen\w*|order|precede\w*|"
                    r"follow\w*|subsequent|period|horizon|timing|immediately|consecutive|in advance|lead time)\b",
                    re.IGNORECASE)
INTEGRAL = re.compile(r"\b(whole|integer\w*|integral|fraction\w*|divisible|any quantity|continuous|discrete|"
                      r"indivisible|units? of \d+|packs?|batches)\b", re.IGNORECASE)
EQUALITY = re.compile(r"\b(exactly|equal\w*|fully|precisely|must be \d[\d,.]*|in full)\b", re.IGNORECASE)
REPORTING = re.compile(r"\b(round\w*|decimal\w*|report\w*|display\w*|format\w*|express\w* in|rounded|nearest)\b",
                       re.IGNORECASE)
MEASURES = ("cost", "profit", "revenue", "income", "earning", "return", "time", "distance", "pollution", "waste")


def topic(content: str) -> str:
    """The unit's subject in its own words, without amounts or bound words: what a question may name. Entity
    identifiers after a kept word stay (``product II``, ``supplier A``)."""
    text = re.sub(r"\$[^$]*\$", " ", content)
    words: list[str] = []
    last_kept = False
    for token in re.findall(r"[A-Za-z][A-Za-z0-9'’\-]*|\d+(?:[,.]\d+)*", text):
        word = token.lower().strip("-'’")
        if last_kept and IDENT.fullmatch(token) and (not token.isdigit() or HEAD.fullmatch(words[-1])):
            words.append(token.upper())
            last_kept = False
        elif word and not word[0].isdigit() and word not in FILLER and len(word) > 1:
            words.append(word)
            last_kept = True
        else:
            last_kept = False
    return " ".join(dict.fromkeys(words[:MAX_TOPIC_WORDS])) or "this point"


def shape(unit: Unit) -> str:
    """The kind of fact the unit states, which picks the templates."""
    text = unit.content
    if PRIORITY.search(text):
        return "priority"
    if unit.kind == "objective":
        return "objective"
    if REPORTING.search(text):
        return "reporting"
    if INTEGRAL.search(text) and not (UPPER.search(text) or LOWER.search(text)):
        return "integral"
    if re.search(r"\bif\b|\beither\b|\bnot both\b|\bmutual", text, re.IGNORECASE):
        return "logical"
    if NEGATION.search(text):
        return "prohibition"
    if TIMING.search(text) and not numbers(text) - {"0"}:
        return "timing"
    return next((kind for pattern, kind in _PLAIN_SHAPES if pattern.search(text)), "rule")


_PLAIN_SHAPES = ((EQUALITY, "equal"), (UPPER, "upper"), (LOWER, "lower"), (LOGICAL, "logical"), (TIMING, "timing"),
                 (NEGATION, "prohibition"))
"""After the special cases in :func:`shape`: the first cue found names the shape (none: ``rule``)."""


# ---- severity -----------------------------------------------------------------------------------------------------

def _objectives(units: Sequence[Unit]) -> list[Unit]:
    return [u for u in units if u.kind == "objective"]


def _forcing(unit: Unit) -> bool:
    """A rule that forces activity (meet a demand, cover every customer): without it, doing nothing is feasible."""
    text = unit.content
    if re.search(r"\b(not exceed|cannot exceed|at most|no more than)\b", text, re.IGNORECASE):
        return False
    return bool(DEMAND.search(text) and MEET.search(text)) or bool(COVERAGE.search(text) and COVERAGE_CUE.search(text))


def _objective_measures(units: Sequence[Unit]) -> set[str]:
    text = " ".join(u.content for u in _objectives(units)).lower()
    return {m for m in MEASURES if m in text}


def severity(unit: Unit, units: Sequence[Unit], implied_by: str | None) -> tuple[str, str]:
    """``(severity, reason)`` per or-clarify.md §1.3."""
    about = topic(unit.content)
    if PRIORITY.search(unit.content):
        return "P0", ("The ranking of the goals decides which plan is optimal; without it the meaning of the "
                      "objective is undefined.")
    if unit.kind == "objective":
        objectives = _objectives(units)
        if objectives and objectives[0].id != unit.id:
            return "P1", (f"A secondary goal ({about}) beside the main objective: without it the model stays "
                          "solvable but optimises something materially different from what the business wants.")
        return "P0", ("Without the objective the agent cannot tell what a good plan is: the optimisation direction "
                      "and the meaning of the model change.")
    if implied_by:
        return "P2", (f"The visible facts already pin this down ({implied_by}); missing it affects only how a bound "
                      "is read, not the core model.")
    if REPORTING.search(unit.content):
        return "P2", f"A rounding or reporting detail about {about}; the core model stays correct without it."
    measures = _objective_measures(units)
    text = unit.content.lower()
    if unit.kind == "constraint" and measures and any(m in text for m in measures) and LOWER.search(text) \
            and not MINIMISE.search(" ".join(u.content for u in _objectives(units))):
        return "P2", ("A floor on the very quantity being maximised; it rarely binds, so the model stays correct "
                      "in most cases.")
    minimising = bool(MINIMISE.search(" ".join(u.content for u in _objectives(units))))
    if unit.kind == "constraint" and minimising and _forcing(unit):
        forcing = [u for u in units if u.kind == "constraint" and _forcing(u)]
        if len(forcing) == 1:
            return "P0", (f"This is the rule that ties the plan to what must be delivered ({about}); without it the "
                          "feasible set changes and doing little or nothing can look optimal.")
    if unit.kind == "assumption":
        return "P1", (f"A wrong guess about {about} makes the model likely wrong, although the type of problem "
                      "stays the same.")
    return "P1", (f"Leaving out this rule on {about} makes the model materially incomplete: the plan it yields can "
                  "break a real business requirement.")


# ---- templates ----------------------------------------------------------------------------------------------------

def _alternative(measure_text: str) -> str:
    text = measure_text.lower()
    if "cost" in text or "expense" in text:
        return "profit or service level"
    if "profit" in text or "revenue" in text or "income" in text:
        return "cost or output volume"
    return "total cost or total profit"


def questions(unit: Unit, kind_of_fact: str) -> list[str]:
    about = topic(unit.content)
    templates = {
        "objective": [
            "What is the main objective of this plan: which single quantity should we minimise or maximise?",
            f"Should the plan be judged on {about}, or on something else such as {_alternative(about)}?",
        ],
        "priority": [
            "If the goals conflict, in what order should they be prioritised?",
            f"How should the goals around {about} be ranked against each other: is one strictly more important?",
        ],
        "upper": [
            f"Is there an upper limit on {about}? If so, what is it?",
            f"How much is allowed for {about}: is it capped, or unrestricted?",
        ],
        "lower": [
            f"Is there a minimum level required for {about}?",
            f"Do we have to reach a certain amount for {about}, or could it be zero?",
        ],
        "equal": [
            f"Must {about} be met exactly, or is some shortage or excess acceptable?",
            f"Is there a fixed required amount for {about}, and does it have to be hit precisely?",
        ],
        "logical": [
            f"Are there dependencies between the choices around {about}: does picking one force or rule out another?",
            f"If we choose one option involving {about}, does that restrict the other choices?",
        ],
        "timing": [
            f"When exactly does {about} happen within the planning horizon?",
            f"What timing or order rules apply to {about}?",
        ],
        "integral": [
            f"Must {about} come in whole units, or can we plan fractional amounts?",
            f"Are there any lot sizes or indivisibility rules for {about}?",
        ],
        "reporting": [
            f"How should results for {about} be rounded or reported?",
            f"Is there a required precision or format for {about}?",
        ],
        "prohibition": [
            f"Is anything ruled out regarding {about}?",
            f"Are there restrictions on {about} that the plan must respect?",
        ],
        "rule": [
            f"Is there a business rule about {about} that the plan must follow?",
            f"What restrictions apply to {about}?",
        ],
    }
    out = list(templates[kind_of_fact])
    if unit.kind == "assumption" and kind_of_fact not in ("objective", "priority"):
        out.append(f"What should we assume about {about}?")
    return out


def hit_rule(unit: Unit, kind_of_fact: str) -> str:
    about = topic(unit.content)
    focus = {
        "objective": "what the plan should optimise (its goal or objective)",
        "priority": f"how the goals around {about} are ranked",
        "upper": f"whether there is a limit or cap on {about}",
        "lower": f"whether a minimum is required for {about}",
        "equal": f"whether {about} must be met exactly",
        "logical": f"how the choices around {about} depend on or exclude each other",
        "timing": f"the timing or order of {about}",
        "integral": f"whether {about} must be whole units",
        "reporting": f"how {about} is rounded or reported",
        "prohibition": f"what is not allowed regarding {about}",
        "rule": f"the rule governing {about}",
    }[kind_of_fact]
    return f"The agent asks specifically about {focus}; a general question about other requirements does not count."


def failure_modes(unit: Unit, kind_of_fact: str) -> list[str]:
    about = topic(unit.content)
    modes = {
        "objective": [f"Optimising a different goal, e.g. {_alternative(about)}, instead of the intended one",
                      "Writing a model with no clear objective"],
        "priority": ["Weighting all goals equally instead of ranking them", "Dropping the lower-ranked goals"],
        "upper": [f"Leaving {about} without a limit", "Using a limit from a similar item instead of the real one"],
        "lower": [f"Allowing {about} to fall to zero", "Treating the minimum as optional"],
        "equal": [f"Treating {about} as an inequality, allowing shortage or excess",
                  "Ignoring the requirement altogether"],
        "logical": [f"Treating the choices around {about} as independent", "Reversing the direction of the link"],
        "timing": [f"Assuming a different timing for {about} (e.g. end instead of start of a period)",
                   "Ignoring the order in which things must happen"],
        "integral": [f"Treating {about} as continuous when it comes in whole units, or the reverse"],
        "reporting": [f"Reporting {about} at the wrong precision or in the wrong form"],
        "prohibition": [f"Allowing what is ruled out regarding {about}"],
        "rule": [f"Ignoring the rule on {about}", "Replacing it with a convenient but wrong assumption"],
    }[kind_of_fact]
    return list(modes)


def simulator_answer(unit: Unit) -> str:
    text = re.sub(r"\s+", " ", unit.content).strip()
    if unit.kind == "objective" and OBJECTIVE_VERB.match(text):
        return f"Our goal is to {text[0].lower()}{text[1:]}"
    return text


# ---- the role -----------------------------------------------------------------------------------------------------

def _implied(inp: SlotAnnotateInput) -> str | None:
    units = list(inp.units) if any(u.id == inp.unit.id for u in inp.units) else [*inp.units, inp.unit]
    for verdict in eligibility(units):
        if verdict.unit_id == inp.unit.id and not verdict.eligible and verdict.reason.startswith(("implied",
                                                                                                  "restates")):
            return verdict.reason
    return None


def annotate(inp: SlotAnnotateInput, implied_by: str | None) -> SlotAnnotation:
    unit = inp.unit
    kind_of_fact = shape(unit)
    level, reason = severity(unit, inp.units, implied_by)
    return SlotAnnotation(
        name=slot_name(unit),
        severity=level,
        severity_reason=reason,
        reference_questions=questions(unit, kind_of_fact),
        semantic_hit_rule=hit_rule(unit, kind_of_fact),
        failure_modes=failure_modes(unit, kind_of_fact),
        simulator_answer=simulator_answer(unit),
    )


def local(inp: SlotAnnotateInput) -> SlotAnnotation:
    return annotate(inp, _implied(inp))


def local_batch(inputs: Sequence[SlotAnnotateInput]) -> list[SlotAnnotation]:
    from tasks.llm.embeddings import encode

    encode(list(dict.fromkeys(u.content for inp in inputs for u in inp.units)))  # one embedding call, then cached
    return [local(inp) for inp in inputs]


SPEC = RoleSpec(name="slot_annotator", input_model=SlotAnnotateInput, output_model=SlotAnnotation, local=local,
                local_batch=local_batch)
ROLES.add(SPEC.name, SPEC)

"""``slot_hit_judge``: did the agent's questions (or explicit assumption checks) target one hidden slot?

Per OR-Clarify §3: ``yes`` = the agent clearly asked about the slot, ``partial`` = it touched a related issue
without the slot's key meaning, ``no`` = neither; vague catch-all questions earn nothing.

The local backend scores every agent question (and each of its sentences) against the slot's rubric with a
small logistic model over embedding similarities to the hit rule, the hidden unit, the name and the failure
modes, both raw and relative to how close the slot's own reference questions sit to those texts (a per-slot
scale), plus content-word overlap, an objective-question cue and an entity-conflict cue (the question names
``product A`` while the slot is about ``product B``). A near-duplicate of a reference question is a hit. The
best-scoring piece is the evidence. The text helpers here are shared with the simulated users (``or_user``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from tasks.llm.embeddings import encode
from tasks.records import Case, HiddenSlot
from tasks.roles.base import RoleSpec
from tasks.roles.registry import ROLES

# ---- text features -----------------------------------------------------------------------------------------------

STOPWORDS = frozenset("""
a an the of to in on at for by with and or nor but is are be been being was were do does did done can could should
would will shall may might must there their them they this that these those it its we our us you your i me my any
some what which who whom how when where whether if than then as from into onto about per each every all also just
only not no yes such other another both either neither so too very more most less least same own here eg e g etc
ie i.e like agent agents question questions ask asks asked asking explicitly specifically clearly directly inquire
inquires inquiring inquiry mention mentions mentioned regarding need needs needed have has had get gets exactly
really actually please tell know let understand confirm confirms whether something anything else thing things
""".split())

CATCH_ALL = re.compile(
    r"\b(anything else|something else i should|what else|any other (constraints?|requirements?|information|details?|"
    r"considerations?|rules?|things?|factors?|restrictions?)|is there anything|anything (i|we) should know|"
    r"any (additional|further|more) (information|details?|constraints?|requirements?))\b",
    re.I,
)
OBJECTIVE_Q = re.compile(
    r"\b(objectives?|goals?|aim(ing)?|optimi[sz]\w*|maximi[sz]\w*|minimi[sz]\w*|targets?|achieve|"
    r"trying to (get|do)|success|as (little|much|low|high) as possible|best (plan|outcome)|focus(ing)? on|"
    r"(get|getting|make|making|earn|earning) the (most|least|highest|lowest|largest|smallest))\b",
    re.I,
)
OBJECTIVE_UNIT = re.compile(r"^\s*(maximi[sz]e|minimi[sz]e|the (objective|goal)|objective|goal)\b", re.I)
OBJECTIVE_MENTION = re.compile(
    r"\b(objectives?|goals?|priorit\w*|targets?|optimi[sz]\w*|maximi[sz]\w*|minimi[sz]\w*)\b", re.I
)
RULE_PREFIX = re.compile(
    r"^\s*(the\s+)?agent(['’]s)?(\s+question)?\s+(must\s+|should\s+)?(explicitly\s+|specifically\s+|directly\s+|"
    r"clearly\s+)?(express(es)? the need to know|asks?|inquires?|mentions?|requests?|confirms?|raises?)\s+"
    r"(explicitly\s+|specifically\s+)?",
    re.I,
)
ENTITY_HEADS = (
    "model|part|project|product|supplier|machine|plant|factory|warehouse|city|store|site|item|type|process|job|task|"
    "activity|route|region|course|worker|shift|grade|mine|farm|center|centre|depot|customer|vehicle|truck|ship|year|"
    "month|week|day|period|crop|field|plan|option|investment|location|team|candidate|ingredient|food|feed|line|area|"
    "zone|room|bond|stock|asset|fund|pipe|node|station|stage|workshop|department|warehouse|port|market|raw material"
)
ENTITY = re.compile(rf"\b(?i:({ENTITY_HEADS}))s?\s*\(?([A-Z]|\d{{1,2}}|[IVX]{{1,4}})\)?(?![\w'’])")
PROPER = re.compile(r"(?<![.?!]\s)(?<!^)\b([A-Z][a-z]{2,})\b")
PROPER_IGNORE = frozenset("""Is Are Do Does Can Could Should Would Will What Which When Where Who How If Or And The
January February March April May June July August September October November December Monday Tuesday Wednesday
Thursday Friday Saturday Sunday Yuan Dollar Dollars Euro Euros Master Masters Doctoral PhD""".split())


CANONICAL = {
    "children": "child", "kids": "child", "people": "person", "persons": "person", "staff": "worker",
    "employees": "worker", "integer": "whole", "integral": "whole", "fractional": "whole", "fraction": "whole",
    "discrete": "whole", "continuous": "whole", "divisible": "whole", "goal": "objective", "aim": "objective",
    "maximize": "objective", "minimize": "objective", "maximise": "objective", "minimise": "objective",
    "optimize": "objective", "optimise": "objective", "money": "revenue", "income": "revenue", "sales": "revenue",
    "earnings": "revenue", "cap": "maximum", "capped": "maximum", "ceiling": "maximum", "upper": "maximum",
    "floor": "minimum", "lower": "minimum", "least": "minimum", "exactly": "exact", "precisely": "exact",
    "stock": "inventory", "unused": "idle", "leftover": "remaining", "prerequisite": "require",
    "prerequisites": "require", "depend": "require", "depends": "require", "mandatory": "must", "compulsory": "must",
    "obligatory": "must", "forbidden": "prohibit", "prohibited": "prohibit", "disallowed": "prohibit",
}


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    if word in CANONICAL:
        return CANONICAL[word]
    for suffix in ("ies", "ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def content_words(text: str) -> set[str]:
    return set(_content_words(text))


@lru_cache(maxsize=65536)
def _content_words(text: str) -> frozenset[str]:
    words = re.findall(r"[a-z0-9]+", text.lower().replace("_", " "))
    return frozenset(stem(w) for w in words if w not in STOPWORDS and len(w) > 1)


def entities(text: str) -> set[tuple[str, str]]:
    """``(head noun, identifier)`` pairs such as ``("product", "A")`` or ``("project", "3")``."""
    return {(m.group(1).lower(), m.group(2).upper()) for m in ENTITY.finditer(text)}


def proper_nouns(text: str) -> set[str]:
    return {m.group(1).lower() for m in PROPER.finditer(text) if m.group(1) not in PROPER_IGNORE}


def entity_conflict(question: str, slot_core: str) -> bool:
    """The question names an entity of a kind the slot also names, but never the slot's one."""
    asked, own = entities(question), entities(slot_core)
    for head in {h for h, _ in asked} & {h for h, _ in own}:
        if not {i for h, i in asked if h == head} & {i for h, i in own if h == head}:
            return True
    return False


def strip_rule(rule: str) -> str:
    return RULE_PREFIX.sub("", rule).strip() or rule


def humanise(name: str) -> str:
    return re.sub(r"[_\-]+", " ", name).strip()


def split_pieces(text: str) -> list[str]:
    """The whole text and, when it has several, each sentence: verbatim substrings (usable as evidence)."""
    text = text.strip()
    if not text:
        return []
    sentences = [s.strip() for s in re.findall(r"[^?.!\n]+[?.!]*", text) if len(content_words(s)) >= 1]
    pieces = [text] + [s for s in sentences if s != text]
    return list(dict.fromkeys(pieces))


def is_catch_all(question: str, slot_words: set[str]) -> bool:
    """A vague 'anything else?' question that names nothing specific to the slot."""
    if not CATCH_ALL.search(question):
        return False
    generic = {"constraint", "requirement", "information", "detail", "consideration", "rule", "thing", "factor",
               "restriction", "additional", "further", "should", "know", "else", "other", "there"}
    specific = content_words(question) - generic
    return not (specific & slot_words)


# ---- the slot model ---------------------------------------------------------------------------------------------

FEATURES = ("rule", "unit", "name", "fail", "cover", "objective", "conflict", "foreign", "rule_rel", "unit_rel",
            "name_rel", "fail_rel")
WEIGHTS = {
    "rule": 2.5, "unit": 2.5, "name": 1.0, "fail": 0.5, "cover": 1.5, "objective": 3.5, "conflict": -5.0,
    "foreign": -0.5, "rule_rel": 2.5, "unit_rel": 2.0, "name_rel": 2.5, "fail_rel": 2.5,
}
BIAS = -4.0
YES_THRESHOLD = -0.5
PARTIAL_THRESHOLD = -2.0
"""Logit thresholds. Weights and thresholds are rounded from a logistic fit on OR-Clarify cases 1-50 (leave-one-out
reference questions against their own and their case's other slots); benchmarks/slot_hit_fidelity.py reports
cases 51-100 separately as the held-out half."""
NEAR_DUPLICATE = 0.92
"""A question this close to one of the slot's reference questions is a hit unless it names another entity."""
DEFAULT_BASELINES = {"rule": 0.68, "unit": 0.69, "name": 0.55, "fail": 0.66}
"""Per-slot scale used when a rubric has no reference questions (the mean over cases 1-50)."""


@dataclass(frozen=True)
class PreparedSlot:
    """A slot's texts, content words and cues, computed once per rubric (embeddings live in ``Embeddings``)."""

    texts: dict[str, list[str]]
    core: str
    words: set[str]
    objective: float
    """1 for an objective slot, 0 when its rubric only mentions goals or priorities, -1 otherwise."""
    propers: set[str]


def slot_texts(
    name: str, unit_content: str, rule: str, refs: Sequence[str], fails: Sequence[str]
) -> dict[str, list[str]]:
    texts = {
        "name": [humanise(name)],
        "unit": [unit_content],
        "rule": [strip_rule(rule)] if rule.strip() else [],
        "ref": list(refs),
        "fail": list(fails),
    }
    return {key: [t for t in group if t.strip()] for key, group in texts.items()}


def prepare_slot(name: str, unit_content: str, rule: str = "", refs: Sequence[str] = (), fails: Sequence[str] = (),
                 unit_kind: str = "") -> PreparedSlot:
    texts = slot_texts(name, unit_content, rule, refs, fails)
    core = " ".join([humanise(name), unit_content, rule])
    words = content_words(" ".join(t for group in texts.values() for t in group))
    if unit_kind == "objective" or OBJECTIVE_UNIT.search(unit_content):
        objective = 1.0
    elif OBJECTIVE_MENTION.search(" ".join([name, unit_content, rule])):
        objective = 0.0
    else:
        objective = -1.0
    propers = proper_nouns(" ".join([core, *refs, *fails])) | set(content_words(core))
    return PreparedSlot(texts=texts, core=core, words=words, objective=objective, propers=propers)


class Embeddings:
    """One ``encode`` call for every text a batch needs; lookups by text afterwards."""

    def __init__(self, texts: Sequence[str]):
        unique = list(dict.fromkeys(t for t in texts if t))
        matrix = encode(unique) if unique else np.zeros((0, 384), dtype=np.float32)
        self._index = {t: i for i, t in enumerate(unique)}
        self._matrix = matrix

    def vec(self, text: str) -> np.ndarray:
        return self._matrix[self._index[text]]

    def best(self, piece: str, texts: Sequence[str]) -> float | None:
        """The highest cosine between ``piece`` and any of ``texts``; None when there is nothing to compare."""
        texts = [t for t in texts if t]
        if not texts or not piece:
            return None
        v = self.vec(piece)
        return float(max(self._matrix[self._index[t]] @ v for t in texts))


def all_texts(slot: PreparedSlot) -> list[str]:
    return [t for group in slot.texts.values() for t in group]


def _baselines(slot: PreparedSlot, emb: Embeddings) -> dict[str, float]:
    """How close the slot's own reference questions sit to each rubric text: the per-slot scale of a hit."""
    refs = slot.texts["ref"]
    if not refs:
        return dict(DEFAULT_BASELINES)
    out = {}
    for key in ("rule", "unit", "name", "fail"):
        targets = _targets(slot, key)
        out[key] = float(np.mean([emb.best(r, targets) or 0.0 for r in refs])) if targets else DEFAULT_BASELINES[key]
    return out


def _targets(slot: PreparedSlot, key: str) -> list[str]:
    """The rubric texts compared under ``key``, falling back to the unit, then to anything the rubric has."""
    return slot.texts[key] or slot.texts["unit"] or all_texts(slot)


def features(piece: str, slot: PreparedSlot, emb: Embeddings) -> dict[str, float]:
    sims = {key: emb.best(piece, _targets(slot, key)) or 0.0 for key in ("rule", "unit", "name", "fail")}
    base = _baselines(slot, emb)
    words = content_words(piece)
    return {
        **sims,
        **{f"{key}_rel": sims[key] - base[key] for key in sims},
        "cover": len(words & slot.words) / len(words) if words else 0.0,
        "objective": float(bool(OBJECTIVE_Q.search(piece))) * slot.objective,
        "conflict": float(entity_conflict(piece, slot.core)),
        "foreign": float(min(len(proper_nouns(piece) - slot.propers), 2)),
    }


def logit(feats: dict[str, float]) -> float:
    return BIAS + sum(WEIGHTS[k] * feats[k] for k in FEATURES)


def score_pieces(pieces: Sequence[str], slot: PreparedSlot, emb: Embeddings) -> list[float]:
    """The slot logit of each piece; catch-all pieces score minus infinity."""
    out = []
    for piece in pieces:
        if is_catch_all(piece, slot.words):
            out.append(float("-inf"))
            continue
        feats = features(piece, slot, emb)
        score = logit(feats)
        near = emb.best(piece, slot.texts["ref"])
        if near is not None and near >= NEAR_DUPLICATE and not feats["conflict"]:
            score = max(score, YES_THRESHOLD)
        out.append(score)
    return out


# ---- the role -----------------------------------------------------------------------------------------------------


class SlotRubric(BaseModel):
    model_config = ConfigDict(extra="forbid")

    slot_id: str
    name: str
    severity: Literal["P0", "P1", "P2"] | None = None
    severity_reason: str = ""
    unit_content: str
    unit_kind: str = ""
    semantic_hit_rule: str = ""
    reference_questions: list[str] = []
    failure_modes: list[str] = []


class SlotHitInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    slot: SlotRubric
    agent_questions: list[str] = Field(description="The agent's questions and explicit assumption checks, in order, "
                                                   "all from before READY_TO_MODEL.")
    subject: str = Field(default="", description="What the request is about (the domain's judge hint); empty: an "
                                                 "optimisation problem.")


class SlotHitOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    slot_id: str
    hit: Literal["yes", "partial", "no"]
    evidence_quote: str = Field(description="Verbatim text from one agent question; empty when hit is no.")
    rationale: str


def rubric_from_slot(case: Case, slot: HiddenSlot) -> SlotRubric:
    units = {u.id: u for u in case.units}
    hidden = [units[i] for i in slot.unit_ids if i in units]
    return SlotRubric(
        slot_id=slot.slot_id,
        name=slot.name,
        severity=slot.severity,
        severity_reason=slot.severity_reason,
        unit_content="\n".join(u.content for u in hidden) or slot.simulator_answer,
        unit_kind=hidden[0].kind if hidden else "",
        semantic_hit_rule=slot.semantic_hit_rule,
        reference_questions=list(slot.reference_questions),
        failure_modes=list(slot.failure_modes),
    )


def _prepare(rubric: SlotRubric) -> PreparedSlot:
    return prepare_slot(rubric.name, rubric.unit_content, rubric.semantic_hit_rule, rubric.reference_questions,
                        rubric.failure_modes, rubric.unit_kind)


def _judge(inp: SlotHitInput, slot: PreparedSlot, emb: Embeddings) -> SlotHitOutput:
    best_score, best_piece = float("-inf"), ""
    catch_all_seen = False
    for question in inp.agent_questions:
        pieces = split_pieces(question)
        for piece, score in zip(pieces, score_pieces(pieces, slot, emb)):
            catch_all_seen |= score == float("-inf")
            if score > best_score:
                best_score, best_piece = score, piece
    name = humanise(inp.slot.name)
    if best_score >= YES_THRESHOLD:
        return SlotHitOutput(slot_id=inp.slot.slot_id, hit="yes", evidence_quote=best_piece,
                             rationale=f"The question targets '{name}' (score {best_score:.2f}).")
    if best_score >= PARTIAL_THRESHOLD:
        return SlotHitOutput(slot_id=inp.slot.slot_id, hit="partial", evidence_quote=best_piece,
                             rationale=f"The question touches a related issue but not the key meaning of '{name}' "
                                       f"(score {best_score:.2f}).")
    why = "only vague catch-all questions" if catch_all_seen and best_piece == "" else "no question targets it"
    return SlotHitOutput(slot_id=inp.slot.slot_id, hit="no", evidence_quote="",
                         rationale=f"'{name}' was not asked about: {why}.")


def local_batch(inputs: Sequence[SlotHitInput]) -> list[SlotHitOutput]:
    prepared = [_prepare(i.slot) for i in inputs]
    texts: list[str] = []
    for inp, slot in zip(inputs, prepared):
        texts += all_texts(slot)
        for question in inp.agent_questions:
            texts += split_pieces(question)
    emb = Embeddings(texts)
    return [_judge(inp, slot, emb) for inp, slot in zip(inputs, prepared)]


def local(inp: SlotHitInput) -> SlotHitOutput:
    return local_batch([inp])[0]


SPEC = RoleSpec(name="slot_hit_judge", input_model=SlotHitInput, output_model=SlotHitOutput, local=local,
                local_batch=local_batch)
ROLES.add(SPEC.name, SPEC)

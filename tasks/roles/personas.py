"""Simulated-user personas: how the OR / analytics simulated user (open and choice protocols) departs from the
cooperative, precise user both papers assume (docs/personas.md).

A :class:`Persona` is a named record in ``params.yaml: evaluate.<domain>.personas``. Under the local backend the
episode loop passes each reply of the cooperative user through :meth:`PersonaState.open_reply` or
:meth:`PersonaState.choice_reply`, which rewrite it deterministically (a draw seeded by case, persona, repeat and
turn). Under an LLM backend the persona's :func:`prompt_addendum` is added to the user's prompt instead. The judge
always scores against the case's true facts, never the persona's version of them.
"""

from __future__ import annotations

import hashlib
import random
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

PersonaKind = Literal["cooperative", "terse", "partial", "vague", "mistaken", "uncooperative"]

DONT_KNOW = "I don't know."
CHOICE_DONT_KNOW = "I don't know which of these applies to us."
CORRECTION = "Sorry, I got that wrong earlier. "

ADDENDA: dict[str, str] = {
    "cooperative": "",
    "terse": "Answer only the literal question in as few words as possible; leave out qualifiers, conditions and "
             "units of measure.",
    "partial": "Give at most one fact per answer, even when the question asks about several things.",
    "vague": "Give approximate values instead of exact ones (\"a dozen or so\", \"most weekdays\", \"roughly 40\").",
    "mistaken": "With probability {p:.0%} per answer, state a wrong value (a different number, or the opposite rule). "
                "Correct it only if the analyst asks about the same point again.",
    "uncooperative": "With probability {p:.0%} per answer, reply only \"I don't know.\"",
}


class Persona(BaseModel):
    """One simulated-user persona (``params.yaml: evaluate.<domain>.personas``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    """Row label (the robustness table) and part of the draw's seed."""
    kind: PersonaKind | None = None
    """The behaviour; defaults to ``name`` (so ``{name: terse}`` is enough)."""
    probability: float = Field(default=0.5, ge=0.0, le=1.0)
    """mistaken: chance an answer states a wrong value; uncooperative: chance of "I don't know". Unused otherwise."""

    @model_validator(mode="after")
    def _known(self) -> Persona:
        if (self.kind or self.name) not in ADDENDA:
            raise ValueError(f"persona {self.name!r}: set kind (one of {', '.join(ADDENDA)})")
        return self

    @property
    def behaviour(self) -> PersonaKind:
        return self.kind or self.name  # type: ignore[return-value]


COOPERATIVE = Persona(name="cooperative")


def prompt_addendum(persona: Persona) -> str:
    """The sentence added to the simulated user's prompt under an LLM backend ("" for cooperative)."""
    return ADDENDA[persona.behaviour].format(p=persona.probability)


def persona_draw(case_id: str, persona: str, repeat: int, turn: int) -> float:
    """A uniform draw in [0, 1) fixed by case, persona, repeat and turn."""
    digest = hashlib.sha256(f"{case_id}:{persona}:{repeat}:{turn}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big")).random()


# ---- text rewrites (local backend) --------------------------------------------------------------------------------

NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?![\w.]*\d)")
UNIT_AFTER_NUMBER = re.compile(r"(?<=\d)\s*(%|percent|per cent|[a-zA-Z$€£/]+(?:\s+per\s+[a-zA-Z]+)?)")
QUALIFIERS = re.compile(r"\b(at most|at least|no more than|no less than|up to|exactly|approximately|about|only|"
                        r"strictly|maximum of|minimum of|per [a-z]+)\s*", re.I)
CLAUSES = re.compile(r"\s*(\([^)]*\)|,?\s*\b(?:except|unless|provided|as long as|but|because|so that|which|when)\b"
                     r"[^.;]*)", re.I)
NEGATIONS = re.compile(r"\b(must not|cannot|can't|may not|should not|is not|are not|does not|do not|no)\b", re.I)
AFFIRM = {"must not": "must", "cannot": "can", "can't": "can", "may not": "may", "should not": "should",
          "is not": "is", "are not": "are", "does not": "does", "do not": "do", "no": "some"}
MODALS = re.compile(r"\b(must|can|may|should|is|are)\b", re.I)
SPECIAL_VAGUE = {12: "a dozen or so", 5: "most weekdays' worth", 7: "about a week's worth", 24: "a day or so",
                 100: "a hundred or so"}


def first_sentence(text: str) -> str:
    return re.split(r"(?<=[.!?])\s+", text.strip())[0]


def terse(text: str) -> str:
    """The literal answer only: first sentence, no qualifier words or clauses, numbers without their units."""
    out = CLAUSES.sub("", first_sentence(text))
    out = QUALIFIERS.sub("", out)
    out = UNIT_AFTER_NUMBER.sub("", out)
    return re.sub(r"\s{2,}", " ", out).strip(" ,;") or text.strip()


def _approx(match: re.Match) -> str:
    value = float(match.group(1))
    if value in SPECIAL_VAGUE:
        return SPECIAL_VAGUE[int(value)]
    if value < 10:
        return f"{value:g}-ish" if value > 2 else "one or two"
    magnitude = 10 ** (len(str(int(value))) - 1)
    return f"roughly {round(value / magnitude) * magnitude:g}"


def vague(text: str) -> str:
    """Every number replaced by an approximation ("a dozen or so", "roughly 40")."""
    return NUMBER.sub(_approx, text.strip())


def wrong(text: str) -> str:
    """A wrong version of a fact: its first number doubled (plus one when zero), else its rule's polarity flipped."""
    match = NUMBER.search(text)
    if match:
        value = float(match.group(1))
        new = value * 2 if value else 1
        return text[:match.start()] + f"{new:g}" + text[match.end():]
    neg = NEGATIONS.search(text)
    if neg:
        return text[:neg.start()] + AFFIRM[neg.group(1).lower()] + text[neg.end():]
    modal = MODALS.search(text)
    if modal:
        return text[:modal.end()] + " not" + text[modal.end():]
    return "No, " + text[:1].lower() + text[1:]


# ---- per-episode state --------------------------------------------------------------------------------------------


class PersonaState:
    """One episode's persona: its draws and which points it has misstated (so a second ask corrects them)."""

    def __init__(self, persona: Persona, case_id: str, repeat: int) -> None:
        self.persona, self.case_id, self.repeat = persona, case_id, repeat
        self.misstated: set[str] = set()
        self.corrected: set[str] = set()

    def draw(self, turn: int) -> float:
        return persona_draw(self.case_id, self.persona.name, self.repeat, turn)

    def open_reply(self, turn: int, answers: list[tuple[str, str]], fallback: str) -> tuple[str, list[str]]:
        """The persona's reply to an Open question from the cooperative user's ``answers`` (slot id, true answer)
        in disclosure order; ``fallback`` is the cooperative reply when no fact matched. Returns the reply and the
        slots it discloses correctly."""
        kind = self.persona.behaviour
        if kind == "uncooperative" and self.draw(turn) < self.persona.probability:
            return DONT_KNOW, []
        if not answers:
            return (terse(fallback) if kind == "terse" else fallback), []
        if kind == "partial":
            slot, answer = answers[0]
            return first_sentence(answer), [slot]
        if kind == "terse":
            return " ".join(terse(a) for _, a in answers), [s for s, _ in answers]
        if kind == "vague":
            return " ".join(vague(a) for _, a in answers), [s for s, _ in answers]
        if kind == "mistaken":
            parts, disclosed = [], []
            draw, slipped = self.draw(turn), False
            for slot, answer in answers:
                if slot in self.misstated and slot not in self.corrected:
                    self.corrected.add(slot)
                    parts.append(CORRECTION + answer)
                    disclosed.append(slot)
                elif slot not in self.misstated and draw < self.persona.probability and not slipped:
                    self.misstated.add(slot)  # at most one point misstated per answer
                    slipped = True
                    parts.append(wrong(answer))
                else:
                    parts.append(answer)
                    disclosed.append(slot)
            return " ".join(parts), disclosed
        return " ".join(a for _, a in answers), [s for s, _ in answers]

    def choice_reply(self, turn: int, choice: str, comment: str | None, point: str,
                     options: list[str]) -> tuple[str | None, str | None, bool]:
        """The persona's choice from the cooperative ``choice`` (and D ``comment``) on the question about
        ``point`` (the fact the user matched). Returns (choice or None for "I don't know", comment, corrected)."""
        kind = self.persona.behaviour
        if kind == "uncooperative" and self.draw(turn) < self.persona.probability:
            return None, None, False
        if comment and kind in ("terse", "partial", "vague"):
            comment = {"terse": terse, "partial": first_sentence, "vague": vague}[kind](comment)
        if kind == "mistaken" and choice != "D":
            if point in self.misstated and point not in self.corrected:
                self.corrected.add(point)
                return choice, None, True
            if point not in self.misstated and self.draw(turn) < self.persona.probability:
                self.misstated.add(point)
                others = [o for o in options if o != choice]
                return others[int(self.draw(turn) * 1e6) % len(others)], None, False
        return choice, comment, False


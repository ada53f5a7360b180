"""Template domain: a minimal, working unit domain that ``python -m flows.new_domain NAME`` copies to start a new one.

Records are free-text requests (``data/samples/template/records.jsonl``, one ``TextRecord`` per line). Each is cut
into sentences and list items, and every piece is typed by the cue words in :data:`CUES`; the hideable kinds
(:data:`HIDEABLE`) become hidden slots whose rubric comes from the templates below; the episode loop's local agents
ask the questions in :data:`QUESTIONS` for every hideable kind the brief does not state.

To adapt it: change the kinds and their cue words, the question, answer and severity templates, and the records.
Everything else (Prefect tasks, caching, the GX gate, cases.jsonl, the evaluation) comes from
:class:`tasks.domains.units.UnitDomain` and the episode loop.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from tasks.domain_context import JudgeHints
from tasks.domains.api import Severity, Taxonomy
from tasks.domains.units import KindGapInventory, UnitDomain
from tasks.records import Unit
from tasks.text import cue_scores

NAME = "template"
KINDS = ("context", "given", "goal", "scope", "constraint", "format")
HIDEABLE = ("goal", "scope", "constraint", "format")
DESCRIPTIONS = {
    "context": "who asks and why",
    "given": "facts and data the request provides",
    "goal": "what the result must achieve",
    "scope": "what is in or out of scope",
    "constraint": "limits, budgets, deadlines and rules",
    "format": "how the result is delivered",
}
CUES: dict[str, list[tuple[str, float]]] = {
    "goal": [(r"\b(goal|aim|purpose|we want|i want|so that|in order to|should (show|answer|tell|make sure))\b", 2.5)],
    "scope": [(r"\b(only|exclud\w*|leave out|except|in scope|out of scope|limited to|ignore)\b", 2.5)],
    "constraint": [(r"\b(must|at most|at least|no more than|no less than|deadline|budget|cannot|never|nobody|"
                    r"maximum|minimum|more than)\b", 2.0)],
    "format": [(r"\b(format|table|list|chart|spreadsheet|pdf|csv|slides?|email|send|share|deliver)\b", 2.0)],
    "given": [(r"\d", 0.5), (r"^[^:]{2,40}:\s", 1.0)],
    "context": [(r"\b(i'?m|i am|we are|our (team|group|company)|i need|we need|organis\w+|organiz\w+)\b", 1.5)],
}
"""Regex -> points per kind; the best score wins (ties: the order of :data:`KINDS`, reversed)."""
SEVERITY: dict[str, tuple[Severity, str]] = {
    "goal": ("P0", "Without the goal the result answers a different request."),
    "scope": ("P1", "The wrong scope makes the result materially wrong."),
    "constraint": ("P1", "Breaking this rule makes the result unusable."),
    "format": ("P2", "Presentation only; the content stays right without it."),
}
QUESTIONS: dict[str, tuple[str, str, dict[str, str]]] = {
    # kind: (InterOPT gap category, the local agents' question, three hypotheses for the choice protocols)
    "goal": ("objective", "What exactly should the result achieve?",
             {"A": "A single recommendation", "B": "A ranked shortlist", "C": "A full overview of the options"}),
    "scope": ("decision_scope", "What is in scope and what should be left out?",
              {"A": "Everything mentioned is in scope", "B": "Only part of it is in scope",
               "C": "Some cases are explicitly excluded"}),
    "constraint": ("constraint_set", "Are there limits we must respect, such as a budget, a deadline or a maximum?",
                   {"A": "There is a budget or maximum", "B": "There is a deadline",
                    "C": "No additional restrictions apply"}),
    "format": ("hard_soft_policy", "In what format should the result be delivered?",
               {"A": "A table", "B": "A short written summary", "C": "A spreadsheet file"}),
}
ANSWER_LEAD = {"goal": "On the goal: ", "scope": "On the scope: ", "constraint": "On the limits: ",
               "format": "On the format: "}
ASPECTS = {
    "goal": ["What should the result achieve?", "What is the goal of the request?"],
    "scope": ["What is in scope?", "What should be left out?"],
    "constraint": ["Are there limits, a budget or a deadline?", "What rules must the result respect?"],
    "format": ["In what format should the result be delivered?", "How should the result be presented?"],
}
EXAMPLES = [
    {"id": "offsite_venue_001", "title": "Venue shortlist for a team offsite",
     "text": "I'm organising a one-day offsite for 24 people from our design team in Lisbon. The goal is a shortlist "
             "of three venues that can host a full-day workshop with two breakout rooms. Only consider venues within "
             "30 minutes of the city centre by public transport. The budget is at most 4,000 euros for the day, "
             "lunch included. Send the shortlist as a table with price, capacity and travel time."},
    {"id": "garden_rota_001", "title": "Watering rota for a community garden",
     "text": "Our volunteer group looks after a community garden and needs a watering rota for June to September. "
             "The aim is that every Saturday and Sunday is covered by two volunteers. Leave out the two weeks in "
             "August when the garden is closed. Nobody should be on the rota more than twice a month. Please share "
             "the rota as a spreadsheet with one row per day."},
    {"id": "book_club_001", "title": "Reading list for a book club",
     "text": "We are a book club of nine retired teachers meeting once a month. The aim is a reading list for the "
             "next six meetings that mixes fiction and non-fiction. Exclude anything we read in the last two years. "
             "Each book must be under 400 pages and available as a large-print edition. Deliver the list by email "
             "with one line per book and a sentence on why it was chosen."},
]
"""Example records the scaffold writes to ``data/samples/<name>/records.jsonl`` (replace them with real ones)."""
_CUES = {kind: [(re.compile(p, re.IGNORECASE), w) for p, w in cues] for kind, cues in CUES.items()}


def classify(text: str, *, first: bool = False, structured: bool = False) -> str:
    if structured:
        return "given"
    points = cue_scores(text, _CUES, KINDS)
    if first:
        points["context"] += 2.0
    return max(reversed(KINDS), key=lambda kind: points[kind])


class TemplateDomain(UnitDomain):
    name = NAME
    benchmark = f"clarifyflow-{NAME}"
    evaluation = "episodes"
    taxonomy = Taxonomy(kinds=KINDS, hideable=HIDEABLE, descriptions=DESCRIPTIONS)
    judge_hints = JudgeHints(subject="a request for help with a task", deliverable="the result the request asks for",
                             analyst="an analyst",
                             core="P0 changes what the result is; P1 makes it materially wrong or unusable.")
    user_aspects = ASPECTS

    def decompose(self, record: Any) -> list[Unit]:
        from tasks.construction.segment import segment

        return [Unit(id=f"U{i + 1}", kind=classify(s.content, first=i == 0, structured=s.structured),
                     content=s.content.strip()) for i, s in enumerate(segment(record.text))]

    def severity(self, hidden: Sequence[Unit], units: Sequence[Unit]) -> tuple[Severity | None, str]:
        return SEVERITY.get(hidden[0].kind, ("P1", "Leaving it out makes the result materially incomplete."))

    def reference_questions(self, hidden: Sequence[Unit], units: Sequence[Unit]) -> list[str]:
        kind = hidden[0].kind
        return [QUESTIONS[kind][1] if kind in QUESTIONS else f"What about the {kind}?", *ASPECTS.get(kind, [])[:1]]

    def simulated_answer(self, hidden: Sequence[Unit], units: Sequence[Unit]) -> str:
        return ANSWER_LEAD.get(hidden[0].kind, "") + " ".join(" ".join(u.content.split()) for u in hidden)

    @property
    def gap_inventory(self) -> KindGapInventory:
        return INVENTORY


INVENTORY = KindGapInventory(NAME, classify, QUESTIONS, goal_kind="goal")
DOMAIN = TemplateDomain()

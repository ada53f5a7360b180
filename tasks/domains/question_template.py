"""Question template domain: a minimal, working question-list domain that the scaffold copies to start a new one.

``python -m flows.new_domain NAME --evaluation questions`` copies this module to ``tasks/domains/NAME/domain.py``.
Records are free-text reports (``data/samples/question_template/records.jsonl``, one ``TextRecord`` per line). Each
is cut into sentences and list items (``tasks.construction.segment``), and every piece is typed by the cue words in
:data:`CUES` with one of CLARITI's six information categories (``tasks.categories``; the first piece may stay
``context``). A case hides whole categories: about ``hide_fraction`` of the categories the record states (at least
``min_hidden``, at most ``max_hidden``), every unit of each; the case records which categories are present, hidden
and visible, and the question-list evaluation (``evaluate.<name>``: no_questions, oracle_template, ask_everything,
evpi, ...) scores how many hidden categories each method's questions recover.

The cue words below are this template's own, short examples: write your domain's from its records. Never copy them
from the evaluation's roles (the question classifier, the simulated user): what decides which facts are hidden must
not share a vocabulary with what labels and answers the questions.

To adapt it: change the cue words, the severity and question templates, the judge hints and the records. Everything
else (Prefect tasks, caching, the GX gate, cases.jsonl, the evaluation) comes from
:class:`tasks.domains.units.UnitDomain` and the question-list evaluation.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from tasks.categories import DEFINITIONS, Category
from tasks.domain_context import JudgeHints
from tasks.domains.api import Severity, Taxonomy
from tasks.domains.units import UnitDomain
from tasks.records import Unit
from tasks.text import cue_scores

NAME = "question_template"
CATEGORIES = tuple(c.key for c in Category)
"""The six CLARITI category keys: every hideable unit kind is one of them."""
KINDS = ("context", *CATEGORIES)
HIDEABLE = CATEGORIES
DESCRIPTIONS = {"context": "what the report is about (stays visible)", **{c.key: DEFINITIONS[c] for c in Category}}
CUES: dict[str, list[tuple[str, float]]] = {
    "error_info": [(r"\b(crash\w*|freez\w*|error|exception|broken|wrong\w*|unreadable|garbled|fails?)\b", 2.5)],
    "reproduction": [(r"\b(to reproduce|steps?|click|choose|open|select|restart|import the)\b", 2.0)],
    "expected_behavior": [(r"\b(should|expected|instead|ought to)\b", 2.5)],
    "implementation": [(r"\b(suspect|patch|parser|loop|the code)\b|\w+\(\)|\w+\.py\b", 3.0)],
    "external_refs": [(r"https?://|\b(forum|thread|ticket|docs|tracker)\b", 3.0)],
    "version_env": [(r"\b(version|windows|macos|ubuntu|linux|locale)\b|\b\d+\.\d+(\.\d+)?\b", 2.0)],
    "context": [(r"\b(i use|we use|my|our)\b", 0.5)],
}
"""Regex -> points per kind; the best score wins (ties: the order of :data:`KINDS`, reversed)."""
SEVERITY: dict[str, tuple[Severity, str]] = {
    "reproduction": ("P0", "Without the steps nobody can see the failure, let alone fix it."),
    "expected_behavior": ("P0", "Without the expected behaviour a fix may change the wrong thing."),
    "error_info": ("P1", "Without the symptom the failure has to be found again."),
    "version_env": ("P1", "Without the setup the failure may not show up at all."),
    "implementation": ("P2", "A hint at the fix: helpful, not needed to understand the report."),
    "external_refs": ("P2", "Background only; the report stands without it."),
}
QUESTIONS: dict[str, list[str]] = {
    "error_info": ["What exactly goes wrong, and what message or output do you see?",
                   "Is there an error text or a log line when it happens?"],
    "reproduction": ["Which steps make it happen, starting from a fresh start of the app?",
                     "What do you do right before the problem appears?"],
    "expected_behavior": ["What did you expect to happen instead?", "What would the correct result look like?"],
    "implementation": ["Do you have an idea where in the code the cause is, or how to fix it?",
                       "Is there a part of the program you suspect?"],
    "external_refs": ["Is this discussed anywhere else, such as a forum post, a ticket or the documentation?",
                      "Are there links that give more background?"],
    "version_env": ["Which version of the app and which operating system do you use?",
                    "What is your setup: version, system and settings?"],
}
ASPECTS = {kind: questions[:1] for kind, questions in QUESTIONS.items()}
"""How a question about each category is put (the domain API's ``user_aspects``)."""
EXAMPLES = [
    {"id": "tallybook_csv_export", "title": "Export to CSV quits with an empty category",
     "text": "Tallybook quits when I export a month that has an empty category. The log shows the error "
             "'IndexError: list index out of range' just before it quits. To reproduce, create a category with no "
             "transactions, open File > Export and click Save as CSV. It should write one row per transaction and "
             "skip empty categories instead of quitting. I suspect export_rows() reads the first transaction of "
             "every category without checking that there is one. I am on version 2.4.0 on Windows 11. The same "
             "problem was reported in forum thread https://forum.example.org/t/418."},
    {"id": "tallybook_dark_chart", "title": "Pie chart labels in dark mode",
     "text": "The monthly pie chart is hard to read since I changed my theme. The chart labels are drawn black on a "
             "dark grey background, so they are unreadable. Steps: switch Settings > Appearance to Dark, restart the "
             "app and open the Reports tab. The labels should use the theme's text colour, as the bar chart already "
             "does. Tallybook 2.4.0 on Ubuntu 24.04 with GNOME. A similar contrast problem is described in ticket "
             "231 of the tracker."},
    {"id": "tallybook_bank_dates", "title": "Bank import mixes up day and month",
     "text": "Importing my bank statement mixes up some of my payment dates. A payment made on 3 April is listed "
             "wrongly as 4 March in the register. Import the file bank-april.csv with the preset Generic CSV and "
             "open the register. Dates in the file are day-first, so the import should keep 3 April as 3 April. The "
             "date parser in csv_dates.py could take the day-first setting from the preset. My system locale is "
             "en_GB on macOS 14.5."},
    {"id": "tallybook_backup_restore", "title": "Restoring a backup loses receipt pictures",
     "text": "After restoring last week's backup, my receipt pictures are gone. Each transaction that had a receipt "
             "now shows a broken image icon. Make a backup with Attach receipts turned on, delete the data folder "
             "and choose Restore in the File menu. The receipts should come back together with the transactions. "
             "The backup docs at https://tallybook.example.org/docs/backup say that attachments are included. "
             "Tallybook 2.3.2 on Windows 10, with the data folder on a network drive."},
]
"""Example records the scaffold writes to ``data/samples/<name>/records.jsonl`` (replace them with real ones)."""
_CUES = {kind: [(re.compile(p, re.IGNORECASE), w) for p, w in cues] for kind, cues in CUES.items()}


def classify(text: str, *, first: bool = False, structured: bool = False) -> str:
    points = cue_scores(text, _CUES, KINDS)
    if first:
        points["context"] += 2.0
    if structured:  # a code block, table or log excerpt: most often the symptom
        points["error_info"] += 1.0
    return max(reversed(KINDS), key=lambda kind: points[kind])


class QuestionTemplateDomain(UnitDomain):
    name = NAME
    benchmark = f"clarifyflow-{NAME}"
    evaluation = "questions"
    taxonomy = Taxonomy(kinds=KINDS, hideable=HIDEABLE, descriptions=DESCRIPTIONS)
    judge_hints = JudgeHints(subject="a bug report about a desktop app", deliverable="the fix the report asks for",
                             analyst="a developer",
                             core="P0 decides whether the failure can be seen and fixed at all; P1 makes finding it "
                                  "much slower.")
    user_aspects = ASPECTS

    def decompose(self, record: Any) -> list[Unit]:
        from tasks.construction.segment import segment

        units = []
        for i, s in enumerate(segment(record.text)):
            kind = classify(s.content, first=i == 0, structured=s.structured)
            units.append(Unit(id=f"U{i + 1}", kind=kind, content=s.content.strip(),
                              category=Category.parse(kind) if kind in CATEGORIES else None))
        return units

    def choose_hidden(self, record_id: str, candidates: Sequence[Unit], cfg: Any,
                      units: Sequence[Unit] = ()) -> list[list[str]]:
        """Hide whole categories: a seeded share of the categories present, then every candidate unit of each."""
        from tasks.construction.brief import choose_hidden

        present = list(dict.fromkeys(u.kind for u in candidates))
        hidden = set(choose_hidden(record_id, cfg.seed, present, fraction=cfg.hide_fraction,
                                   min_hidden=cfg.min_hidden, max_hidden=cfg.max_hidden))
        return [[u.id for u in candidates if u.kind in hidden]]

    def case_categories(self, units: Sequence[Unit], hidden_ids: Sequence[str]) -> dict[str, Any]:
        present = [c for c in Category if any(u.kind == c.key for u in units)]
        hidden = [c for c in present if any(u.kind == c.key and u.id in hidden_ids for u in units)]
        return {"present_categories": present, "hidden_categories": hidden,
                "visible_categories": [c for c in present if c not in hidden]}

    def severity(self, hidden: Sequence[Unit], units: Sequence[Unit]) -> tuple[Severity | None, str]:
        return SEVERITY.get(hidden[0].kind, ("P1", "Leaving it out makes the report materially incomplete."))

    def reference_questions(self, hidden: Sequence[Unit], units: Sequence[Unit]) -> list[str]:
        kind = hidden[0].kind
        return list(QUESTIONS.get(kind, [f"What about the {kind}?", f"Can you say more about the {kind}?"]))

    def hit_rule(self, unit: Unit, units: Sequence[Unit]) -> str:
        category = Category.parse(unit.kind)
        return f"The question asks for {category.value.lower()}: {DEFINITIONS[category]}"


DOMAIN = QuestionTemplateDomain()

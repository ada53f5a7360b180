"""The analytics gap inventory: what a data request leaves open, as specific questions built from its own entities.

The local agents read the public brief only, and this inventory reads it with rules of its own
(:mod:`.statements`: per aspect, does any sentence state it; :mod:`.brief_schema`: tables and columns from the
brief's schema). It imports nothing from the construction side (the decomposer, the slot templates, the masking
and eligibility code, ``tasks.construction``), so what the agents ask is not the rule that chose what to hide read
back (tests/test_analytics_inventory.py checks the import graph). Every aspect the brief does not state is a gap,
asked with the request's tables, date columns, dimension and flag columns and metric name. The date basis (which
date column and time zone define the window) is asked when the schema has two or more date columns and the brief
names none; data quality (duplicates, missing values) whenever the brief says nothing about it: an agent that
tracks every gap (InterOPT) asks them, a generic one usually stops first.

Each gap sits in one InterOPT gap category, which ranks and groups the questions: the metric is the ``objective``,
filters and data-quality rules the ``constraint_set``, the source the ``decision_scope``, the window and its date
basis the ``time_boundary``, the breakdown the ``entity_relation`` and the deliverable's form a ``hard_soft_policy``.
Choice protocols get three mutually exclusive hypotheses per gap.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from tasks.domain_context import BriefFacts, GapCandidate
from tasks.domains.analytics.brief_schema import read_schema
from tasks.domains.analytics.statements import stated_aspects

CATEGORY = {"metric": "objective", "data_source": "decision_scope", "filter": "constraint_set",
            "time_window": "time_boundary", "grouping": "entity_relation", "output_format": "hard_soft_policy",
            "data_quality": "constraint_set", "date_basis": "time_boundary"}
PRIORITY = {"metric": 0, "data_source": 1, "time_window": 2, "filter": 2, "grouping": 3, "output_format": 4,
            "date_basis": 5, "data_quality": 6}
GRAINS = ("hour", "day", "week", "month", "quarter", "year")


def _grain(brief: str) -> str | None:
    """The time grain the brief reports in ("per week", "weekly", "by month"), if any."""
    for grain in GRAINS:
        if re.search(rf"\b((per|by|each|every) (calendar )?{grain}|{grain}ly)\b", brief, re.IGNORECASE):
            return grain
    return None


def _evidence(brief: str, needle: str) -> str:
    for line in brief.splitlines():
        if needle and needle.lower() in line.lower():
            return line.strip()[:200]
    return brief.strip().splitlines()[0][:200] if brief.strip() else ""


def _code(names: Sequence[str], k: int = 2, joiner: str = " or ") -> str:
    return joiner.join(f"`{n}`" for n in list(names)[:k])


@lru_cache(maxsize=4096)
def analytics_gaps(brief: str) -> tuple[GapCandidate, ...]:
    ent = read_schema(brief)
    stated = set(stated_aspects(brief)) if brief.strip() else set()
    metric = f"the {ent.metric}" if ent.metric else "the figure"
    entity = ent.entity
    result = f"the {ent.metric}" if ent.metric else "the result"
    rows = f"rows in `{ent.tables[0]}`" if ent.tables else f"{entity} rows"
    first = brief.strip().splitlines()[0][:200] if brief.strip() else ""
    gaps: list[GapCandidate] = []

    def add(kind: str, description: str, question: str, options: dict[str, str], evidence: str = "",
            key: str = "") -> None:
        gaps.append(GapCandidate(key=key or kind, category=CATEGORY[kind], priority=PRIORITY[kind],
                                 description=description, evidence_quote=evidence or first, question=question,
                                 options=options))

    if "metric" not in stated:
        add("metric", f"How {metric} is defined is not stated.",
            f"How exactly should {metric} be calculated" + (f" from {ent.listing()}?" if ent.tables else "?"),
            {"A": f"A plain count of {entity}", "B": f"A share of qualifying {entity} among all {entity}",
             "C": f"An average value per {entity}"}, _evidence(brief, ent.metric))
    if "data_source" not in stated:
        tables = ent.listing()
        if len(ent.tables) >= 2:
            question = f"Which of the tables {tables} should the numbers come from?"
            options = {"A": f"Only `{ent.tables[0]}`", "B": f"`{ent.tables[0]}` joined to `{ent.tables[1]}`",
                       "C": "A table that is not listed in the request"}
        else:
            question = f"Which table or dataset holds the {entity} we should use for {metric}?"
            options = {"A": f"`{ent.tables[0]}` alone" if ent.tables else "The main transactions table",
                       "B": "A reporting view built on top of it", "C": "An export from another system"}
        add("data_source", "Which tables the answer comes from is not stated.", question, options,
            _evidence(brief, ent.tables[0] if ent.tables else "table"))
    if "time_window" not in stated:
        add("time_window", "The period the analysis covers is not stated.",
            f"Which date range of {entity} should the analysis cover?",
            {"A": "The last full calendar month", "B": "The last full quarter",
             "C": "A specific date range you give us"}, _evidence(brief, ent.date_columns[0] if ent.date_columns
                                                                   else "date"))
    if "filter" not in stated:
        flags = _code(ent.flag_columns, 2)
        hint = f" (for example by {flags})" if flags else ""
        add("filter", f"Which {entity} are out of scope is not stated.",
            f"Which {entity} should be excluded from the analysis{hint}?",
            {"A": "Leave out test, internal or staff records", "B": "Leave out cancelled or refunded records",
             "C": "No additional restrictions apply"}, _evidence(brief, ent.flag_columns[0] if ent.flag_columns
                                                                 else entity))
    if "grouping" not in stated:
        dims = _code(ent.dimension_columns, 2)
        grain = _grain(brief) or "month"
        by = f"by {dims} or by {grain}" if dims else f"by {grain} or by category"
        add("grouping", "How the result is broken down is not stated.",
            f"How should {result} be broken down, for example {by}?",
            {"A": "One overall figure", "B": f"Broken down by {_code(ent.dimension_columns, 1) or 'category'}",
             "C": f"Broken down by {grain}"}, _evidence(brief, ent.dimension_columns[0] if ent.dimension_columns
                                                         else metric))
    if "output_format" not in stated:
        add("output_format", "The form of the deliverable is not stated.",
            "In what format should the result be delivered, for example a sorted table, a chart, a CSV file or only "
            "the top rows?",
            {"A": "A table sorted by the main figure", "B": "A chart", "C": "A CSV or Excel file"})
    if "date_basis" not in stated:
        add("date_basis", "Which date column and time zone define the window is not stated.",
            f"Which date column should define the period, {_code(ent.date_columns, 2)}?",
            {"A": f"`{ent.date_columns[0]}` in UTC", "B": f"`{ent.date_columns[1]}` in UTC",
             "C": f"`{ent.date_columns[0]}` in local time"}, _evidence(brief, ent.date_columns[0]))
    if "data_quality" not in stated:
        add("data_quality", "How duplicates and missing values are handled is not stated.",
            f"How should duplicate or incomplete {rows} be handled?",
            {"A": "Remove duplicate rows first", "B": "Drop rows with missing values",
             "C": "No special rules apply to duplicates or missing values"})
    return tuple(sorted(gaps, key=lambda g: g.priority))


@lru_cache(maxsize=4096)
def analytics_facts(brief: str) -> BriefFacts:
    ent = read_schema(brief)
    stated = set(stated_aspects(brief)) if brief.strip() else set()
    grain = _grain(brief)
    return BriefFacts(entities=[f"`{t}`" for t in ent.tables][:6], time_unit=grain,
                      has_objective="metric" in stated, objective_hint="output", has_demand=False,
                      has_demand_policy=False, mentions_integrality=False,
                      groups=[[f"`{t}`" for t in ent.tables]] if len(ent.tables) >= 2 else [])


def analytics_interview(brief: str) -> list[str]:
    """ORPilot's fixed interview for a data request (one sentence each, no colon or full stop inside)."""
    ent = read_schema(brief)
    metric = f"the {ent.metric}" if ent.metric else "the main figure"
    entity = ent.entity
    tables = ent.listing() or "the available tables"
    return [
        f"How exactly should {metric} be calculated for this request?",
        f"Which of {tables} should the numbers come from and how should they be joined?",
        f"Which period should the {entity} cover and which date column defines it?",
        f"Should any {entity} be excluded from the analysis?",
        "How should the results be broken down and at what level of detail?",
        "In what form should the result be delivered and how should it be sorted and rounded?",
    ]


class AnalyticsInventory:
    name = "analytics"

    def gaps(self, brief: str) -> Sequence[GapCandidate]:
        return analytics_gaps(brief)

    def facts(self, brief: str) -> BriefFacts:
        return analytics_facts(brief)

    def interview(self, brief: str) -> list[str] | None:
        return analytics_interview(brief)

    goal_placeholder = "how the figure is defined"

    def goal(self, brief: str) -> str:
        return stated_aspects(brief).get("metric", "")


INVENTORY = AnalyticsInventory()

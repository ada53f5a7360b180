"""The analytics gap inventory reads the brief with its own rules: no import of the construction side, and what a
hand-written brief states is not asked while what it omits is."""

from __future__ import annotations

import json

import pytest

from tasks.domains.analytics.brief_schema import read_schema
from tasks.domains.analytics.gaps import INVENTORY, analytics_gaps
from tasks.domains.analytics.statements import stated_aspects
from tests.conftest import ROOT, python

CONSTRUCTION = ("tasks.domains.analytics.decompose", "tasks.domains.analytics.slots",
                "tasks.domains.analytics.entities", "tasks.domains.analytics.domain", "tasks.domains.units",
                "tasks.domains.optimization.domain", "tasks.domains.optimization.decompose",
                "tasks.domains.optimization.eligibility", "tasks.domains.optimization.annotate",
                "tasks.domains.swe.masking", "tasks.construction")
"""The code that typed the request's units and chose what to hide (the decomposer, rubrics, eligibility, masking)."""
AGENTS = ("tasks.clarifiers.freeqa", "tasks.clarifiers.orpilot", "tasks.clarifiers.choice",
          "tasks.clarifiers.readygate", "tasks.clarifiers.interopt", "tasks.clarifiers.interopt_roles")


def _loaded_after(modules: tuple[str, ...]) -> list[str]:
    code = (f"import importlib, json, sys\nfor m in {list(modules)!r}: importlib.import_module(m)\n"
            f"print(json.dumps(sorted(sys.modules)))")
    return json.loads(python(ROOT, "-c", code).stdout)


def _construction(loaded: list[str]) -> list[str]:
    return [m for m in loaded if any(m == c or m.startswith(c + ".") for c in CONSTRUCTION)]


def test_the_inventory_and_the_local_agents_import_no_construction_code():
    loaded = _loaded_after(("tasks.domains.analytics.gaps", *AGENTS))
    assert "tasks.domains.analytics.statements" in loaded and "tasks.clarifiers.interopt" in loaded
    assert _construction(loaded) == []
    # the check can fail: the domain object itself does load the decomposer
    assert "tasks.domains.analytics.decompose" in _construction(_loaded_after(("tasks.domains.analytics.domain",)))


SCHEMA = """| Table | Columns |
|---|---|
| `orders` | order_id, customer_id, placed_at, shipped_at, status, total_eur |
| `customers` | customer_id, country, is_test |"""
OPENING = "I look after reporting for a small tea shop and the owner wants to know how often customers come back."
SOURCE = "Use `orders` joined to `customers` on customer_id."
METRIC = "A returning customer is someone whose second order came within 60 days of the first."
WINDOW = "Cover orders placed between 1 January and 30 June 2025."
FILTER = "Leave out test accounts and orders with status 'refunded'."
GROUPING = "Break the result down by country."
OUTPUT = "Send a CSV sorted from highest to lowest, with percentages to one decimal."
PARTS = {"data_source": SOURCE, "metric": METRIC, "time_window": WINDOW, "filter": FILTER, "grouping": GROUPING,
         "output_format": OUTPUT}


def _brief(*omit: str) -> str:
    return "\n\n".join([OPENING, SCHEMA, " ".join(text for kind, text in PARTS.items() if kind not in omit)])


def _asked(brief: str) -> set[str]:
    return {g.key for g in analytics_gaps(brief)}


def test_a_complete_brief_leaves_only_the_follow_ups_open():
    stated = stated_aspects(_brief())
    assert set(PARTS) <= set(stated)
    assert stated["time_window"] == WINDOW and stated["metric"] == METRIC
    assert _asked(_brief()) == {"data_quality"}  # the window names its event ("placed between"): date basis settled


@pytest.mark.parametrize("kind", sorted(PARTS))
def test_an_omitted_aspect_is_asked_and_a_stated_one_is_not(kind):
    asked = _asked(_brief(kind))
    assert kind in asked
    assert not (set(PARTS) - {kind}) & asked


def test_a_window_without_its_event_asks_which_date_column():
    brief = _brief("time_window").replace(GROUPING, GROUPING + " Cover the first half of 2025.")
    assert "time_window" in stated_aspects(brief) and "time_window" not in _asked(brief)
    gap = next(g for g in analytics_gaps(brief) if g.key == "date_basis")
    assert "`placed_at`" in gap.question and "`shipped_at`" in gap.question


@pytest.mark.parametrize(("sentence", "aspect"), [
    ("Compare calendar year 2023 with calendar year 2024.", "time_window"),
    ("Use the 30 days up to and including 15 December 2024.", "time_window"),
    ("Only include paying members; trial users are out of scope.", "filter"),
    ("Churn rate is the number of cancellations divided by the accounts active at the start.", "metric"),
    ("Show the figure per region and per week.", "grouping"),
    ("A bar chart is enough.", "output_format"),
    ("Ignore duplicated events and rows with a missing user id.", "data_quality"),
])
def test_each_rule_recognises_its_statement(sentence, aspect):
    assert aspect in stated_aspects(_brief(*PARTS) + "\n\n" + sentence)


def test_vague_mentions_do_not_count_as_stated():
    brief = _brief(*PARTS) + "\n\nThe summer report is due soon, and the table should help the team."
    stated = stated_aspects(brief)
    assert not {"time_window", "output_format", "metric", "filter"} & set(stated)
    assert {"metric", "data_source", "time_window", "filter", "grouping", "output_format"} <= _asked(brief)


def test_questions_use_the_brief_schema_and_never_read_the_opening_as_a_source():
    schema = read_schema(_brief())
    assert schema.tables == ["orders", "customers"] and schema.date_columns == ["placed_at", "shipped_at"]
    assert "is_test" not in schema.dimension_columns and "country" in schema.dimension_columns
    assert schema.metric == "returning customer rate"  # named by the definition of what is counted
    gaps = {g.key: g for g in analytics_gaps(_brief("data_source", "filter"))}
    assert "`orders`" in gaps["data_source"].question and "`customers`" in gaps["data_source"].question
    assert "`status`" in gaps["filter"].question or "`is_test`" in gaps["filter"].question
    assert INVENTORY.goal(_brief()) == METRIC and INVENTORY.goal(_brief("metric")) == ""

"""Analytics slot rubrics: severity rules and the local templates for questions, hit rules, failure modes and answers.

Questions name the request's own tables, columns and metric (read from the whole request by
:func:`~tasks.domains.analytics.entities.request_entities`) but never the hidden fact: no date, threshold, value or
definition of the hidden unit appears in them.

Severity (or-clarify.md §1.3, read for analytics):

- **P0**: the number means something else without it: the metric definition; a time window that states the period;
  the data source when the request shows no schema to pick it from.
- **P1**: the number stays the same kind of number but is materially wrong or unusable: the source among known
  tables, a date column or time-zone detail, the population filter, the breakdown, a top-N or threshold in the
  output (it decides which rows are reported).
- **P2**: presentation only: file type, chart type, sorting, rounding.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from tasks.domains.analytics.decompose import PERIOD
from tasks.domains.analytics.entities import request_entities
from tasks.records import Unit

TOP_N = re.compile(r"\btop \d+|\b\d+ (brands|products|rows|items|zones|combinations)\b|\bat least \d+|\bmore than \d+",
                   re.IGNORECASE)
NAME_STOP = frozenset("""a an the of to in on at by with and or is are be for from as per use using take it its this
that these those we our i me my you your please should would will can only all any each every one two three than then
which who whose what when where how there their them they do does did not no into within between after before
during up over under more less most least just also""".split())


def _context(units: Sequence[Unit]):
    return request_entities("\n\n".join(u.content for u in units))


def _metric(units: Sequence[Unit]) -> str:
    metric = _context(units).metric
    return f"the {metric}" if metric else "the main figure"


def slot_name(unit: Unit) -> str:
    words = [w for w in re.findall(r"[a-z][a-z0-9]*", unit.content.lower()) if w not in NAME_STOP and len(w) > 2]
    return "_".join([unit.kind, *list(dict.fromkeys(words))[:4]])


def severity(hidden: Sequence[Unit], units: Sequence[Unit]) -> tuple[str, str]:
    unit = hidden[0]
    kind, text = unit.kind, unit.content
    if kind == "metric":
        return "P0", ("The metric definition decides what number is computed; without it the analyst computes a "
                      "plausible but different figure.")
    if kind == "time_window":
        if PERIOD.search(text):
            return "P0", "The period decides which rows are counted; a default window gives a different answer."
        return "P1", "A date column or time-zone detail shifts rows across the window edges."
    if kind == "data_source":
        if not any(u.kind == "schema" for u in units):
            return "P0", "Without the source there is nothing to query: the request shows no tables to choose from."
        return "P1", "Another table from the schema holds different rows; the query runs but answers on the wrong data."
    if kind == "filter":
        return "P1", "Rows outside the intended population change the figure materially."
    if kind == "grouping":
        return "P1", "The breakdown is the shape of the answer; one overall figure (or the wrong grain) cannot be used."
    if kind == "output_format":
        if TOP_N.search(text):
            return "P1", "The top-N or threshold decides which rows are reported, not only how they look."
        return "P2", "Presentation only (file, chart, sorting or rounding); the numbers stay right without it."
    return "P1", "Leaving it out makes the result materially incomplete."


def reference_questions(hidden: Sequence[Unit], units: Sequence[Unit]) -> list[str]:
    unit = hidden[0]
    ent = _context(units)
    metric = _metric(units)
    entity = ent.entity or "records"
    tables = ent.listed_tables or "the available tables"
    date_col = f"`{ent.date_columns[0]}`" if ent.date_columns else "a date column"
    dims = " or ".join(f"`{d}`" for d in ent.dimension_columns[:2]) or "a category"
    templates = {
        "metric": [f"How exactly should {metric} be calculated: what is counted and what is it divided by?",
                   f"What is the precise definition of {metric} you want, including any thresholds?"],
        "data_source": [f"Which tables should the numbers come from, for example {tables}, and how are they joined?",
                        f"Which table holds the {entity} we should count?"],
        "time_window": [f"Which period should the {entity} cover, from which start date to which end date?",
                        f"Is the time window based on {date_col} or another date column, and in which time zone?"],
        "filter": [f"Should any {entity} be left out of the analysis, such as test, internal or cancelled ones?",
                   f"Which {entity} are in scope, and which should be excluded?"],
        "grouping": [f"Should {metric} be one overall figure or broken down, for example by {dims} or by period?",
                     "At what level of detail should the results be grouped?"],
        "output_format": ["In what form should the result be delivered: a table, a chart or a file, and how should "
                          "it be sorted and rounded?",
                          "How should the output be laid out, and should it show every row or only the top ones?"],
    }
    return templates.get(unit.kind, [f"What should we know about the {unit.kind.replace('_', ' ')}?",
                                     f"Is there a rule about the {unit.kind.replace('_', ' ')} we should follow?"])


def hit_rule(unit: Unit, units: Sequence[Unit]) -> str:
    metric = _metric(units)
    focus = {
        "metric": f"how {metric} is defined or calculated (what is counted, the denominator, thresholds)",
        "data_source": "which tables or datasets the numbers come from (or how they are joined)",
        "time_window": "the period or date range the analysis covers (or its date column and time zone)",
        "filter": "which records are excluded from or kept in the analysis",
        "grouping": "how the result is broken down (its dimensions or granularity)",
        "output_format": "the form of the deliverable (table, chart, file, sorting, rounding or top-N)",
    }.get(unit.kind, f"the {unit.kind.replace('_', ' ')}")
    return f"The agent asks specifically about {focus}; a general question about other requirements does not count."


def failure_modes(unit: Unit, units: Sequence[Unit]) -> list[str]:
    return {
        "metric": ["Computing a plausible but different definition (another denominator, a mean instead of a median)",
                   "Counting events instead of distinct entities, or the reverse"],
        "data_source": ["Querying a similar-looking table that holds different rows",
                        "Joining on the wrong key and duplicating rows"],
        "time_window": ["Using a default window such as the last 30 days",
                        "Filtering on the wrong date column or in the wrong time zone"],
        "filter": ["Keeping records that should be excluded", "Dropping records that belong in scope"],
        "grouping": ["Returning one overall figure instead of the breakdown", "Grouping at the wrong granularity"],
        "output_format": ["Delivering the right numbers in a shape the requester cannot use",
                          "Wrong sorting, rounding or number of rows"],
    }.get(unit.kind, [f"Guessing the {unit.kind.replace('_', ' ')} instead of asking"])


ANSWER_LEAD = {
    "metric": "On how the figure is defined: ",
    "data_source": "On where the data comes from: ",
    "time_window": "On the period: ",
    "filter": "On what to leave out: ",
    "grouping": "On the breakdown: ",
    "output_format": "On the format of the result: ",
}
"""The simulated user's answer template: which point the reply settles, then the fact in the requester's words."""
ASPECTS = {
    "metric": ["How is the figure defined?", "How exactly should it be calculated?",
               "What is counted, and what is it divided by?"],
    "data_source": ["Which tables should the data come from?", "Which dataset should we use, and how is it joined?"],
    "time_window": ["Which period should the analysis cover?", "What date range or time window should we use?"],
    "filter": ["Which records should be excluded from the analysis?", "What should be left out or filtered out?",
               "Which rows are in scope?"],
    "grouping": ["How should the result be broken down?", "What should the figures be grouped by?",
                 "At what level of detail should we report?"],
    "output_format": ["In what format should the result be delivered?", "Should it be a table, a chart or a file?",
                      "How should the output be sorted and rounded?"],
}
"""Per kind, how questions about it are usually put (``Domain.user_aspects``: the simulated user's local backend
answers a question that asks about this kind of point with the fact of that kind)."""


def simulated_answer(hidden: Sequence[Unit], units: Sequence[Unit]) -> str:
    """The hidden fact in the requester's own words (the unit text) behind a lead-in naming the point it settles."""
    lead = ANSWER_LEAD.get(hidden[0].kind, "")
    return lead + " ".join(" ".join(u.content.split()) for u in hidden)

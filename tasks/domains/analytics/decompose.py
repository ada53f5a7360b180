"""Analytics requests: the unit taxonomy and the rule decomposer (segment, then type each segment by cue words).

Segmentation is the one every unit domain shares (``tasks.construction.segment``): sentences, bullet items, and
markdown tables kept whole with their lead-in. Typing scores every prose segment per kind with regex cues; the best
score wins, ties go to the earlier kind in :data:`PRIORITY`. Tables, column lists and other structured blocks are
``schema``; the opening sentence is ``context`` unless it carries a strong cue of its own.
"""

from __future__ import annotations

import re

from tasks.domains.api import Taxonomy
from tasks.records import Unit

UNIT_KINDS = ("context", "schema", "data_source", "metric", "time_window", "filter", "grouping", "output_format")
HIDEABLE_KINDS = ("data_source", "metric", "time_window", "filter", "grouping", "output_format")
DESCRIPTIONS = {
    "context": "who asks, for whom and why",
    "schema": "the tables and columns available (never hidden: the analyst can look them up)",
    "data_source": "which tables or datasets the answer comes from, and how they are joined",
    "metric": "the definition of the number to compute (numerator, denominator, aggregation, thresholds)",
    "time_window": "the period the analysis covers, its date column and time zone",
    "filter": "which rows are in or out of scope",
    "grouping": "the dimensions and granularity the result is broken down by",
    "output_format": "the shape of the deliverable: table layout, chart, file type, sorting, top-N, rounding",
}
TAXONOMY = Taxonomy(kinds=UNIT_KINDS, hideable=HIDEABLE_KINDS, descriptions=DESCRIPTIONS)
PRIORITY = ("metric", "time_window", "filter", "grouping", "output_format", "data_source", "context", "schema")
"""Tie-break order when two kinds score the same."""


def _rx(pattern: str) -> re.Pattern:
    return re.compile(pattern, re.IGNORECASE)


MONTHS = ("january|february|march|april|may|june|july|august|september|october|november|december|"
          "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec")
TABLE_NAME = re.compile(r"`([A-Za-z_][\w.]*)`")
PERIOD = _rx(rf"\b(\d{{4}}-\d{{2}}-\d{{2}}|(\d{{1,2}} )?({MONTHS})( \d{{1,2}})?,? \d{{4}}|q[1-4] \d{{4}}|"
             rf"(first|second|third|fourth|last) (half|quarter)|(calendar|fiscal|academic) year|\b20\d\d\b|"
             rf"(last|past|previous) (full )?(\d+ )?(days?|weeks?|months?|quarters?|years?)|"
             rf"\d+ (days|weeks|months) (up to|ending|before|after|starting)|year to date|ytd|season)\b")
CUES: dict[str, list[tuple[re.Pattern, float]]] = {
    "output_format": [
        (_rx(r"\b(csv|excel|spreadsheet|xlsx|json|pdf|parquet)\b"), 2.5),
        (_rx(r"\b(chart|heatmap|plot|graph|dashboard|pivot table|bar|line chart)\b"), 2.5),
        (_rx(r"\b(sorted|ordered|order(ed)? by|from (highest|lowest|cheapest)|descending|ascending|top \d+|"
             r"\d+ (brands|products|rows|items) with)\b"), 1.5),
        (_rx(r"\b(decimals?|rounded|round(ed)? to|whole (percentages|euros|numbers)|as (a )?percentages?|"
             r"percentages? (with|without)|one decimal|two decimals)\b"), 1.5),
        (_rx(r"\b(return|send|give|deliver|output|result should|i'?d like|i want|would be ideal|is (fine|enough)|"
             r"is what (i|we) need)\b"), 1.0),
        (_rx(r"\b(as rows|as columns|one row per|long format|columns? (week_start|\w+,))"), 1.5),
    ],
    "grouping": [
        (_rx(r"\b(break(ing)? (\w+ ){0,3}down by|broken down by|split (\w+ ){0,3}by|"
             r"group(ed)? (the \w+ )?by|grouped under|per (\w+ ){0,2}and (per )?\w+|for each)\b"), 2.5),
        (_rx(r"\b(show|report|give|count)\b.{0,60}\b(per|by) \w+"), 1.6),
        (_rx(r"\b(per|by) (country|region|team|plan|month|week|day|weekday|depot|department|city|store|hotel|gym|"
             r"area|quarter|campaign|channel|platform|category|brand|faculty|advertiser|airport|district)\b"), 0.8),
    ],
    "time_window": [
        (PERIOD, 2.0),
        (_rx(r"\b(period|window|cover(s|ing)?|between .{1,40} and|from .{1,30} to|during|up to and including|"
             r"time ?zone|utc|local (airport )?time|season|the weeks?)\b"), 0.8),
        (_rx(r"^\W*(use|consider|look at|the (period|window|analysis))\b.{0,40}\b(from|between|in|during|of)\b"), 0.4),
    ],
    "filter": [
        (_rx(r"\b(exclud\w*|leave out|left out|leaving out|drop|skip|ignor\w*|out of scope|do not (count|include)|"
             r"don't (count|include)|remove|without)\b"), 3.0),
        (_rx(r"\b(only (count|include|consider|keep|use)|count only|only \w+ (members|donors|staff|courses))\b"), 1.6),
        (_rx(r"\b(test accounts?|internal|staff|spam|cancelled|interns|contractors|discontinued)\b"), 0.6),
    ],
    "metric": [
        (_rx(r"\b(is|are) (defined as|the (number|share|time|mean|median|sum|total|count|ratio))\b|"
             r"\b(counts? as|is calculated|divided by|share of|ratio of|the median|the mean|mean number|"
             r"number of distinct|distinct (users|members|customers))\b"), 2.5),
        (_rx(r"^\W*(an? |the )?[\w\- ]{2,40} (rate|ratio|share|margin|conversion|occupancy|turnover|time|size|"
             r"retention|churn|attrition|per \w+) (is|are|means)\b"), 2.0),
        (_rx(r"^\W*an? [\w\- ]{2,40} (is|counts as) (someone|a|an|one|the|any)\b"), 2.5),
        (_rx(r"\b(when|within|at least|more than|less than)\b"), 0.3),
    ],
    "data_source": [
        (_rx(r"\b(table|tables|view|dataset|warehouse|snapshots)\b"), 1.2),
        (_rx(r"\b(join(ed)? (to|with|on)|joined|linked (by|through)|matched on|combine|match `|from `|with `|"
             r"and `|on \w+_id)\b"), 1.2),
        (_rx(r"^\W*(use|using|take|read|pull|work from|the source|source is|combine|match)\b"), 0.8),
    ],
    "context": [
        (_rx(r"\b(i'?m|i am|i run|i work|i manage|i look after|i handle|i sell|i coordinate|i support|i volunteer|"
             r"we run|our (team|group|chain|product|operations|company|manager)|asked (me|how)|wants? to (know|see|"
             r"understand)|board meeting|preparing)\b"), 2.5),
    ],
}
"""Regex cue -> points per kind. Set by hand on the samples in data/samples/analytics/."""
FIRST_CONTEXT_BONUS = 2.0
STRONG = 3.0
"""A first sentence keeps its own kind over ``context`` when its cues reach this score."""
COLUMN_LIST = re.compile(r"`[\w.]+`\s*(\(|:)\s*\w+(,\s*\w+){2,}")


def classify(text: str, *, first: bool = False, structured: bool = False) -> str:
    """The kind of one segment."""
    from tasks.text import cue_scores

    if structured or COLUMN_LIST.search(text):
        return "schema"
    points = cue_scores(text, CUES, UNIT_KINDS)
    if first and max(v for k, v in points.items() if k != "context") < STRONG:
        points["context"] += FIRST_CONTEXT_BONUS
    best = max(points.values())
    if best <= 0:
        return "filter" if not first and re.search(r"\bonly\b", text, re.IGNORECASE) else "context"
    return next(kind for kind in PRIORITY if points[kind] == best)


def decompose_text(text: str) -> list[Unit]:
    """A complete analytics request cut into typed units ``U1..Un`` (verbatim slices, whitespace collapsed)."""
    from tasks.construction.segment import segment

    units = []
    for i, seg in enumerate(segment(text)):
        kind = classify(seg.content, first=i == 0, structured=seg.structured)
        units.append(Unit(id=f"U{i + 1}", kind=kind, content=seg.content.strip()))
    return units

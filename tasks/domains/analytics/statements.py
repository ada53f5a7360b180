"""What a public analytics brief states, aspect by aspect: the gap inventory's own rules (:mod:`.gaps`).

These checks are written apart from the construction side (the decomposer that typed the request's sentences and
chose what to hide): they do not segment or type sentences the way it does, and import nothing from it. Each aspect
is a separate test over the brief's prose sentences (the schema block left out); one sentence may state several
aspects, and an aspect counts as stated when any sentence passes its test:

- ``data_source``: a sentence names a schema table next to a sourcing verb ("use", "take … from", "joined",
  "matched on"), or the schema has only one table to choose from;
- ``metric``: a definition: "X is defined as / counts as / means", "X is <adjective> when …", "a X is someone who",
  or arithmetic words ("divided by", "minus", "the share of", "the mean number of");
- ``time_window``: a concrete period: a date, a month or quarter with its year, a named year ("calendar year
  2023"), or a relative window with a length ("the 30 days up to", "the last full quarter");
- ``filter``: an exclusion or restriction verb ("exclude", "leave out", "ignore", "only include", "out of scope");
- ``grouping``: a breakdown: "by / per <dimension>" after a reporting verb, "for each", "one row per", "as rows";
- ``output_format``: a deliverable (chart, CSV, Excel, a table of results) or its layout (sorted, rounded, decimals,
  top N);
- ``date_basis``: which date column defines the window: a date column of the schema named in the prose, an event
  verb tied to the window ("placed between", "issued between") or a time zone;
- ``data_quality``: duplicates, missing values or bad readings are mentioned.
"""

from __future__ import annotations

import re
from functools import lru_cache

from tasks.domains.analytics.brief_schema import read_schema, schema_lines

ASPECTS = ("data_source", "metric", "time_window", "filter", "grouping", "output_format", "date_basis",
           "data_quality")


def _rx(pattern: str) -> re.Pattern:
    return re.compile(pattern, re.IGNORECASE)


SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+(?=[A-Z`'\"(])")
MONTH = (r"(january|february|march|april|may|june|july|august|september|october|november|december|"
         r"jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)")
YEAR = r"(19|20)\d\d"

SOURCE_VERB = _rx(r"\b(use|using|used|take|taken|pull|read|work from|comes? from|come from|source is|from|joined|join|"
                  r"combine|combined|match|matched|linked|plus|with)\b")
JOIN_KEY = _rx(r"\b(joined|linked|matched|combined?)\b.{0,40}\b(on|by|through|via)\b")
DEFINITION = [
    _rx(r"\b(is|are) (defined as|calculated as|computed as|measured as)\b"),
    _rx(r"\b(counts? as|means|is the (number|count|share|proportion|percentage|ratio|sum|total|mean|median|"
        r"average))\b"),
    _rx(r"\b(is|are|counts? as) (late|delayed|retained|active|completed|converted|churned|on time|a repeat|a stock-out)"
        r"\b.{0,80}\b(when|if|once)\b"),
    _rx(r"\b(an?|the) [a-z\- ]{2,40} (is|are|means) (an?|any|someone|anyone|one)\b.{0,40}\b(who|whose|that|which|"
        r"with|where)\b"),
    _rx(r"\b(divided by|minus|times|over the number of|as a (share|proportion|percentage) of|the share of|"
        r"the proportion of|the ratio of|the (mean|median|average) (number|value|amount) of|number of distinct)\b"),
]
PERIOD = [
    _rx(r"\b\d{4}-\d{2}-\d{2}\b"),
    _rx(rf"\b(\d{{1,2}}(st|nd|rd|th)? )?{MONTH}( \d{{1,2}})?,? (to|and|-|–)?.{{0,30}}\b{YEAR}\b"),
    _rx(rf"\b{MONTH} {YEAR}\b"),
    _rx(rf"\b(q[1-4]|quarter|half|(calendar|fiscal|academic|financial) year|year)\b.{{0,25}}\b{YEAR}\b"),
    _rx(rf"\b{YEAR}\b.{{0,20}}\b(q[1-4]|quarter|half)\b"),
    _rx(r"\b(last|past|previous|trailing) (full |complete )?(\d+ |two |three |four |six |twelve )?"
        r"(days?|weeks?|months?|quarters?|years?)\b"),
    _rx(r"\b(\d+|two|three|four|six|twelve) (days|weeks|months|quarters) (up to|ending|before|after|from|since)\b"),
    _rx(r"\b(year to date|ytd|month to date|mtd)\b"),
    _rx(rf"\b(in|during|for|of|cover(s|ing)?|between|from|since) {YEAR}\b"),
]
EXCLUSION = _rx(r"\b(exclud\w*|leave out|left out|leaving out|ignor\w*|skip|drop|remove|filter(ed)? out|"
                r"out of scope|do not (count|include|consider)|don't (count|include|consider)|"
                r"not be (counted|included)|"
                r"only (include|count|consider|keep|use|look at) |count only|restrict\w* to|limited to)\b")
BREAKDOWN = [
    _rx(r"\b(break(s|ing)?|broken|split|group(ed|s)?|segment(ed)?|slice[ds]?)\b.{0,40}\b(by|per|down|under|into)\b"),
    _rx(r"\b(show|report|give|count|compute|calculate|compare|list|return)\b.{0,60}\b(per|by) (the )?[a-z_]+"),
    _rx(r"\b(for each|one row per|one line per|one bar per|as rows|as columns|against each other|\w+ against \w+)\b"),
]
DELIVERABLE = [
    _rx(r"\b(csv|excel|xlsx|spreadsheet|sheet|json|pdf|parquet|dashboard|heatmap|chart|graph|plot|histogram)\b"),
    _rx(r"\b(a|as a|in a|the final|small|short|simple) (table|list)\b|\btable (of|with|underneath|below)\b"),
    _rx(r"\b(sort(ed)?|order(ed)?|rank(ed)?) (by|from)\b|\b(ascending|descending)\b|\btop \d+\b|"
        r"\b\d+ \w+ with the most\b"),
    _rx(r"\b(decimals?|decimal places?|rounded|round to|whole (numbers|percentages|euros|dollars)|as (a )?percentages?|"
        r"percentages (with|without))\b"),
]
EVENT_WINDOW = _rx(r"\b(placed|issued|requested|started|starting|created|due|promised|booked|made|sent|opened|"
                   r"delivered|enrolled|registered|signed up|joined)\b.{0,20}\b(between|in|during|from|on|before|"
                   r"after|up to)\b")
TIME_ZONE = _rx(r"\b(utc|gmt|time ?zone|local (\w+ )?time|cet|cest|est|pst)\b")
QUALITY = _rx(r"\b(duplicates?|duplicated|de-?dup\w*|missing|null|blank|empty|incomplete|estimates?|estimated|"
              r"negative value|invalid|corrupt\w*|outliers?)\b")


def sentences(brief: str) -> list[str]:
    """The brief's prose sentences, schema lines left out (list items and paragraphs split at sentence ends)."""
    skip = schema_lines(brief)
    out: list[str] = []
    for i, line in enumerate(brief.splitlines()):
        text = re.sub(r"^\s*([-*•]|\d+[.)])\s+", "", line).strip()
        if i in skip or not text:
            continue
        out.extend(s.strip() for s in SENTENCE_BREAK.split(text) if s.strip())
    return out


def _first(found: list[str]) -> str:
    return found[0][:200] if found else ""


def _source(sentences_: list[str], tables: list[str], schema_tables: int) -> str:
    named = [s for s in sentences_ if any(f"`{t}`" in s for t in tables) and SOURCE_VERB.search(s)]
    named += [s for s in sentences_ if JOIN_KEY.search(s)]
    if named:
        return _first(named)
    return "the schema lists a single table" if schema_tables == 1 else ""


def _date_basis(brief: str, sentences_: list[str], date_columns: list[str]) -> str:
    if len(date_columns) < 2:
        return "the schema has at most one date column"
    named = [s for s in sentences_ if any(re.search(rf"\b{re.escape(c)}\b", s) for c in date_columns)]
    named += [s for s in sentences_ if EVENT_WINDOW.search(s) and any(p.search(s) for p in PERIOD)]
    named += [s for s in sentences_ if TIME_ZONE.search(s)]
    return _first(named)


@lru_cache(maxsize=4096)
def stated_aspects(brief: str) -> dict[str, str]:
    """Aspect -> the sentence that states it (or a reason), for every aspect the brief settles."""
    found = sentences(brief)
    schema = read_schema(brief)
    checks = {
        "data_source": _source(found, schema.tables, len(schema.columns)),
        "metric": _first([s for s in found if any(p.search(s) for p in DEFINITION)]),
        "time_window": _first([s for s in found if any(p.search(s) for p in PERIOD)]),
        "filter": _first([s for s in found if EXCLUSION.search(s)]),
        "grouping": _first([s for s in found if any(p.search(s) for p in BREAKDOWN)]),
        "output_format": _first([s for s in found if any(p.search(s) for p in DELIVERABLE)]),
        "date_basis": _date_basis(brief, found, schema.date_columns),
        "data_quality": _first([s for s in found if QUALITY.search(s)]),
    }
    return {aspect: evidence for aspect, evidence in checks.items() if evidence}

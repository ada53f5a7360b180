"""The gap inventory's own reading of a brief's schema: tables, their columns by role, and the metric it names.

Part of the inventory (:mod:`.gaps`), written apart from the construction side on purpose: nothing here comes from
the decomposer, the slot templates or :mod:`.entities`. A schema is either a markdown table (``| `t` | a, b |``) or
a list (``- `t`: a, b``); any other backticked name in the prose counts as a table too.
"""

from __future__ import annotations

import re
from functools import lru_cache

from pydantic import BaseModel, ConfigDict

BACKTICKED = re.compile(r"`([A-Za-z_][\w.]*)`")
TABLE_ROW = re.compile(r"^\s*\|\s*`([A-Za-z_][\w.]*)`\s*\|([^|\n]*)\|?\s*$")
LIST_ROW = re.compile(r"^\s*[-*]\s*`([A-Za-z_][\w.]*)`\s*:\s*(.+)$")
IDENTIFIER = re.compile(r"[A-Za-z_]\w*")

DATE_SUFFIXES = ("_at", "_ts", "_date", "_on", "_time", "_day", "_dep", "_arr")
DATE_NAMES = frozenset({"date", "day", "ts", "timestamp", "check_in", "check_out", "month", "week"})
FLAG_PREFIXES = ("is_", "has_")
CODED_SUFFIXES = ("status", "type", "source", "reason", "service", "channel", "kind", "tier")
MEASURE_PARTS = ("_id", "id", "_eur", "_usd", "_gbp", "amount", "count", "qty", "quantity", "kwh", "seconds",
                 "minutes", "total", "spend", "cost", "price", "revenue", "rooms", "guests", "headcount", "seats",
                 "on_hand", "units", "sku", "name", "code", "number")
METRIC_NOUNS = ("rate", "share", "ratio", "margin", "occupancy", "attrition", "churn", "retention", "conversion",
                "completion", "cancellation", "utilisation", "utilization", "turnover", "punctuality", "engagement",
                "basket size", "response time", "reply time", "resolution time", "per member", "per signup",
                "per customer", "per user", "stock-out days")
METRIC = re.compile(r"\b((?:[a-z][a-z\-]*\s){0,2}(?:" + "|".join(re.escape(n) for n in METRIC_NOUNS) + r")s?)\b",
                    re.IGNORECASE)
FILLER = frozenset("""the a an our my their its this that these those and or of for in on at by with to is are was
were how many much what which when who whose about asking keep know show split break report give count compute
calculate return track compare deliver send as it each every one figure figures overall""".split())
"""Words that end a metric's modifiers: a metric is the words after the last of them ("the churn rate")."""
VAGUE = frozenset(METRIC_NOUNS[:2])
"""A bare "rate" or "share" names no metric."""
COUNTED = re.compile(r"\b(?:an?|the) ([a-z][a-z\- ]{2,30}?) (?:is|are) (?:someone|anyone|one|any \w+) "
                     r"(?:who|whose|that)\b", re.IGNORECASE)
"""A definition of the thing counted ("a repeat customer is someone who ..."): its share is the metric."""


class BriefSchema(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    tables: list[str] = []
    """Schema tables first, then other backticked names in the prose that are not columns."""
    columns: dict[str, list[str]] = {}
    """Table -> its columns, as the schema lists them."""
    date_columns: list[str] = []
    flag_columns: list[str] = []
    """Columns that mark rows in or out (``is_staff``, ``status``)."""
    dimension_columns: list[str] = []
    """Columns a result can be broken down by (text-like, not ids, measures or dates)."""
    metric: str = ""
    """The metric the brief talks about ("repeat rate"), "" when it names none."""

    @property
    def entity(self) -> str:
        """What the rows are, in words: the first table's name ("invoice lines")."""
        return self.tables[0].split(".")[-1].replace("_", " ") if self.tables else "records"

    def listing(self, k: int = 3) -> str:
        names = [f"`{t}`" for t in self.tables[:k]]
        if len(names) <= 1:
            return "".join(names)
        return ", ".join(names[:-1]) + f" and {names[-1]}"


def schema_lines(brief: str) -> set[int]:
    """Indices of the brief's lines that belong to the schema (table rows, separators, ``- `t`: a, b`` items)."""
    out = set()
    for i, line in enumerate(brief.splitlines()):
        stripped = line.strip()
        if stripped.startswith("|") or LIST_ROW.match(line) or re.fullmatch(r"[A-Za-z ]{0,30}tables?:", stripped):
            out.add(i)
    return out


def _is_date(col: str) -> bool:
    return col in DATE_NAMES or col.endswith(DATE_SUFFIXES) or "date" in col


def _is_flag(col: str) -> bool:
    return col.startswith(FLAG_PREFIXES) or col.endswith(CODED_SUFFIXES)


def _is_measure(col: str) -> bool:
    return any(col == p.strip("_") or col.endswith(p) for p in MEASURE_PARTS)


def _metric(prose: str) -> str:
    for match in METRIC.finditer(prose):
        words = match.group(1).lower().split()
        cut = max((i + 1 for i, w in enumerate(words) if w in FILLER), default=0)
        phrase = " ".join(words[cut:])
        phrase = phrase[:-1] if phrase.endswith("s") and not phrase.endswith("days") else phrase
        if phrase and phrase not in VAGUE:
            return phrase
    counted = COUNTED.search(prose)
    return f"{counted.group(1).lower()} rate" if counted else ""


@lru_cache(maxsize=4096)
def read_schema(brief: str) -> BriefSchema:
    columns: dict[str, list[str]] = {}
    for line in brief.splitlines():
        match = TABLE_ROW.match(line) or LIST_ROW.match(line)
        if match:
            cells = [c.strip() for c in match.group(2).split(",")]
            columns[match.group(1)] = [c for c in cells if IDENTIFIER.fullmatch(c)]
    known = {c for cols in columns.values() for c in cols}
    skip = schema_lines(brief)
    prose = "\n".join(line for i, line in enumerate(brief.splitlines()) if i not in skip)
    tables = list(dict.fromkeys([*columns, *(t for t in BACKTICKED.findall(prose) if t not in known)]))
    every = list(dict.fromkeys(c for cols in columns.values() for c in cols))
    dates = [c for c in every if _is_date(c)]
    flags = [c for c in every if _is_flag(c) and c not in dates]
    dims = [c for c in every if c not in dates and not _is_measure(c) and not c.startswith(FLAG_PREFIXES)]
    dims = [c for c in dims if c not in flags] + [c for c in dims if c in flags]
    return BriefSchema(tables=tables, columns=columns, date_columns=dates, flag_columns=flags,
                       dimension_columns=dims, metric=_metric(prose))

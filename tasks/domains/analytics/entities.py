"""What an analytics request names: tables, columns by role (dates, dimensions, flags), the metric, the main entity.

Read from the text alone (the public brief, or the full request during construction). Columns come from the schema
units (markdown tables or ``- `table`: col, col`` lists); the metric name from the first "<name> rate / share /
time ..." phrase or a known metric word.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

TABLE = re.compile(r"`([A-Za-z_][\w.]*)`")
SCHEMA_ROW = re.compile(r"^\s*(?:\|\s*|[-*]\s*)`([A-Za-z_][\w.]*)`\s*(?:\||:)\s*([^|\n]+)", re.MULTILINE)
DATE_COLUMN = re.compile(r"(_at|_ts|_date|_on|^date|^day|^ts|_day|_dep|^check_in|^check_out)$")
FLAG_COLUMN = re.compile(r"^(is_|has_)|(^|_)(status|type|source|reason|service|channel)$")
NUMERIC_COLUMN = re.compile(r"(_id|_eur|_usd|_amount|amount|_count|count|qty|quantity|kwh|seconds\w*|rooms|guests|"
                            r"headcount|total\w*|spend\w*|cost\w*|^sku|on_hand|seats|^name|_code)$")
METRIC_PHRASE = re.compile(
    r"\b((?:[a-z][\w\-]*\s)?(?:rate|share|ratio|margin|per (?:signup|member|customer|user)))\b", re.IGNORECASE)
METRIC_WORDS = re.compile(
    r"\b(repeat purchases?|repeat rate|repeat customers?|churn|retention|conversion|attrition|margin|occupancy|"
    r"turnover|delays?|"
    r"no-shows?|click-through|completion|cancellations?|active viewers?|basket size|loans per member|stock-outs?|"
    r"response time|late payments?|crash(?:-free)?|peak share|cost per signup|on-time)\b", re.IGNORECASE)
STOP = frozenset("""the a an our my your this that these those of for to in on at by with and or is are be
how many much what which when who whether""".split())


@dataclass(frozen=True)
class RequestEntities:
    tables: list[str] = field(default_factory=list)
    columns: dict[str, list[str]] = field(default_factory=dict)
    """Table -> its columns, from the schema."""
    date_columns: list[str] = field(default_factory=list)
    dimension_columns: list[str] = field(default_factory=list)
    flag_columns: list[str] = field(default_factory=list)
    metric: str = ""
    """The metric the request is about ("churn rate"), or "" when none is named."""
    entity: str = ""
    """The main thing counted (the first table's name in words: "orders", "subscriptions")."""

    @property
    def listed_tables(self) -> str:
        return _listing([f"`{t}`" for t in self.tables[:3]])


def _listing(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} and {items[-1]}"


def _words(name: str) -> str:
    return name.split(".")[-1].replace("_", " ")


@lru_cache(maxsize=4096)
def request_entities(text: str) -> RequestEntities:
    columns: dict[str, list[str]] = {}
    for table, cols in SCHEMA_ROW.findall(text):
        columns[table] = [c.strip() for c in cols.split(",") if re.fullmatch(r"[A-Za-z_]\w*", c.strip())]
    tables = list(dict.fromkeys([*columns, *(t for t in TABLE.findall(text) if t not in _all_columns(columns))]))
    all_cols = list(dict.fromkeys(c for cols in columns.values() for c in cols))
    dates = [c for c in all_cols if DATE_COLUMN.search(c)]
    flags = [c for c in all_cols if FLAG_COLUMN.search(c)]
    dims = [c for c in all_cols
            if c not in dates and not re.match(r"(is|has)_|status$", c) and not NUMERIC_COLUMN.search(c)]
    metric = ""
    for match in METRIC_WORDS.finditer(text):
        metric = match.group(1).lower()
        break
    if not metric:
        match = METRIC_PHRASE.search(text)
        if match:
            metric = " ".join(w for w in match.group(1).lower().split() if w not in STOP)
    metric = _noun(metric)
    dims = [c for c in dims if c not in flags] + [c for c in dims if c in flags]
    entity = _words(next(iter(columns), tables[0] if tables else "")) or "records"
    return RequestEntities(tables=tables, columns=columns, date_columns=dates, dimension_columns=dims,
                           flag_columns=flags, metric=metric, entity=entity)


WHOLE = re.compile(r"\b(rate|share|ratio|margin|occupancy|turnover|time|size|per \w+|viewers?|days)$")
SPECIAL = {"stock-out": "stock-out days", "stock-outs": "stock-out days", "delays": "delay rate",
           "late payments": "late payment share", "late payment": "late payment share",
           "repeat purchases": "repeat purchase rate", "repeat purchase": "repeat purchase rate",
           "repeat customer": "repeat customer rate", "repeat customers": "repeat customer rate",
           "active viewer": "active viewers", "cancellations": "cancellation rate", "no-shows": "no-show rate"}


def _noun(metric: str) -> str:
    """A metric as a noun phrase ("churn" -> "churn rate", "on-time" -> "on-time rate")."""
    if not metric:
        return ""
    if metric in SPECIAL:
        return SPECIAL[metric]
    return metric if WHOLE.search(metric) else f"{metric} rate"


def _all_columns(columns: dict[str, list[str]]) -> set[str]:
    return {c for cols in columns.values() for c in cols}

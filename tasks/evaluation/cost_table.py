"""The cost and efficiency table of an episode evaluation: one row per ``protocol::method`` with its tokens, USD,
latency, score per dollar and per question (the figures ``tasks.evaluation.metrics.efficiency`` adds to each summary
row). One definition for the evaluation's ``report.md`` and the pipeline report (``tasks/reporting``); plain Python,
no heavy imports.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

TITLE = "Cost and efficiency"
HEADER = ["protocol::method", "runs", "tokens", "tokens/run", "est. cost (USD)", "cost/run (USD)", "latency (s)",
          "latency/run (s)", "WSS macro", "score / $", "score / question"]
NOTE = ("Tokens, cost and latency of the methods' own role calls (the judge's are not counted); cost is litellm's "
        "price of each provider call, 0 for local backends and unpriced models, and cache hits cost nothing; latency "
        "is wall time (provider calls, or the local backends' own work). Score = "
        "WSS macro; score / $ = score / cost per run; score / question = score / atomic questions per run.")
FIELDS = (("RunCount", 0), ("TotalTokens", 0), ("TokensPerRun", 0), ("EstimatedCostUSD", 4), ("CostPerRunUSD", 5),
          ("LatencySeconds", 2), ("LatencyPerRunSeconds", 3), ("WeightedSlotScore_macro", 3), ("ScorePerDollar", 1),
          ("ScorePerQuestion", 3))


def _cell(value: Any, digits: int) -> str:
    if value is None:
        return "–"
    if isinstance(value, int) or digits == 0:
        return str(round(value))
    return f"{value:.{digits}f}"


def cost_rows(summary: Mapping[str, Any]) -> list[list[str]]:
    """Cells of every row of an episode ``summary.json`` (ranked rows first, reference rows marked), in report
    order; empty when the summary has no cost figures (a SWE summary, or one written before they existed)."""
    from tasks.episodes.records import PROTOCOLS

    order = {p: i for i, p in enumerate(PROTOCOLS)}
    out = []
    for part, mark in (("rows", ""), ("reference_rows", " (reference)")):
        rows = summary.get(part) or {}
        for key in sorted(rows, key=lambda k: (order.get(k.split("::")[0], 99), k.split("::", 1)[-1])):
            row = rows[key]
            if isinstance(row, dict) and "TotalTokens" in row:
                out.append([f"`{key}{mark}`", *[_cell(row.get(name), digits) for name, digits in FIELDS]])
    return out


def cost_markdown(summary: Mapping[str, Any]) -> list[str]:
    """The table as Markdown lines under a ``## Cost and efficiency`` heading; no lines without cost figures."""
    rows = cost_rows(summary)
    if not rows:
        return []
    lines = [f"## {TITLE}", "", "| " + " | ".join(HEADER) + " |", "|" + "|".join("---" for _ in HEADER) + "|"]
    return lines + ["| " + " | ".join(r) + " |" for r in rows] + ["", NOTE, ""]

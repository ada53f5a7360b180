"""Cost and efficiency, for both kinds of evaluation: a row's figures (:func:`efficiency`: tokens, USD, latency, score
per dollar and per question, over its runs or cases) and their table, one row per ``protocol::method`` of an episode
evaluation (``tasks.evaluation.metrics``) or per method of the SWE question evaluation (``SWE_*``,
``swe_cost_rows``: from each method's ``efficiency`` block, ``tasks.evaluation.question_lists.efficiency``). One
definition for the evaluations' ``report.md`` and the pipeline report (``tasks/reporting``); plain Python, no heavy
imports.
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


def efficiency(*, tokens: int, cost: float, latency: float, n: int, per: str, score: float | None,
               questions: float | None) -> dict[str, Any]:
    """A row's figures over its ``n`` units (``per``: ``Run`` or ``Case``, in the names): ``tokens``, ``cost``
    (USD: litellm's price, 0 for local backends) and ``latency`` (seconds) in total and per unit; ``ScorePerDollar``:
    ``score`` / cost per unit (None at zero cost); ``ScorePerQuestion``: ``score`` / ``questions`` (questions per
    unit; None when there are none)."""
    per_unit = cost / n
    return {"TotalTokens": tokens, f"TokensPer{per}": tokens / n, "EstimatedCostUSD": cost,
            f"CostPer{per}USD": per_unit, "LatencySeconds": latency, f"LatencyPer{per}Seconds": latency / n,
            "ScorePerDollar": score / per_unit if score is not None and per_unit > 0 else None,
            "ScorePerQuestion": score / questions if score is not None and questions else None}


def markdown_table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table's lines (the evaluations' ``report.md`` tables)."""
    return ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|",
            *["| " + " | ".join(r) + " |" for r in rows]]


def _cell(value: Any, digits: int) -> str:
    if value is None:
        return "–"
    if isinstance(value, int) or digits == 0:
        return str(round(value))
    return f"{value:.{digits}f}"


def cost_rows(summary: Mapping[str, Any]) -> list[list[str]]:
    """Cells of every row of an episode ``summary.json`` (ranked rows first, reference rows marked), in report
    order; empty when the summary has no episode cost figures (a SWE summary: ``swe_summary_cost_rows``, or one
    written before they existed)."""
    from tasks.episodes.records import PROTOCOLS

    order = {p: i for i, p in enumerate(PROTOCOLS)}
    out = []
    for part, mark in (("rows", ""), ("reference_rows", " (reference)")):
        rows = summary.get(part) or {}
        for key in sorted(rows, key=lambda k: (order.get(k.split("::")[0], 99), k.split("::", 1)[-1])):
            row = rows[key]
            if isinstance(row, dict) and "TotalTokens" in row:
                out.append([f"{key}{mark}", *[_cell(row.get(name), digits) for name, digits in FIELDS]])
    return out


def cost_markdown(summary: Mapping[str, Any]) -> list[str]:
    """The table as Markdown lines under a ``## Cost and efficiency`` heading; no lines without cost figures."""
    rows = cost_rows(summary)
    if not rows:
        return []
    return [f"## {TITLE}", "", *markdown_table(HEADER, rows), "", NOTE, ""]


# ---- the SWE question evaluation (``questions.run.efficiency``: one ``efficiency`` block per method row) ----------

SWE_HEADER = ["method", "cases", "tokens", "tokens/case", "est. cost (USD)", "cost/case (USD)", "latency (s)",
              "latency/case (s)", "weighted recovery", "score / $", "score / question"]
SWE_FIELDS = (("Cases", 0), ("TotalTokens", 0), ("TokensPerCase", 0), ("EstimatedCostUSD", 4), ("CostPerCaseUSD", 5),
              ("LatencySeconds", 2), ("LatencyPerCaseSeconds", 3), ("Score", 3), ("ScorePerDollar", 1),
              ("ScorePerQuestion", 3))
SWE_NOTE = ("Tokens, cost and latency of every role call made while computing a method's units (its generation, the "
            "simulated user, the judges and the classifier); cost is litellm's price of each provider call, 0 for "
            "local backends and unpriced models, and cache hits cost nothing; latency is wall time. Score = weighted "
            "recovery; score / $ = score / cost per case (– at zero cost); score / question = score / questions per "
            "case.")


def swe_cost_rows(every: Mapping[str, Any]) -> list[list[str]]:
    """Cells of the SWE table, one row per method (name -> summary row) that has an ``efficiency`` block."""
    return [[name, *[_cell(m["efficiency"].get(f), d) for f, d in SWE_FIELDS]]
            for name, m in every.items() if isinstance(m, dict) and isinstance(m.get("efficiency"), dict)]


def swe_summary_cost_rows(summary: Mapping[str, Any]) -> list[list[str]]:
    """``swe_cost_rows`` of a SWE ``summary.json``: ranked methods, then the reference rows (marked)."""
    methods, reference = summary.get("methods") or {}, summary.get("reference_methods") or {}
    every = {**{n: methods[n] for n in summary.get("method_order") or [] if n in methods},
             **{f"{n} (reference)": reference[n] for n in summary.get("reference_order") or [] if n in reference}}
    return swe_cost_rows(every)


def swe_cost_lines(every: Mapping[str, Any]) -> list[str]:
    """The SWE table as Markdown lines under a ``Cost and efficiency:`` line (the question report's sections are
    plain lines), led by a blank line; no lines without ``efficiency`` blocks."""
    rows = swe_cost_rows(every)
    if not rows:
        return []
    return ["", f"{TITLE}:", "", *markdown_table(SWE_HEADER, rows), "", SWE_NOTE]

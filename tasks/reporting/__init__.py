"""The combined report: every stage's outputs in one Markdown page and one static HTML page (figures embedded),
plus one flat metrics file. Each number is shown with the backend that produced it (DESIGN §4)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tasks.reporting.inputs import GateResult, ReportInputs, flatten, load_gate_results, load_stage_metrics
from tasks.reporting.model import Figure, Report, Section, Table, Text
from tasks.reporting.sections import build_report
from tasks.reporting.to_html import render_html
from tasks.reporting.to_markdown import render_markdown

__all__ = ["Figure", "GateResult", "Report", "ReportInputs", "Section", "Table", "Text", "build_report", "flatten",
           "load_gate_results", "load_stage_metrics", "render_html", "render_markdown", "write_report"]


def write_report(title: str, inputs: ReportInputs | dict[str, dict[str, Any]], folder: Path) -> Report:
    """``report.md``, ``report.html``, ``metrics.json`` and the figures into ``folder`` (no timestamps: a rerun
    over the same inputs writes the same bytes)."""
    from tasks.store import atomic_write_bytes, atomic_write_json, atomic_write_text

    if not isinstance(inputs, ReportInputs):
        inputs = ReportInputs(metrics=inputs)
    report = build_report(title, inputs)
    for figure in report.figures():
        atomic_write_bytes(folder / figure.name, figure.data)
    atomic_write_text(folder / "report.md", render_markdown(report))
    atomic_write_text(folder / "report.html", render_html(report))
    atomic_write_json(folder / "metrics.json", {r["key"]: r["value"] for r in flatten(inputs.metrics)})
    return report

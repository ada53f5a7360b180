"""SWE evaluation plots (deterministic PNGs, matplotlib Agg, no timestamp): the category mix of each method's
questions, and questions per issue versus weighted information recovery with 95% issue-bootstrap bars (the latter's
points also as ``dvc plots`` records, :func:`recovery_rows`)."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tasks.evaluation.question_metrics import LABELS
from tasks.store import atomic_write_bytes

NAMES = {"error_info": "Error Information", "reproduction": "Reproduction Steps",
         "expected_behavior": "Expected Behavior", "implementation": "Implementation Details",
         "external_refs": "External References", "version_env": "Version/Environment", "irrelevant": "irrelevant"}
COLOURS = ("#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#7f7f7f")


def _save(fig, path: Path) -> Path:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata={"Software": None})
    atomic_write_bytes(Path(path), buffer.getvalue())
    return Path(path)


def _figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=110)
    FigureCanvasAgg(fig)
    return fig


def category_plot(methods: dict[str, dict[str, Any]], path: Path) -> Path:
    """Stacked horizontal bars: the share of each method's questions per category (six + irrelevant)."""
    names = [m for m in methods if methods[m].get("questions")]
    fig = _figure(10, 1.4 + 0.45 * max(len(names), 1))
    ax = fig.subplots()
    for row, name in enumerate(names):
        left = 0.0
        for label, colour in zip(LABELS, COLOURS):
            share = methods[name]["category_share"].get(label) or 0.0
            ax.barh(row, share, left=left, color=colour, label=NAMES[label] if row == 0 else None, height=0.7)
            left += share
    ax.set_yticks(range(len(names)), [f"{n} ({methods[n]['questions']} q)" for n in names], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of questions (question_classifier)")
    ax.set_title("Question categories per method", fontsize=10)
    if names:
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    fig.tight_layout()
    return _save(fig, path)


def _points(methods: dict[str, dict[str, Any]]) -> Iterator[tuple[int, str, float, float, list, list]]:
    """(index among the sorted methods, name, questions per issue, weighted recovery, their 95% CIs) for every
    method with both values."""
    for i, (name, m) in enumerate(sorted(methods.items())):
        x, y = m.get("questions_per_issue"), m.get("weighted_recovery")
        if x is None or y is None:
            continue
        ci = m["CI95"]
        yield i, name, x, y, ci.get("questions_per_issue") or [x, x], ci.get("weighted_recovery") or [y, y]


def recovery_rows(methods: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The points of :func:`recovery_plot` for ``dvc plots``: ``[{"series", "questions", "recovery",
    "questions_low", "questions_high", "recovery_low", "recovery_high"}]``, one record per method (``series``)."""
    return [{"series": name, "questions": x, "recovery": y, "questions_low": cx[0], "questions_high": cx[1],
             "recovery_low": cy[0], "recovery_high": cy[1]} for _, name, x, y, cx, cy in _points(methods)]


def recovery_plot(methods: dict[str, dict[str, Any]], path: Path) -> Path:
    """One point per method: questions per issue (x) vs weighted information recovery (y), 95% CI bars."""
    fig = _figure(7, 4.8)
    ax = fig.subplots()
    right = 1.0
    for i, name, x, y, cx, cy in _points(methods):
        colour = f"C{i % 10}"
        right = max(right, cx[1])
        ax.errorbar([x], [y], xerr=[[x - cx[0]], [cx[1] - x]], yerr=[[y - cy[0]], [cy[1] - y]], fmt="o", color=colour,
                    capsize=3, label=name)
        ax.annotate(name, (x, y), textcoords="offset points", xytext=(5, 4), fontsize=7, color=colour)
    ax.set_xlabel("questions per issue")
    ax.set_ylabel("weighted information recovery")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlim(-0.2, right * 1.15 + 0.3)
    ax.grid(True, color="#dddddd", linewidth=0.6)
    ax.set_title("Questions vs recovered hidden information (95% issue-bootstrap CIs)", fontsize=10)
    fig.tight_layout()
    return _save(fig, path)

"""Recovery versus cumulative atomic questions (or-clarify.md §4, Fig. 4), as a deterministic PNG.

One row of panels per protocol (Open above the choice protocols), All-Slot Exact on the left and Core Exact on the
right, one line per method with its 95% case-level bootstrap band. Compare methods only within a protocol. The same
curves go to ``data/plots/evaluate/<domain>/recovery.json`` as flat records for ``dvc plots``
(:func:`recovery_rows`; the SWE evaluation writes its own points there, ``questions.plots.recovery_rows``).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from tasks.episodes.records import PROTOCOLS
from tasks.store import atomic_write_bytes

TITLES = {"open": "Open", "mc": "Choice (MC)", "mc_d": "Choice (MC-D)"}
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#393b79", "#637939")


def plot_data_path(root: Path, domain: str) -> Path:
    """Where ``evaluate@<domain>`` writes its recovery records for ``dvc plots`` (``dvc.yaml``: the stage's plots)."""
    return Path(root) / "data" / "plots" / "evaluate" / domain / "recovery.json"


def recovery_rows(curves: dict[str, Any]) -> list[dict[str, Any]]:
    """:func:`tasks.evaluation.metrics.recovery_curves` output as ``[{"series", "questions", "recovery", "low",
    "high", "core"}]``: one record per ``protocol::method`` (``series``) and question count, ``recovery`` the All-Slot
    Exact rate with its band (``low``, ``high``), ``core`` the Core Exact rate (null where no run is core-eligible)."""
    grid = curves.get("questions") or []
    rows = []
    for key, curve in curves.get("curves", {}).items():
        band, core = curve.get("all_slot"), curve.get("core")
        if not band:
            continue
        rows += [{"series": key, "questions": q, "recovery": band["mean"][i], "low": band["low"][i],
                  "high": band["high"][i], "core": core["mean"][i] if core else None} for i, q in enumerate(grid)]
    return rows


def _cut(values: list[float], end: int) -> list[float]:
    return list(values[: end + 1]) + [values[end]]


def recovery_plot(curves: dict[str, Any], path: Path) -> Path:
    """Draw :func:`tasks.evaluation.metrics.recovery_curves` output to ``path`` (PNG without a timestamp)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    grid = curves.get("questions") or [0, 1]
    by_protocol: dict[str, list[tuple[str, dict]]] = {}
    for key, curve in curves.get("curves", {}).items():
        by_protocol.setdefault(curve["protocol"], []).append((key, curve))
    protocols = [p for p in PROTOCOLS if p in by_protocol] or ["open"]
    methods = sorted({c["method"] for rows in by_protocol.values() for _, c in rows})
    colour = {m: COLOURS[i % len(COLOURS)] for i, m in enumerate(methods)}

    fig = Figure(figsize=(10, 3.2 * len(protocols) + 0.6), dpi=110)
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(protocols), 2, squeeze=False, sharey=True)
    for row, protocol in enumerate(protocols):
        rows = sorted(by_protocol.get(protocol, []), key=lambda kc: kc[1]["method"])
        # the whole question range: a flat tail shows that more questions recovered nothing more
        end = len(grid) - 1
        xs = list(grid[: end + 1]) + [grid[end] + 0.5]  # a short tail so the last step shows
        for col, (metric, label) in enumerate((("all_slot", "All-Slot Exact"), ("core", "Core Exact"))):
            ax = axes[row][col]
            for _, curve in rows:
                band = curve.get(metric)
                if not band:
                    continue
                c = colour[curve["method"]]
                ax.step(xs, _cut(band["mean"], end), where="post", color=c, linewidth=1.6,
                        label=f"{curve['method']} (n={curve['runs'] if metric == 'all_slot' else curve['core_runs']})")
                ax.fill_between(xs, _cut(band["low"], end), _cut(band["high"], end), step="post", color=c, alpha=0.15,
                                linewidth=0)
            ax.set_title(f"{TITLES.get(protocol, protocol)}: {label}", fontsize=10)
            ax.set_xlim(0, xs[-1])
            ax.set_ylim(0, 1.02)
            ax.grid(True, color="#dddddd", linewidth=0.6)
            if row == len(protocols) - 1:
                ax.set_xlabel("cumulative atomic questions")
            if col == 0:
                ax.set_ylabel("runs recovered")
            if rows:
                ax.legend(fontsize=7, loc="lower right")
    fig.suptitle("Slot recovery vs cumulative atomic questions (95% case-level bootstrap bands)", fontsize=11)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata={"Software": None})
    atomic_write_bytes(Path(path), buffer.getvalue())
    return Path(path)

"""Figures for the shap stage, as deterministic PNGs (no timestamps, seeded jitter), plus their data as rows of
plain dicts for ``dvc plots``.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tasks import intervals
from tasks.categories import ORDER
from tasks.infovalue import FEATURES
from tasks.store import atomic_write_bytes

LABELS: dict[str, str] = {c.key: c.value for c in ORDER}
PRESENT_COLOUR = "#c0392b"
ABSENT_COLOUR = "#2e6da4"
MAX_POINTS = 4000


def _figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=110)
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Any, path: Path) -> None:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata={"Software": None})
    atomic_write_bytes(Path(path), buffer.getvalue())


def _title(text: str, note: str) -> str:
    return f"{text}\n({note})" if note else text


def _order(weights: Mapping[str, Any] | None) -> list[str]:
    """Categories most important first (by the weights' ranking when given, else canonical order)."""
    if weights and "ranking" in weights:
        return list(weights["ranking"])
    return list(FEATURES)


def beeswarm(
    shap_values: np.ndarray, table: pd.DataFrame, feature_names: Sequence[str], path: Path, *,
    weights: Mapping[str, Any] | None = None, title_note: str = "", max_points: int = MAX_POINTS, seed: int = 0,
) -> list[dict[str, Any]]:
    """Per-row SHAP values by category, coloured by presence, with density-scaled jitter (a seeded sample of rows)."""
    names = list(feature_names)
    values = np.asarray(shap_values, dtype=np.float64)
    rng = np.random.default_rng(seed)
    rows = np.arange(len(values))
    if len(rows) > max_points:
        rows = np.sort(rng.choice(rows, size=max_points, replace=False))
    order = _order(weights)

    fig = _figure(7.5, 0.55 * len(order) + 1.6)
    ax = fig.add_subplot()
    data: list[dict[str, Any]] = []
    for i, key in enumerate(order):
        y_pos = len(order) - 1 - i
        x = values[rows, names.index(key)]
        present = table[key].to_numpy()[rows].astype(int)
        counts, edges = np.histogram(x, bins=40)
        density = counts[np.clip(np.searchsorted(edges, x, side="right") - 1, 0, len(counts) - 1)]
        spread = 0.38 * density / max(density.max(initial=1), 1)
        jitter = spread * rng.uniform(-1.0, 1.0, size=len(x))
        colours = np.where(present == 1, PRESENT_COLOUR, ABSENT_COLOUR)
        ax.scatter(x, y_pos + jitter, s=5, c=colours, alpha=0.6, linewidths=0, rasterized=False)
        data += [{"category": key, "shap": float(v), "present": int(p)} for v, p in zip(x, present, strict=True)]
    ax.axvline(0.0, color="#888888", linewidth=0.8)
    ax.set_yticks(range(len(order)), [LABELS.get(k, k) for k in reversed(order)])
    ax.set_xlabel("SHAP value (log-odds of success)")
    ax.scatter([], [], s=12, c=PRESENT_COLOUR, label="category present")
    ax.scatter([], [], s=12, c=ABSENT_COLOUR, label="category hidden")
    ax.legend(frameon=False, loc="lower right", fontsize=8)
    ax.set_title(_title(f"Per-run SHAP values ({len(rows)} of {len(values)} runs)", title_note), fontsize=10)
    fig.tight_layout()
    _save(fig, path)
    return data


def weights_bar(
    weights: Mapping[str, Any], path: Path, *, paper: Mapping[str, float] | None = None, title_note: str = "",
) -> list[dict[str, Any]]:
    """Normalised weights (max = 1) with bootstrap intervals; the paper's weights as markers when given."""
    order = _order(weights)
    cats = weights["categories"]
    data = [
        {
            "category": key,
            "label": LABELS.get(key, key),
            "weight": float(cats[key]["weight"]),
            "ci_low": float(cats[key]["ci_low"]),
            "ci_high": float(cats[key]["ci_high"]),
            **({"paper": float(paper[key])} if paper and key in paper else {}),
        }
        for key in order
    ]
    y_pos = np.arange(len(order))[::-1]
    w = np.array([r["weight"] for r in data])
    err = np.array([[max(r["weight"] - r["ci_low"], 0.0) for r in data],
                    [max(r["ci_high"] - r["weight"], 0.0) for r in data]])

    fig = _figure(7.0, 0.5 * len(order) + 1.6)
    ax = fig.add_subplot()
    ax.barh(y_pos, w, color="#7f9cc0", xerr=err, capsize=3, error_kw={"linewidth": 1}, label="this run (95% CI)")
    if paper:
        marks = [(y, r["paper"]) for y, r in zip(y_pos, data, strict=True) if "paper" in r]
        ax.scatter([m[1] for m in marks], [m[0] for m in marks], marker="D", s=28, color="black", zorder=3,
                   label="paper")
    ax.set_yticks(y_pos, [r["label"] for r in data])
    ax.set_xlim(0, 1.15)
    ax.set_xlabel("normalised weight (mean |SHAP| / max)")
    ax.legend(frameon=False, loc="lower right", fontsize=8)
    ax.set_title(_title("Category weights", title_note), fontsize=10)
    fig.tight_layout()
    _save(fig, path)
    return data


def _wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    return intervals.wilson(successes, n, z, empty=(0.0, 0.0))


def success_by_hidden(table: pd.DataFrame, path: Path, *, title_note: str = "") -> list[dict[str, Any]]:
    """Success rate against the number of hidden categories, with run counts and Wilson 95% intervals."""
    hidden = len(FEATURES) - table[list(FEATURES)].to_numpy().sum(axis=1)
    resolved = table["resolved"].to_numpy()
    data = []
    for h in range(len(FEATURES) + 1):
        mask = hidden == h
        n, s = int(mask.sum()), int(resolved[mask].sum())
        if n:
            lo, hi = _wilson(s, n)
            data.append({"hidden": h, "runs": n, "resolved": s, "success_rate": s / n, "ci_low": lo, "ci_high": hi})

    fig = _figure(6.5, 3.6)
    ax = fig.add_subplot()
    xs = [r["hidden"] for r in data]
    rates = np.array([r["success_rate"] for r in data])
    err = np.array([[r["success_rate"] - r["ci_low"] for r in data], [r["ci_high"] - r["success_rate"] for r in data]])
    ax.bar(xs, rates, color="#7f9cc0", yerr=err, capsize=3, error_kw={"linewidth": 1})
    for r in data:
        ax.annotate(f"n={r['runs']}", (r["hidden"], r["ci_high"]), textcoords="offset points", xytext=(0, 3),
                    ha="center", fontsize=7)
    ax.set_xticks(range(len(FEATURES) + 1))
    ax.set_ylim(0, 1.1)
    ax.set_xlabel("categories hidden from the agent")
    ax.set_ylabel("success rate (95% CI)")
    ax.set_title(_title("Success by amount of missing information", title_note), fontsize=10)
    fig.tight_layout()
    _save(fig, path)
    return data


def write_plots(
    folder: Path, table: pd.DataFrame, shap_values: np.ndarray, feature_names: Sequence[str],
    weights: Mapping[str, Any], *, paper: Mapping[str, float] | None = None, title_note: str = "", seed: int = 0,
) -> dict[str, list[dict[str, Any]]]:
    """``beeswarm.png``, ``weights.png`` and ``success_by_hidden.png`` in ``folder``; returns each plot's data."""
    folder = Path(folder)
    return {
        "beeswarm": beeswarm(shap_values, table, feature_names, folder / "beeswarm.png", weights=weights,
                             title_note=title_note, seed=seed),
        "weights": weights_bar(weights, folder / "weights.png", paper=paper, title_note=title_note),
        "success_by_hidden": success_by_hidden(table, folder / "success_by_hidden.png", title_note=title_note),
    }

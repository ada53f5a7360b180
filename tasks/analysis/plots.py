"""The figures of ``question_analysis`` (deterministic PNGs, matplotlib Agg, no timestamp): answerability by
position per question set, by strategy tag, and the separating model's mean |SHAP| per feature. Each figure's title
names the backend behind its numbers."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from tasks.store import atomic_write_bytes


def _canvas(width: float, height: float, panels: int = 1):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width * panels, height), dpi=110)
    FigureCanvasAgg(fig)
    return fig, [fig.add_subplot(1, panels, k + 1) for k in range(panels)]


def _write(fig, path: Path, backend: str) -> Path:
    import textwrap

    fig.suptitle(textwrap.fill(f"backend: {backend}", 60 * len(fig.axes)), fontsize=7)
    data = io.BytesIO()
    fig.tight_layout()
    fig.savefig(data, format="png", metadata={"Software": None})
    atomic_write_bytes(Path(path), data.getvalue())
    return Path(path)


def _errors(rows: list[dict[str, Any]]) -> list[list[float]]:
    return [[r["rate"] - r["ci_low"] for r in rows], [r["ci_high"] - r["rate"] for r in rows]]


def position_plot(rows: list[dict[str, Any]], path: Path, backend: str) -> Path:
    """One line per question set: the answerable rate at each position, with 95% Wilson bars."""
    sources = sorted({r["source"] for r in rows})
    fig, axes = _canvas(6.0, 4.2, max(len(sources), 1))
    for ax, source in zip(axes, sources):
        sets = sorted({r["question_set"] for r in rows if r["source"] == source})
        for k, qset in enumerate(sets):
            mine = sorted((r for r in rows if r["source"] == source and r["question_set"] == qset),
                          key=lambda r: r["position_index"])
            x = [r["position_index"] + (k - len(sets) / 2) * 0.04 for r in mine]
            ax.errorbar(x, [r["rate"] for r in mine], yerr=_errors(mine), marker="o", capsize=3, label=qset)
        labels = sorted({(r["position_index"], r["position"]) for r in rows if r["source"] == source})
        ax.set_xticks([i for i, _ in labels], [name for _, name in labels])
        ax.set_ylim(0, 1)
        ax.set_xlabel("position in the list")
        ax.set_ylabel("answerable share")
        ax.set_title(f"{source}: answerability by position", fontsize=10)
        ax.legend(fontsize=8)
    return _write(fig, path, backend)


def strategy_plot(rows: list[dict[str, Any]], path: Path, backend: str) -> Path:
    """Per source, each strategy tag: the answerable rate of questions with and without it (95% Wilson bars)."""
    from tasks.roles.strategy_tagger import STRATEGIES

    sources = sorted({r["source"] for r in rows})
    fig, axes = _canvas(6.0, 4.2, max(len(sources), 1))
    for ax, source in zip(axes, sources):
        for shift, value, colour in ((-0.18, True, "#2ca02c"), (0.18, False, "#7f7f7f")):
            mine = [next(r for r in rows if r["source"] == source and r["property"] == tag and r["value"] == value)
                    for tag in STRATEGIES]
            shown = [r for r in mine if r["n"]]
            ax.bar([STRATEGIES.index(r["property"]) + shift for r in shown], [r["rate"] for r in shown], width=0.36,
                   yerr=_errors(shown), capsize=3, color=colour, label="with the tag" if value else "without")
        ax.set_xticks(range(len(STRATEGIES)), [t.replace("_", "-") for t in STRATEGIES])
        ax.set_ylim(0, 1)
        ax.set_ylabel("answerable share")
        ax.set_title(f"{source}: answerability by strategy", fontsize=10)
        ax.legend(fontsize=8)
    return _write(fig, path, backend)


def shap_plot(models: dict[str, dict[str, Any]], path: Path, backend: str, top: int = 12) -> Path:
    """Per source with a fitted model: the features' mean |linear SHAP|, signed by their direction."""
    fitted = {s: m for s, m in models.items() if "features" in m}
    fig, axes = _canvas(6.0, 4.6, max(len(fitted), 1))
    for ax, (source, model) in zip(axes, sorted(fitted.items())):
        feats = model["features"][:top][::-1]
        values = [f["mean_abs_shap"] * (1 if f["coefficient"] > 0 else -1) for f in feats]
        ax.barh([f["feature"] for f in feats], values, color=["#2ca02c" if v > 0 else "#d62728" for v in values])
        ax.axvline(0, color="black", linewidth=0.6)
        ax.set_xlabel("mean |SHAP| (sign: towards answerable +)")
        ax.set_title(f"{source}: CV AUC {model['auc_mean']:.3f} ± {model['auc_sd']:.3f}", fontsize=10)
        ax.tick_params(axis="y", labelsize=8)
    if not fitted:
        axes[0].text(0.5, 0.5, "no source had enough answerable and unanswerable questions", ha="center")
        axes[0].set_axis_off()
    return _write(fig, path, f"logistic regression over {backend}")

"""Figures the report draws itself (the others are copied from the stages that made them)."""

from __future__ import annotations

import io
from typing import Any


def plot_hidden_categories(metrics: dict[str, dict[str, Any]]) -> bytes | None:
    """Bar chart of ``hidden_per_category`` per construct stage, as PNG bytes (None when no stage has it)."""
    per_stage = {s: d["hidden_per_category"] for s, d in metrics.items()
                 if isinstance(d.get("hidden_per_category"), dict)}
    if not per_stage:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.5), dpi=110)
    width = 0.8 / len(per_stage)
    for n, (stage, counts) in enumerate(per_stage.items()):
        keys = list(counts)
        ax.bar([i + n * width for i in range(len(keys))], [counts[k] for k in keys], width=width, label=stage)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(keys))], keys, rotation=20, ha="right")
    ax.set_ylabel("cases hiding the category")
    ax.set_title("Hidden categories")
    ax.legend(frameon=False)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata={"Software": None})  # no version stamp: reruns are byte-identical
    plt.close(fig)
    return buffer.getvalue()

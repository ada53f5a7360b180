"""The combined report: every stage's metrics in one Markdown page, one flat metrics file and a figure.

Each number is printed next to the backend that produced it (DESIGN §4: reports always name the backend).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tasks.errors import InputError
from tasks.store import atomic_write_bytes, atomic_write_json, atomic_write_text, read_text_utf8


def load_stage_metrics(metrics_dir: Path) -> dict[str, dict[str, Any]]:
    """``{stage: metrics}`` from every ``*.json`` below ``metrics_dir`` (``construct/swe.json`` -> ``construct@swe``)."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(metrics_dir.rglob("*.json")):
        rel = path.relative_to(metrics_dir).with_suffix("")
        stage = "@".join(rel.parts)
        try:
            data = json.loads(read_text_utf8(path))
        except json.JSONDecodeError as err:
            raise InputError(path, f"malformed JSON ({err.msg})") from None
        if not isinstance(data, dict):
            raise InputError(path, "expected a JSON object")
        found[stage] = data
    return found


def flatten(metrics: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []

    def walk(prefix: str, value: Any, backend: str) -> None:
        if isinstance(value, dict):
            backend = str(value.get("backend", backend))  # a nested block (e.g. one role's usage) names its own
            for key, sub in value.items():
                walk(f"{prefix}.{key}", sub, backend)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            rows.append({"key": prefix, "value": value, "backend": backend})

    for stage, data in metrics.items():
        backend = str(data.get("backend", "unspecified"))
        for key, value in data.items():
            if key != "backend":
                walk(f"{stage}.{key}", value, backend)
    return rows


def render_roles(roles: dict[str, dict[str, Any]]) -> list[str]:
    lines = ["## Model roles", "", "| role | backend | model / implementation | temperature |", "|---|---|---|---|"]
    for name, info in roles.items():
        model = info.get("model") or info.get("implementation", "")
        lines.append(f"| {name} | {info['backend']} | {model} | {info.get('temperature', '')} |")
    return [*lines, ""]


def render_markdown(title: str, metrics: dict[str, dict[str, Any]], roles: dict[str, dict[str, Any]] | None = None) -> str:
    lines = [f"# {title}", ""]
    if roles:
        lines += render_roles(roles)
    if not metrics:
        lines.append("No stage has produced metrics yet.")
    for stage, data in metrics.items():
        lines += [f"## {stage}", "", f"Backend: {data.get('backend', 'unspecified')}", ""]
        lines += ["| metric | value |", "|---|---|"]
        for row in flatten({stage: data}):
            lines.append(f"| {row['key'].removeprefix(stage + '.')} | {row['value']} |")
        lines.append("")
    if any("hidden_per_category" in d for d in metrics.values()):
        lines += ["![hidden categories per domain](hidden_categories.png)", ""]
    return "\n".join(lines)


def plot_hidden_categories(metrics: dict[str, dict[str, Any]], path: Path) -> bool:
    per_stage = {s: d["hidden_per_category"] for s, d in metrics.items() if isinstance(d.get("hidden_per_category"), dict)}
    if not per_stage:
        return False
    import io

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
    fig.savefig(buffer, format="png", metadata={"Software": None})
    plt.close(fig)
    atomic_write_bytes(path, buffer.getvalue())
    return True


def write_report(
    title: str, metrics: dict[str, dict[str, Any]], folder: Path, roles: dict[str, dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    rows = flatten(metrics)
    plot_hidden_categories(metrics, folder / "hidden_categories.png")
    atomic_write_text(folder / "report.md", render_markdown(title, metrics, roles))
    atomic_write_json(folder / "metrics.json", {r["key"]: r["value"] for r in rows})
    return rows

"""The robustness table: every method row under every simulated-user persona (docs/personas.md).

Per ``protocol::method`` and persona: WSS (``WeightedSlotScore_macro``), All-Slot and Core exact-restore rates,
atomic questions per run and the premature-stop rate, each with its case-level bootstrap interval (the metrics of
``tasks/evaluation/metrics.py`` on that persona's episodes), and the drop in WSS from the cooperative user with a
paired case-level bootstrap interval (the same cases under both personas, resampled together). A run under a
persona is scored by the same judge against the case's true facts.

Which rows *notice a contradiction* (a mistaken user's correction): under the ``mistaken`` persona, the share of
runs in which the user corrected an earlier answer (the method asked the same point again) — the only way a
wrong value gets fixed, since the persona never volunteers its correction.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np

from tasks.episodes.records import SEVERITY_WEIGHT, Episode, JudgeResult

COLUMNS = {"WSS": "WeightedSlotScore_macro", "AllSlot": "AllSlotExactRestoreRate", "Core": "CoreExactRestoreRate",
           "Questions": "AtomicQuestionsPerRun", "PrematureStop": "PrematureStopRate"}
CORRECTION_MARK = "got that wrong earlier"
"""How a persona's correction reads in the transcript (tasks/roles/personas.py: CORRECTION)."""


def received(episode: Episode, judge: JudgeResult) -> float | None:
    """Open protocol: the severity-weighted share of hidden slots whose true fact the user actually stated to the
    agent (a misstated or refused fact does not count); None under the choice protocols (no per-fact audit)."""
    if episode.protocol != "open":
        return None
    told = {s for t in episode.question_turns for s in t.disclosed_slot_ids}
    total = sum(SEVERITY_WEIGHT[s.severity] for s in judge.slot_scores)
    return sum(SEVERITY_WEIGHT[s.severity] for s in judge.slot_scores if s.slot_id in told) / total if total else None


def corrected(episode: Episode) -> bool:
    """Whether the user took back an earlier wrong answer in this run (the method asked about that point again)."""
    return any(CORRECTION_MARK in t.reply for t in episode.question_turns)


def paired_drop(base: Mapping[str, float], other: Mapping[str, float], *, n_resamples: int, seed: int
                ) -> tuple[float | None, list[float] | None]:
    """Mean over shared cases of base − other, and its percentile bootstrap interval over cases."""
    from tasks.evaluation.metrics import bootstrap_ci

    shared = sorted(set(base) & set(other))
    if not shared:
        return None, None
    diffs = np.array([base[c] - other[c] for c in shared], dtype=np.float64)
    point = float(diffs.mean())
    return point, bootstrap_ci(diffs, point, n_resamples=n_resamples, seed=seed)


def _case_wss(runs: Sequence[tuple[Episode, JudgeResult]]) -> dict[str, float]:
    by_case: dict[str, list[float]] = defaultdict(list)
    for e, j in runs:
        by_case[e.case_id].append(j.weighted_slot_score)
    return {c: float(np.mean(v)) for c, v in by_case.items()}


def robustness_table(episodes: Sequence[Episode], judgements: Sequence[JudgeResult], *, personas: Sequence[str],
                     mistaken: Collection[str] = ("mistaken",), n_resamples: int = 2000,
                     seed: int = 0) -> dict[str, Any]:
    """``{"personas": [...], "rows": {protocol::method: {persona: {column: value, "CI95": {...}, "WSSDrop": x,
    "WSSDropCI95": [lo, hi], "Runs": n, "CorrectionRate": r (``mistaken`` personas only)}}}}``; the first persona
    is the cooperative baseline."""
    from tasks.evaluation.metrics import group_key, summarise

    by_persona: dict[str, list[tuple[Episode, JudgeResult]]] = defaultdict(list)
    for e, j in zip(episodes, judgements):
        by_persona[e.persona].append((e, j))
    base_name = personas[0]
    rows: dict[str, dict[str, Any]] = defaultdict(dict)
    case_wss: dict[tuple[str, str], dict[str, float]] = {}
    for persona in personas:
        runs = by_persona.get(persona, [])
        if not runs:
            continue
        groups = summarise([e for e, _ in runs], [j for _, j in runs], n_resamples=n_resamples, seed=seed)
        grouped: dict[str, list[tuple[Episode, JudgeResult]]] = defaultdict(list)
        for e, j in runs:
            grouped[group_key(e)].append((e, j))
        for key, m in groups.items():
            cell: dict[str, Any] = {col: m.get(name) for col, name in COLUMNS.items()}
            cell["CI95"] = {col: m["CI95"].get(name) for col, name in COLUMNS.items()}
            cell["Runs"] = m["RunCount"]
            got = [v for v in (received(e, j) for e, j in grouped[key]) if v is not None]
            cell["Received"] = float(np.mean(got)) if got else None
            if persona in mistaken:
                cell["CorrectionRate"] = float(np.mean([corrected(e) for e, _ in grouped[key]]))
            case_wss[(key, persona)] = _case_wss(grouped[key])
            rows[key][persona] = cell
    for key, cells in rows.items():
        base = case_wss.get((key, base_name))
        for persona, cell in cells.items():
            if persona == base_name or base is None:
                continue
            cell["WSSDrop"], cell["WSSDropCI95"] = paired_drop(base, case_wss[(key, persona)],
                                                               n_resamples=n_resamples, seed=seed)
    return {"personas": list(personas), "rows": dict(rows)}


def fmt_ci(value: Any, ci: Any = None) -> str:
    if value is None:
        return "–"
    text = f"{value:.2f}"
    return f"{text} [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else text


def robustness_markdown(table: Mapping[str, Any], *, source: str) -> str:
    """The report section: one line per method row and persona."""
    from tasks.evaluation.metrics import sort_keys

    lines = ["## Robustness to simulated-user personas", "",
             f"Source: {source}. Every persona is scored by the same judge against the case's true facts; intervals "
             "are 95% case-level bootstrap; the drop is cooperative WSS minus the persona's (paired over cases). "
             "WSS credits *asking* about a hidden slot (the OR-Clarify judge), so a persona moves it only through the "
             "method's next questions; Facts received (Open only) is the severity-weighted share of hidden facts the "
             "user actually stated correctly. Corrections: share of runs under a mistaken persona in which the "
             "method asked a point again and got the correction (docs/personas.md).", "",
             "| Row | Persona | WSS | All-Slot | Core | Questions | Premature stops | WSS drop | Facts received | "
             "Corrections |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for key in sort_keys(list(table["rows"])):
        for persona in table["personas"]:
            cell = table["rows"][key].get(persona)
            if cell is None:
                continue
            ci = cell["CI95"]
            lines.append(f"| {key} | {persona} | " + " | ".join(fmt_ci(cell[c], ci.get(c)) for c in COLUMNS)
                         + f" | {fmt_ci(cell.get('WSSDrop'), cell.get('WSSDropCI95'))} | "
                         + f"{fmt_ci(cell.get('Received'))} | {fmt_ci(cell.get('CorrectionRate'))} |")
    return "\n".join(lines) + "\n"


FIGURE_WIDTH_IN, FIGURE_DPI = 9.0, 120
"""1080 px, within the report page's text width (``tasks.reporting.to_html.PAGE_WIDTH_PX``, 1100), so the page shows
the figure at full size. Rows run down the y axis, so more rows make the figure taller, never wider (a bar per row and
persona along x made the 20-row OR figure 4320 px wide, shrunk to a quarter on the page)."""
BAR_IN = 0.11
"""Height of one bar (one row under one persona), inches."""


def robustness_figure(table: Mapping[str, Any], *, metric: str = "WSS", label: str = "WSS (macro)"):
    """``metric`` per row (y, in ``sort_keys`` order from the top) and persona (bars), with intervals
    (``cell[metric]``, ``cell["CI95"][metric]``), as a matplotlib ``Figure``; the legend sits above the bars."""
    from matplotlib.figure import Figure

    from tasks.evaluation.metrics import sort_keys

    keys = sort_keys(list(table["rows"]))
    personas = table["personas"]
    width = 0.8 / max(len(personas), 1)
    height = max(3.0, 1.3 + BAR_IN * max(len(keys), 1) * max(len(personas), 1))
    fig = Figure(figsize=(FIGURE_WIDTH_IN, height), dpi=FIGURE_DPI, layout="constrained")
    ax = fig.subplots()
    for i, persona in enumerate(personas):
        ys, xs, errs = [], [], [[], []]
        for k, key in enumerate(keys):
            cell = table["rows"][key].get(persona)
            if cell is None or cell[metric] is None:
                continue
            lo, hi = cell["CI95"][metric] or (cell[metric], cell[metric])
            ys.append(k + i * width)
            xs.append(cell[metric])
            errs[0].append(cell[metric] - lo)
            errs[1].append(hi - cell[metric])
        ax.barh(ys, xs, width, xerr=errs, label=persona, capsize=2)
    ax.set_yticks([k + 0.4 - width / 2 for k in range(len(keys))], keys, fontsize=10)
    ax.invert_yaxis()
    ax.set_xlabel(label, fontsize=10)
    ax.set_xlim(0, 1)
    ax.tick_params(axis="x", labelsize=9)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=9, ncols=min(len(personas), 6), loc="lower left", bbox_to_anchor=(0, 1.0), frameon=False)
    return fig


def robustness_plot(table: Mapping[str, Any], path, *, metric: str = "WSS", label: str = "WSS (macro)") -> None:
    """:func:`robustness_figure` written to ``path`` (PNG)."""
    robustness_figure(table, metric=metric, label=label).savefig(path, dpi=FIGURE_DPI)

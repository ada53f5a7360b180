"""The questions-vs-recovery frontier: every method's WSS when each episode is truncated after q atomic questions.

For a run and a budget q, ``wss_at`` counts a slot's hit (``yes`` 1, ``partial`` 0.5, times its severity weight)
only when the question turn its evidence points to was reached within q cumulative atomic questions (the turn
placement of ``metrics.recovery_points``; a hit of unknown turn sits at the run's last question); the run's WSS at q
is that share of its slots' total weight. At q >= the run's own questions this is its WSS. Per ``protocol::method``:
the mean curve over q = 0..``budget`` with case-level bootstrap bands, the area under it (mean of the curve over the
grid, a share in [0, 1]) with its interval, and the mean questions asked. One plot puts every row on one frontier.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from tasks.episodes.records import HIT_VALUE, SEVERITY_WEIGHT, Episode, JudgeResult

BUDGET = 20
"""The largest budget on the grid (the default T_max)."""


def wss_at(episode: Episode, judge: JudgeResult, budget: int) -> float:
    """The run's WSS counting only hits within ``budget`` cumulative atomic questions."""
    from tasks.evaluation.judge import turn_of

    total_weight = sum(SEVERITY_WEIGHT[s.severity] for s in judge.slot_scores)
    if not total_weight:
        return 0.0
    cumulative, total = [], 0
    for t in sorted(episode.question_turns, key=lambda t: t.turn):
        total += t.atomic_count
        cumulative.append((t.turn, total))

    def asked_by(turn: int | None) -> int:
        if turn is None:
            return total
        return max([c for tt, c in cumulative if tt <= turn], default=0)

    got = sum(SEVERITY_WEIGHT[s.severity] * HIT_VALUE[s.hit] for s in judge.slot_scores
              if HIT_VALUE[s.hit] > 0 and asked_by(turn_of(s.evidence_location)) <= budget)
    return got / total_weight


def frontier(episodes: Sequence[Episode], judgements: Sequence[JudgeResult], *, budget: int = BUDGET,
             n_resamples: int = 2000, seed: int = 0) -> dict[str, Any]:
    """``{"questions": [0..budget], "rows": {key: {"wss": [...], "low": [...], "high": [...], "area": a,
    "area_ci": [lo, hi], "questions": mean asked, "runs": n}}}``."""
    from tasks.evaluation.metrics import bootstrap_ci, group_key

    grid = list(range(budget + 1))
    groups: dict[str, list[tuple[Episode, JudgeResult]]] = defaultdict(list)
    for e, j in zip(episodes, judgements):
        groups[group_key(e)].append((e, j))
    rows: dict[str, Any] = {}
    for key, runs in sorted(groups.items()):
        by_case: dict[str, list[list[float]]] = defaultdict(list)
        for e, j in runs:
            by_case[e.case_id].append([wss_at(e, j, q) for q in grid])
        means = np.array([np.mean(by_case[c], axis=0) for c in sorted(by_case)])
        curve = means.mean(axis=0)
        band = bootstrap_ci(means, curve, n_resamples=n_resamples, seed=seed) or [curve.tolist(), curve.tolist()]
        areas = means.mean(axis=1)
        area = float(areas.mean())
        rows[key] = {"wss": [round(float(v), 6) for v in curve], "low": [round(float(v), 6) for v in band[0]],
                     "high": [round(float(v), 6) for v in band[1]], "area": round(area, 6),
                     "area_ci": [round(v, 6) for v in (bootstrap_ci(areas, area, n_resamples=n_resamples,
                                                                    seed=seed) or [area, area])],
                     "questions": round(float(np.mean([e.atomic_questions for e, _ in runs])), 6),
                     "runs": len(runs)}
    return {"questions": grid, "rows": rows}


def frontier_rows(table: dict[str, Any]) -> list[dict[str, Any]]:
    """DVC plot records: ``[{"series", "questions", "wss", "low", "high"}]``."""
    return [{"series": key, "questions": q, "wss": row["wss"][i], "low": row["low"][i], "high": row["high"][i]}
            for key, row in table["rows"].items() for i, q in enumerate(table["questions"])]


OR_INTRO = ("WSS when every episode is cut after q atomic questions (q = 0..{last}); area = mean WSS over that grid "
            "(95% case-level bootstrap interval); reference rows (†) are not ranked (tasks/evaluation/frontier.py).")


def frontier_markdown(table: dict[str, Any], *, references: set[str] = frozenset(), y: str = "wss",
                      name: str = "WSS", intro: str = OR_INTRO, head: str = "Row") -> str:
    """The frontier's report table: ``name``@1, 2, 3, 5, 10 and the area per row (episode rows in report order,
    ``protocol::method``; other tables in their own order), a row marked † when its method is in ``references``."""
    from tasks.evaluation.metrics import sort_keys

    grid = table["questions"]
    shown = [q for q in (1, 2, 3, 5, 10) if q in grid]
    lines = ["## Questions-vs-recovery frontier", "", intro.format(last=grid[-1]), "",
             f"| {head} | Questions | " + " | ".join(f"{name}@{q}" for q in shown) + " | Area |",
             "|---|---|" + "---|" * len(shown) + "---|"]
    keys = sort_keys(list(table["rows"])) if y == "wss" else list(table["rows"])
    for key in keys:
        row = table["rows"][key]
        mark = " †" if key.split("::", 1)[-1] in references else ""
        lo, hi = row["area_ci"]
        lines.append(f"| {key}{mark} | {row['questions']:.2f} | " + " | ".join(f"{row[y][q]:.2f}" for q in shown)
                     + f" | {row['area']:.3f} [{lo:.3f}, {hi:.3f}] |")
    return "\n".join(lines) + "\n"


def frontier_plot(table: dict[str, Any], path, *, y: str = "wss", label: str = "WSS within budget") -> None:
    """Every row's ``y``-vs-budget curve (``row[y]``), with its endpoint (mean questions asked, last value) marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    grid = table["questions"]
    for key, row in sorted(table["rows"].items()):
        line, = ax.plot(grid, row[y], label=key, linewidth=1.2)
        ax.fill_between(grid, row["low"], row["high"], alpha=0.08, color=line.get_color())
        ax.plot([min(row["questions"], grid[-1])], [row[y][-1]], "o", color=line.get_color(), markersize=4)
    ax.set_xlabel("question budget (cumulative atomic questions)")
    ax.set_ylabel(label)
    ax.set_ylim(0, 1)
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write(out, episodes: Sequence[Episode], judgements: Sequence[JudgeResult], *, budget: int, references: set[str],
          n_resamples: int, seed: int) -> str:
    """``frontier.json`` and ``frontier.png`` in ``out``; returns the report section."""
    from tasks.store import atomic_write_json

    table = frontier(episodes, judgements, budget=budget, n_resamples=n_resamples, seed=seed)
    atomic_write_json(out / "frontier.json", table)
    frontier_plot(table, out / "frontier.png")
    return "\n" + frontier_markdown(table, references=references)

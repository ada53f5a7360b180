"""The report's blocks for an evaluation's frontier (``frontier.json``) and persona robustness table
(``robustness.json``), both kinds: episode rows (WSS) and SWE question lists (hidden-category recall / weighted
recovery). Each table names its source: the rows' backends and, for personas, the simulated user's."""

from __future__ import annotations

from typing import Any

from tasks.reporting.model import Block, Table

BUDGETS = (1, 2, 3, 5, 10)
ROBUSTNESS_KEYS = {  # kind -> (main metric, its name, drop, facts received, corrections)
    "episodes": ("WSS", "WSS", "WSSDrop", "Received", "CorrectionRate"),
    "questions": ("weighted_recovery", "weighted recovery", "drop", "facts_received", "correction_rate"),
}


def _interval(value: Any, ci: Any = None) -> str:
    if value is None:
        return "–"
    return f"{value:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else f"{value:.3f}"


def frontier_table(table: dict[str, Any], references: set[str], backend: str) -> Table:
    y = "wss" if any("wss" in row for row in table["rows"].values()) else "recall"
    name = "WSS" if y == "wss" else "recall"
    grid = table["questions"]
    shown = [q for q in BUDGETS if q in grid]
    rows = []
    for key, row in table["rows"].items():
        mark = " (reference)" if row.get("reference") or {key, key.split("::", 1)[-1]} & references else ""
        rows.append([f"{key}{mark}", f"{row['questions']:.2f}", *(f"{row[y][q]:.3f}" for q in shown),
                     _interval(row["area"], row["area_ci"])])
    what = "WSS" if y == "wss" else "hidden-category recall"
    return Table(["row", "questions", *(f"{name}@{q}" for q in shown), "area [95%]"], rows,
                 caption=f"Questions-vs-recovery frontier: {what} when every run is cut after q questions "
                         f"(q = 0..{grid[-1]}), area = its mean over the grid; reference rows are not ranked; "
                         f"backend: {backend}")


def robustness_table(table: dict[str, Any]) -> Table:
    kind = "episodes" if any("WSS" in cell for cells in table["rows"].values() for cell in cells.values()) \
        else "questions"
    main, name, drop, facts, corrections = ROBUSTNESS_KEYS[kind]
    rows = []
    for key, cells in table["rows"].items():
        for persona in table["personas"]:
            cell = cells.get(persona)
            if cell is None:
                continue
            rows.append([key, persona, _interval(cell.get(main), (cell.get("CI95") or {}).get(main)),
                         _interval(cell.get(drop), cell.get(f"{drop}CI95") or cell.get(f"{drop}_CI95")),
                         _interval(cell.get(facts)), _interval(cell.get(corrections))])
    return Table(["row", "persona", name, "drop from cooperative", "facts received", "corrections"], rows,
                 caption=f"Robustness to simulated-user personas ({table.get('source', 'source not recorded')}); "
                         "scored against the true facts; 95% intervals; docs/personas.md", collapsed=len(rows) > 24)


def persona_blocks(frontier: dict[str, Any] | None, robustness: dict[str, Any] | None, references: set[str],
                   backend: str) -> list[Block]:
    blocks: list[Block] = []
    if frontier and frontier.get("rows"):
        blocks.append(frontier_table(frontier, references, backend))
    if robustness and robustness.get("rows"):
        blocks.append(robustness_table(robustness))
    return blocks

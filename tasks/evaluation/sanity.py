"""The sanity ladder of an episode evaluation: does the benchmark separate methods at all?

Two reference methods bound what the loop, the simulated user and the judge can credit: ``oracle`` reads the hidden
slots and asks each one's reference question (the ceiling), ``ready_now`` declares READY at turn 1 (the floor). On a
benchmark that can support a conclusion:

- every oracle row restores all slots in at least ``oracle_min_exact`` of its runs (All-Slot Exact);
- every ready_now row restores nothing (All-Slot Exact 0) and stops prematurely in every core-eligible run;
- every real method's weighted slot score lies strictly between the floor's and the ceiling's (``at_floor`` lists
  rows allowed to score exactly the floor, each explained: a method that recovers nothing is a finding, not a broken
  benchmark, once someone has looked at its episodes);
- no two real rows are identical on every headline metric (identical rows mean the methods' designs make no
  difference here; ``allowed_ties`` lists pairs whose coincidence the caller has explained).

:func:`violations` lists what fails; the evaluation flow fails the stage on any (``sanity.check: error``), prints them
(``warn``) or skips the check (``off``).

The thresholds, ``allowed_ties`` and ``at_floor`` were set on the local roles. When any evaluation role runs on a
model (``tasks/evaluation/episode_kind.py: check_ladder(..., served=True)``), the ladder reports instead of gating:
its violations are printed and published under ``sanity`` in the stage metrics, whatever ``check`` says (except
``off``). A served model's oracle need not reach 95 %, and its rows may tie because they all score 0; a gate no
served model can pass would publish nothing (docs/served-models.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import combinations
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

CEILING, FLOOR = "oracle", "ready_now"
COMPARED = ("AllSlotExactRestoreRate", "CoreExactRestoreRate", "WeightedSlotScore_macro", "RecoveryAUC",
            "AtomicQuestionsPerRun", "AverageTurns", "SilentAssumptionsPerRun", "PrematureStopRate", "ReadyRate")
"""The headline metrics two rows must all share to count as identical."""


class SanitySettings(BaseModel):
    """``params.yaml: evaluate.<domain>.sanity``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    check: Literal["error", "warn", "off"] = "error"
    oracle_min_exact: float = Field(default=0.95, ge=0.0, le=1.0)
    allowed_ties: list[tuple[str, str]] = []
    """Pairs of row names (``protocol::method``) allowed to coincide, each explained where it is set."""
    at_floor: list[str] = []
    """Row names allowed to score the floor's weighted slot score, each explained where it is set."""


def _method(row: str) -> str:
    return row.split("::", 1)[-1]


def violations(rows: Mapping[str, Mapping[str, float]], reference_rows: Mapping[str, Mapping[str, float]],
               kinds: Mapping[str, str], settings: SanitySettings) -> list[str]:
    """What breaks the ladder. ``rows``: the ranked (real) methods' rows, ``protocol::name`` -> metrics;
    ``reference_rows``: the reference rows, among them the ceiling and the floor; ``kinds``: method name -> kind."""
    ceiling = {r: m for r, m in reference_rows.items() if kinds.get(_method(r)) == CEILING}
    floor = {r: m for r, m in reference_rows.items() if kinds.get(_method(r)) == FLOOR}
    out: list[str] = []
    unscored = [r for r, m in {**rows, **reference_rows}.items() if m.get("WeightedSlotScore_macro") is None]
    if unscored:  # every judge call of these rows failed: nothing to place on the ladder
        out += [f"{r}: every run unscored (its judge failed), not placed on the ladder" for r in sorted(unscored)]
        rows = {r: m for r, m in rows.items() if r not in unscored}
        ceiling = {r: m for r, m in ceiling.items() if r not in unscored}
        floor = {r: m for r, m in floor.items() if r not in unscored}
    real = dict(rows)
    if not ceiling or not floor:
        missing = [k for k, v in ((CEILING, ceiling), (FLOOR, floor)) if not v]
        return [*out, f"the ladder needs both reference methods; missing: {', '.join(missing)}"]
    for row, m in sorted(ceiling.items()):
        if m["AllSlotExactRestoreRate"] < settings.oracle_min_exact:
            out.append(f"{row}: All-Slot Exact {m['AllSlotExactRestoreRate']:.3f} < {settings.oracle_min_exact} (the "
                       "simulated user or the judge does not credit a question that targets the slot)")
    for row, m in sorted(floor.items()):
        if m["AllSlotExactRestoreRate"] != 0.0:
            out.append(f"{row}: All-Slot Exact {m['AllSlotExactRestoreRate']:.3f} > 0 without a single question")
        if m.get("CoreEligibleRunCount", 1) and m["PrematureStopRate"] != 1.0:
            out.append(f"{row}: premature-stop rate {m['PrematureStopRate']:.3f} < 1 while READY at turn 1")
    low = max(m["WeightedSlotScore_macro"] for m in floor.values())
    high = min(m["WeightedSlotScore_macro"] for m in ceiling.values())
    for row, m in sorted(real.items()):
        if row in settings.at_floor and m["WeightedSlotScore_macro"] == low:
            continue
        if not low < m["WeightedSlotScore_macro"] < high:
            out.append(f"{row}: weighted slot score {m['WeightedSlotScore_macro']:.3f} is not strictly between the "
                       f"floor {low:.3f} and the ceiling {high:.3f}")
    allowed = {frozenset(pair) for pair in settings.allowed_ties}
    for (a, ma), (b, mb) in combinations(sorted(real.items()), 2):
        if frozenset((a, b)) not in allowed and all(ma.get(k) == mb.get(k) for k in COMPARED):
            out.append(f"{a} and {b}: identical rows (every headline metric equal)")
    return out

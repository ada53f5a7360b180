"""InterOPT's private gap ledger (or-clarify.md §6.1, §6.2, §6.5): persistent rows of unresolved business gaps.

Rules kept here, whichever backend proposes the gaps:

- ADD is the only operation a gap search may send; ids are sequential ``G001``, ``G002``, ...
- At most ``max_new_per_turn`` (3) updates per turn: a longer list is a recorded error and the extra updates are
  dropped (``ledger_update_limit_error_count``).
- An update whose normalised description (lowercase, collapsed whitespace) equals an existing row's, or an earlier
  update of the same batch, is dropped and counted (``ledger_duplicate_skipped_count``).
- ``mark_asked`` moves OPEN -> ASKED; an unknown id, or a row that is not OPEN, is a ``ledger_consume_error``:
  counted, never raised.
- ``RESOLVED`` exists only in aligned mode (``allow_resolved``): an ASKED row becomes RESOLVED when the user's reply
  settles it, or goes back to OPEN once for a narrower re-ask (``reopen``).

The ledger is private: never shown to the user, the detector, the judge or the transcript.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

GapCategory = Literal["objective", "decision_scope", "constraint_set", "time_boundary", "entity_relation",
                      "hard_soft_policy"]
GapStatus = Literal["OPEN", "ASKED", "RESOLVED"]
MAX_NEW_PER_TURN = 3


def normalise(description: str) -> str:
    return re.sub(r"\s+", " ", description.strip().lower())


class GapUpdate(BaseModel):
    """One gap-search update (ADD is the only operation)."""

    model_config = ConfigDict(extra="forbid")

    operation: Literal["ADD"] = "ADD"
    category: GapCategory
    description: str = Field(min_length=1, description="One concrete unresolved business gap.")
    evidence_quote: str = Field(default="", description="A short quote or faithful reference from the public "
                                                        "request or conversation.")


class GapRow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    gap_id: str
    category: GapCategory
    description: str
    evidence_quote: str = ""
    status: GapStatus = "OPEN"
    created_turn: int
    updated_turn: int
    asked_turn: int | None = None
    ask_count: int = 0
    """How often a question bound to this gap was asked (aligned mode re-asks an unsettled gap once)."""


class ApplyResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    added: list[GapRow] = []
    duplicates: list[str] = []
    """Descriptions dropped as duplicates."""
    dropped_over_limit: list[GapUpdate] = []
    error: str | None = None


class Ledger(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rows: list[GapRow] = []
    allow_resolved: bool = False
    max_new_per_turn: int = MAX_NEW_PER_TURN
    add_count: int = 0
    asked_count: int = 0
    duplicate_skipped_count: int = 0
    consume_error_count: int = 0
    update_limit_error_count: int = 0
    resolved_count: int = 0
    reopen_count: int = 0
    errors: list[str] = []

    # ---- reading ---------------------------------------------------------------------------------------------------

    def get(self, gap_id: str) -> GapRow | None:
        return next((r for r in self.rows if r.gap_id == gap_id), None)

    def open_rows(self) -> list[GapRow]:
        return [r for r in self.rows if r.status == "OPEN"]

    def find(self, description: str) -> GapRow | None:
        key = normalise(description)
        return next((r for r in self.rows if normalise(r.description) == key), None)

    def snapshot(self) -> list[dict]:
        return [r.model_dump() for r in self.rows]

    # ---- writing ---------------------------------------------------------------------------------------------------

    def _next_id(self) -> str:
        return f"G{len(self.rows) + 1:03d}"

    def apply(self, updates: list[GapUpdate], turn: int) -> ApplyResult:
        """Add new gaps (ADD only, at most ``max_new_per_turn``, duplicates skipped and counted)."""
        result = ApplyResult()
        if len(updates) > self.max_new_per_turn:
            result.error = f"{len(updates)} updates in one turn; only the first {self.max_new_per_turn} are applied"
            result.dropped_over_limit = list(updates[self.max_new_per_turn:])
            updates = updates[: self.max_new_per_turn]
            self.update_limit_error_count += 1
            self.errors.append(f"turn {turn}: {result.error}")
        for update in updates:
            if self.find(update.description) is not None:
                result.duplicates.append(update.description)
                self.duplicate_skipped_count += 1
                continue
            row = GapRow(gap_id=self._next_id(), category=update.category, description=update.description.strip(),
                         evidence_quote=update.evidence_quote.strip(), created_turn=turn, updated_turn=turn)
            self.rows.append(row)
            result.added.append(row)
            self.add_count += 1
        return result

    def _consume_error(self, gap_id: str, why: str, turn: int) -> bool:
        self.consume_error_count += 1
        self.errors.append(f"turn {turn}: ledger_consume_error for {gap_id!r}: {why}")
        return False

    def mark_asked(self, gap_id: str, turn: int) -> bool:
        """OPEN -> ASKED. False (and a counted ``ledger_consume_error``) for an unknown id or a row not OPEN."""
        row = self.get(gap_id)
        if row is None:
            return self._consume_error(gap_id, "unknown gap id", turn)
        if row.status != "OPEN":
            return self._consume_error(gap_id, f"status is {row.status}, not OPEN", turn)
        row.status = "ASKED"
        row.asked_turn = turn
        row.updated_turn = turn
        row.ask_count += 1
        self.asked_count += 1
        return True

    def mark_resolved(self, gap_id: str, turn: int) -> bool:
        """Aligned mode only: ASKED -> RESOLVED once the user's reply settles the gap."""
        if not self._leave_asked(gap_id, turn, "RESOLVED", "resolve"):
            return False
        self.resolved_count += 1
        return True

    def reopen(self, gap_id: str, turn: int) -> bool:
        """Aligned mode only: an unsettled ASKED gap goes back to OPEN for one narrower re-ask."""
        if not self._leave_asked(gap_id, turn, "OPEN", "reopen"):
            return False
        self.reopen_count += 1
        return True

    def _leave_asked(self, gap_id: str, turn: int, status: GapStatus, verb: str) -> bool:
        """Aligned mode only: an ASKED row moves to ``status``; else a counted ``ledger_consume_error``."""
        row = self.get(gap_id)
        if not self.allow_resolved or row is None or row.status != "ASKED":
            return self._consume_error(gap_id, f"cannot {verb} (not aligned mode, unknown, or not ASKED)", turn)
        row.status = status
        row.updated_turn = turn
        return True

    def counters(self) -> dict[str, float]:
        """The §6.5 ledger counters (plus the limit-error and aligned-mode counts)."""
        return {
            "ledger_add_count": self.add_count,
            "ledger_asked_count": self.asked_count,
            "ledger_duplicate_skipped_count": self.duplicate_skipped_count,
            "ledger_final_size": len(self.rows),
            "ledger_final_open_count": len(self.open_rows()),
            "ledger_consume_error_count": self.consume_error_count,
            "ledger_update_limit_error_count": self.update_limit_error_count,
            "ledger_resolved_count": self.resolved_count,
        }

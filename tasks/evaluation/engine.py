"""The evaluation engine both kinds run on: a unit's content key, the store of finished units, their counts.

A **unit** is the smallest piece of an evaluation whose result is stored: one case x method x protocol x repeat for
the episode kind (``tasks.evaluation.runs.Unit``, played and judged by ``tasks.evaluation.evaluate``), one case x
method for the question kind (``tasks.evaluation.question_units.QuestionUnit``,
``tasks.evaluation.question_lists``). Its key
(:func:`unit_key`) hashes everything that determines the result: what that is, the kind says (the case, the
method's settings, the roles, the seeds, and the source of the code that computes it,
``tasks.caching.code_version``). A finished unit is written atomically to ``<store>/<key[:2]>/<key>.json``
(:class:`UnitStore`), so a killed run resumes by computing only the units whose file is missing. The stores live
under ``.cache`` (not a DVC output), so they survive stage reruns.

Only successes are stored: a unit in which a role call failed for good (:func:`role_failed`: a judge outage, a
provider error, retries exhausted) is never written, and one stored before this rule is a miss, so a rerun after an
outage retries exactly those units. ``refresh`` (``--refresh-cache``) makes every lookup a miss.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from tasks.store import atomic_write_text, canonical_json

R = TypeVar("R", bound=BaseModel)


def unit_key(material: dict[str, Any]) -> str:
    """The content key of a unit: the hash of everything (JSON) that determines its result."""
    return hashlib.sha256(canonical_json(material).encode()).hexdigest()


def role_failed(record: BaseModel) -> bool:
    """Whether a role call failed for good while computing ``record``: the record's own ``role_failed`` property,
    else any ``failures`` in its per-role ``usage``."""
    own = getattr(record, "role_failed", None)
    if own is not None:
        return bool(own)
    usage = getattr(record, "usage", None) or {}
    return any(getattr(u, "failures", 0) for u in usage.values())


class UnitStore(Generic[R]):
    """``<folder>/<key[:2]>/<key>.json`` per finished unit (a ``record`` with a ``key``), written atomically (a
    half-written file is never visible). Only units without a role failure are stored or served (:func:`role_failed`);
    ``refresh`` serves none (every unit is computed again and stored anew)."""

    def __init__(self, folder: Path, record: type[R], *, refresh: bool = False):
        self.folder = Path(folder)
        self.record = record
        self.refresh = refresh

    def path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> R | None:
        path = self.path(key)
        if self.refresh or not path.is_file():
            return None
        try:
            found = self.record.model_validate_json(path.read_bytes())
        except ValueError:  # a file from an incompatible version: compute the unit again
            return None
        return None if role_failed(found) else found  # stored before failures were kept out: retry it

    def put(self, result: R) -> bool:
        """Store ``result`` unless a role failed in it; whether it was stored."""
        if role_failed(result):
            return False
        # not synced: one fsync per unit was 12 % of evaluate@optimization, and get() recomputes an unreadable entry
        atomic_write_text(self.path(result.key), result.model_dump_json(), durable=False)
        return True


@dataclass
class UnitStats:
    """How many units one evaluation computed and how many it took from the store."""

    computed: int = 0
    reused: int = 0
    seconds: float = 0.0

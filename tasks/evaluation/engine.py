"""The evaluation engine both kinds run on: a unit's content key, the store of finished units, their counts.

A **unit** is the smallest piece of an evaluation whose result is stored: one case x method x protocol x repeat for
the episode kind (``tasks.evaluation.runs.Unit``, played and judged by ``tasks.evaluation.evaluate``), one case x
method for the question kind (``tasks.evaluation.questions.units.SweUnit``, ``tasks.evaluation.questions.run``). Its key
(:func:`unit_key`) hashes everything that determines the result: what that is, the kind says (the case, the
method's settings, the roles, the seeds, and the source of the code that computes it,
``tasks.caching.code_version``). A finished unit is written atomically to ``<store>/<key[:2]>/<key>.json``
(:class:`UnitStore`), so a killed run resumes by computing only the units whose file is missing. The stores live
under ``.cache`` (not a DVC output), so they survive stage reruns.
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


class UnitStore(Generic[R]):
    """``<folder>/<key[:2]>/<key>.json`` per finished unit (a ``record`` with a ``key``), written atomically (a
    half-written file is never visible)."""

    def __init__(self, folder: Path, record: type[R]):
        self.folder = Path(folder)
        self.record = record

    def path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> R | None:
        path = self.path(key)
        if not path.is_file():
            return None
        try:
            return self.record.model_validate_json(path.read_bytes())
        except ValueError:  # a file from an incompatible version: compute the unit again
            return None

    def put(self, result: R) -> None:
        atomic_write_text(self.path(result.key), result.model_dump_json())


@dataclass
class UnitStats:
    """How many units one evaluation computed and how many it took from the store."""

    computed: int = 0
    reused: int = 0
    seconds: float = 0.0

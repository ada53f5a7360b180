"""Category weights for the task-relevance stage: the ``shap`` stage's output, else CLARITI's published ones."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from tasks.categories import Category
from tasks.errors import InputError

IRRELEVANT = "irrelevant"

CLARITI_WEIGHTS: dict[str, float] = {
    "error_info": 1.0,
    "implementation": 0.6,
    "version_env": 0.59,
    "expected_behavior": 0.58,
    "reproduction": 0.42,
    "external_refs": 0.23,
}
"""Normalised impact weights published with the paper (clariti.md §3, Table 11)."""

SHAP_WEIGHTS = Path(__file__).resolve().parents[2] / "data" / "shap" / "weights.json"


class RelevanceWeights(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    weights: dict[str, float]
    """Category key -> weight; ``irrelevant`` is always 0."""
    source: str
    """Where they came from: a file path, ``clariti-published`` or ``given``."""

    def of(self, label: str) -> float:
        return 0.0 if label == IRRELEVANT else self.weights[label]


def from_mapping(mapping: Mapping[str, float], source: str = "given") -> RelevanceWeights:
    """Accept category keys or dataset labels; every category needs a non-negative weight."""
    out: dict[str, float] = {}
    for name, value in mapping.items():
        if name == IRRELEVANT:
            continue
        try:
            key = Category.parse(name).key
        except ValueError as err:
            raise InputError(source, str(err), field=f"weights.{name}") from None
        if not isinstance(value, (int, float)) or value < 0:
            raise InputError(source, f"weight must be a non-negative number, got {value!r}", field=f"weights.{name}")
        out[key] = float(value)
    missing = [c.key for c in Category if c.key not in out]
    if missing:
        raise InputError(source, f"no weight for {', '.join(missing)}", field="weights")
    return RelevanceWeights(weights=out, source=source)


def weights_at(path: Path) -> RelevanceWeights:
    """The weights in ``path`` when that file exists (the ``shap`` stage ran), else :func:`load_weights`' default."""
    return load_weights(path if path.is_file() else None)


def load_weights(path: Path | None = None) -> RelevanceWeights:
    """``path`` (a ``shap`` stage weights.json, key ``weights``); by default the project's own when present,
    else CLARITI's published weights."""
    if path is None:
        if not SHAP_WEIGHTS.is_file():
            return RelevanceWeights(weights=dict(CLARITI_WEIGHTS), source="clariti-published")
        path = SHAP_WEIGHTS
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise InputError(path, "file not found") from None
    except json.JSONDecodeError as err:
        raise InputError(path, f"malformed JSON ({err.msg})") from None
    if not isinstance(data, dict) or not isinstance(data.get("weights"), dict):
        raise InputError(path, "expected an object with a 'weights' object", field="weights")
    return from_mapping(data["weights"], source=str(path))

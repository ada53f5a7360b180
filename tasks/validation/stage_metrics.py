"""Gate on a stage's metrics JSON (``data/metrics/stages/<stage>.json``), run before the file is written so a failing
check leaves the previous metrics file unchanged.

Each stage has a pydantic schema (the keys it must have, counts >= 0, probabilities in [0, 1]); on top of it, every
number anywhere in the document must be finite, every key ending in ``rate``/``Rate`` (or named in ``RATIOS``)
lies in [0, 1], and
``counts`` (dotted key -> value counted from the artifact, e.g. construct's ``cases`` = the lines of cases.jsonl)
must match. Fields the schema does not name (wall-clock fields, roles, splits) pass through unchecked.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from tasks.errors import GateError

Probability = Field(ge=0.0, le=1.0)


class _Metrics(BaseModel):
    model_config = ConfigDict(extra="allow")

    backend: str = Field(min_length=1)


class ConstructMetrics(_Metrics):
    cases: int = Field(ge=1)


class CalibrationBin(BaseModel):
    model_config = ConfigDict(extra="allow")

    count: int = Field(ge=1)
    mean_predicted: float = Probability
    observed_rate: float = Probability


class ShapMetrics(_Metrics):
    source: str
    runs: int = Field(ge=1)
    resolved_rate: float = Probability
    cv: dict[str, float]
    calibration: dict[str, CalibrationBin]
    weights: dict[str, float] = Field(min_length=1)
    treeshap_vs_pred_contrib_max_abs_diff: float = Field(ge=0.0)


class SftDataMetrics(_Metrics):
    cases: int = Field(ge=1)
    rows: int = Field(ge=1)
    train: int = Field(ge=0)
    heldout: int = Field(ge=0)
    writer_failures: int = Field(ge=0)
    mean_questions: float = Field(ge=0.0)


class TrainMetrics(_Metrics):
    kind: Literal["sft", "grpo"]
    steps: int = Field(ge=1)
    trainable_params: int = Field(ge=1)
    n_rows: int = Field(ge=1)
    final_loss: float | None = None
    """SFT's cross-entropy is never negative; GRPO's surrogate loss (group-centred advantages) is near 0, of
    either sign."""

    @model_validator(mode="after")
    def _sft_loss(self) -> TrainMetrics:
        if self.kind == "sft" and self.final_loss is not None and self.final_loss < 0:
            raise ValueError(f"final_loss {self.final_loss} of an SFT run is negative")
        return self


class EvaluateMetrics(_Metrics):
    cases: int = Field(ge=1)
    rows: dict[str, dict[str, Any]] = Field(min_length=1)
    reference_rows: dict[str, dict[str, Any]] = Field(default_factory=dict)


class QuestionAnalysisMetrics(_Metrics):
    questions: int = Field(ge=1)
    judged: int = Field(ge=0)
    answerable_rate: float = Probability
    sets: dict[str, dict[str, Any]] = Field(min_length=1)
    model: dict[str, dict[str, Any]]


SCHEMAS: dict[str, type[_Metrics]] = {
    "construct": ConstructMetrics,
    "shap": ShapMetrics,
    "sft_data": SftDataMetrics,
    "sft": TrainMetrics,
    "grpo": TrainMetrics,
    "evaluate": EvaluateMetrics,
    "question_analysis": QuestionAnalysisMetrics,
}


RATIOS = ("distinct_intents",)
"""Keys that hold a ratio in [0, 1] without ending in ``rate``."""


def metrics_artifact(stage: str) -> str:
    return f"data/metrics/stages/{stage}.json"


def check_stage_metrics(stage: str, metrics: Mapping[str, Any], *, counts: Mapping[str, Any] | None = None) -> None:
    """``stage``: ``shap``, ``sft_data``, ``sft``, ``grpo``, ``construct/<domain>``, ``evaluate/<domain>``.
    Raises GateError naming the metrics file; returns quietly when everything holds."""
    artifact = metrics_artifact(stage)
    schema = SCHEMAS.get(stage.split("/", 1)[0])
    if schema is None:
        raise KeyError(f"no metrics schema for stage {stage!r} (known: {', '.join(sorted(SCHEMAS))})")
    try:
        schema.model_validate(dict(metrics))
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(document)"
        raise GateError(artifact, f"{where}: {first['msg']}") from None
    for path, value in _numbers(metrics):
        if not math.isfinite(value):
            raise GateError(artifact, f"{path}: {value!r} is not a finite number")
        key = path.rsplit(".", 1)[-1]
        if (key.endswith(("rate", "Rate")) or key in RATIOS) and not 0.0 <= value <= 1.0:
            raise GateError(artifact, f"{path}: rate {value!r} outside [0, 1]")
    if stage.startswith("sft_data") and metrics["train"] + metrics["heldout"] != metrics["rows"]:
        raise GateError(artifact, f"train + heldout ({metrics['train']} + {metrics['heldout']}) != rows "
                                  f"({metrics['rows']})")
    for key, expected in (counts or {}).items():
        got = _lookup(metrics, key)
        if got != expected:
            raise GateError(artifact, f"{key} is {got!r} but the artifact has {expected!r}")


def _numbers(value: Any, path: str = "") -> Iterator[tuple[str, float]]:
    if isinstance(value, bool):
        return
    if isinstance(value, int | float):
        yield path, float(value)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _numbers(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list | tuple):
        for n, item in enumerate(value):
            yield from _numbers(item, f"{path}.{n}")


def _lookup(metrics: Mapping[str, Any], dotted: str) -> Any:
    value: Any = metrics
    for part in dotted.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def count_lines(path: Any) -> int:
    """Non-empty lines of a JSONL artifact (what a metrics count must equal)."""
    from pathlib import Path

    with Path(path).open(encoding="utf-8") as handle:
        return sum(1 for line in handle if line.strip())

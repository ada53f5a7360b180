"""Typed view of ``params.yaml``. Each stage reads only its own section through these models."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from tasks.errors import InputError
from tasks.roles.config import RolesParams
from tasks.store import read_text_utf8


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SweBenchSource(Section):
    path: str | None = None
    """A dataset saved with ``save_to_disk``, a local data file (json/jsonl/parquet), or a dataset name that is
    already in the local ``datasets`` cache. Nothing is ever downloaded."""
    split: str = "test"


class SweConstructParams(Section):
    source: Literal["samples", "clariti", "swebench"] = "samples"
    samples_path: str = "data/samples/swe/issues.jsonl"
    clariti_path: str = "../shared/data/clariti/data.xlsx"
    swebench: SweBenchSource = SweBenchSource()
    on_unannotated: Literal["annotate", "error", "skip"] = "annotate"
    """Issues without span annotations: tag them with the annotator role (``roles.annotator``), stop, or drop them."""
    limit: int | None = Field(default=None, ge=1)
    variants_per_issue: int | Literal["all"] = 3
    min_hidden: int = Field(default=1, ge=1, le=6)
    max_hidden: int = Field(default=3, ge=1, le=6)
    seed: int = 0
    chunk_size: int = Field(default=32, ge=1)

    @model_validator(mode="after")
    def _range(self) -> "SweConstructParams":
        if self.min_hidden > self.max_hidden:
            raise ValueError("min_hidden must not exceed max_hidden")
        if isinstance(self.variants_per_issue, int) and self.variants_per_issue < 1:
            raise ValueError("variants_per_issue must be >= 1 or 'all'")
        return self

    @property
    def n_variants(self) -> int | None:
        return None if self.variants_per_issue == "all" else self.variants_per_issue


class OptimizationConstructParams(Section):
    source: Literal["samples", "orclarify"] = "samples"
    """``samples``: the project's complete problems (decomposed by ``roles.decomposer``); ``orclarify``: the full
    ``problem_units`` of OR-Clarify TOML files taken as complete problems (re-construction)."""
    samples_path: str = "data/samples/optimization/problems.jsonl"
    orclarify_path: str = "../shared/data/or-clarify"
    limit: int | None = Field(default=None, ge=1)
    hide_fraction: float = Field(default=0.5, gt=0.0, le=1.0)
    min_hidden: int = Field(default=1, ge=1)
    max_hidden: int = Field(default=3, ge=1)
    seed: int = 0
    chunk_size: int = Field(default=4, ge=1)

    @model_validator(mode="after")
    def _range(self) -> "OptimizationConstructParams":
        if self.min_hidden > self.max_hidden:
            raise ValueError("min_hidden must not exceed max_hidden")
        return self


class ReportParams(Section):
    title: str = "clarifyflow report"


class ScheduleParams(Section):
    cron: str = "0 3 * * *"
    timezone: str = "UTC"
    deployment: str = "clarifyflow-nightly"


class Params(Section):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    domains: list[str] = Field(min_length=1)
    construct_: dict[str, dict[str, Any]] = Field(alias="construct")
    report: ReportParams = ReportParams()
    schedule: ScheduleParams = ScheduleParams()
    roles: RolesParams = RolesParams()


def load_params(path: Path | str = "params.yaml") -> Params:
    path = Path(path)
    try:
        data = yaml.safe_load(read_text_utf8(path))
    except yaml.YAMLError as err:
        raise InputError(path, f"malformed YAML: {err}".replace("\n", " ")) from None
    if not isinstance(data, dict):
        raise InputError(path, "expected a mapping at the top level")
    try:
        return Params.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise InputError(path, first["msg"], field=field) from None


def section(path: Path | str, model: type[Section], data: Any, field: str) -> Section:
    """Validate one params section, naming the params file and the dotted field on error."""
    try:
        return model.model_validate(data or {})
    except ValidationError as err:
        first = err.errors()[0]
        sub = ".".join(str(p) for p in first["loc"])
        raise InputError(path, first["msg"], field=f"{field}.{sub}" if sub else field) from None

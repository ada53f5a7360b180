"""Information value (the ``shap`` stage): which categories of information predict task success.

The runs table is the boundary between the parts: one row per agent attempt on a task variant, with a 0/1 column
per category (``Category.key``), the label ``resolved`` and optional controls.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from tasks.categories import ORDER

__all__ = ["COLUMNS", "CONTROLS", "FEATURES", "KEY", "RunRow"]

FEATURES: tuple[str, ...] = tuple(c.key for c in ORDER)
"""The six category presence columns, in the canonical order."""

CONTROLS: tuple[str, ...] = ("agent_model", "repo", "condition")
"""Optional categorical control columns; used as extra features when they vary."""

KEY: tuple[str, ...] = ("variant_id", "agent_model")
"""A run is unique per (variant, agent model)."""


class RunRow(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    variant_id: str = Field(min_length=1)
    instance_id: str = Field(min_length=1)
    condition: str = ""
    agent_model: str = ""
    repo: str = ""
    error_info: int = Field(ge=0, le=1)
    reproduction: int = Field(ge=0, le=1)
    expected_behavior: int = Field(ge=0, le=1)
    implementation: int = Field(ge=0, le=1)
    external_refs: int = Field(ge=0, le=1)
    version_env: int = Field(ge=0, le=1)
    resolved: int = Field(ge=0, le=1)


COLUMNS: tuple[str, ...] = tuple(RunRow.model_fields)
assert set(FEATURES) <= set(COLUMNS)

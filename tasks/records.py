"""Typed records of every artifact row. Stages read and write these, never loose dicts."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tasks.categories import Category

SAFE_ID = r"^[A-Za-z0-9][A-Za-z0-9_.+\-]{0,199}$"
"""Ids become file names and cache keys, so they may not contain path separators or spaces."""

SCHEMA_VERSION = "0.3"


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SpanAnnotation(Record):
    """A verbatim piece of an issue's text (or of its patch) that carries one category's information."""

    category: Category
    text: str = Field(min_length=1)

    @field_validator("category", mode="before")
    @classmethod
    def _parse_category(cls, value: Any) -> Any:
        return Category.parse(value) if isinstance(value, str) else value

    @field_validator("text")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("span text is blank")
        return value


class IssueRecord(Record):
    """One complete source issue (SWE domain). ``spans`` is None when nobody has annotated it yet."""

    instance_id: str = Field(pattern=SAFE_ID)
    repo: str = ""
    version: str = ""
    created_at: str = ""
    text: str
    hints_text: str = ""
    spans: list[SpanAnnotation] | None = None
    present: list[Category] | None = None
    """Categories the annotator marked present; defaults to the categories that have spans."""

    @field_validator("text")
    @classmethod
    def _text_not_empty(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("issue text is empty")
        return value

    def present_categories(self) -> list[Category]:
        if self.present is not None:
            return [c for c in Category if c in self.present]
        return [c for c in Category if any(s.category == c for s in self.spans or [])]


# ---- the unified case schema (DESIGN §3), a generalisation of OR-Clarify 0.3 -------------------------------------


class CaseMetadata(Record):
    schema_version: str = SCHEMA_VERSION
    benchmark: str
    case_id: str = Field(pattern=SAFE_ID)
    domain: str
    source_id: str
    seed: int | None = None
    split: Literal["train", "heldout"] | None = None
    """Set by construct@<domain> from the source id (tasks/splits.py); None for cases read from elsewhere (published
    OR-Clarify TOML, workbook rewrites), which no stage trains on."""


class Unit(Record):
    """An atomic piece of the complete specification (an issue span, an optimisation constraint, ...)."""

    id: str
    kind: str
    content: str = Field(min_length=1)
    category: Category | None = None


class HiddenSlot(Record):
    """Information removed from the brief; the simulated user's answer key for it."""

    slot_id: str
    name: str
    category: Category | None = None
    severity: Literal["P0", "P1", "P2"] | None = None
    severity_reason: str = ""
    unit_ids: list[str] = Field(min_length=1)
    simulator_answer: str = Field(min_length=1)
    reference_questions: list[str] = []
    semantic_hit_rule: str = ""
    failure_modes: list[str] = []


class Brief(Record):
    content: str = Field(min_length=1)
    visible_unit_ids: list[str]


class Case(Record):
    """A complete specification cut into units, some hidden as slots, plus the public brief."""

    metadata: CaseMetadata
    units: list[Unit]
    hidden_slots: list[HiddenSlot] = Field(min_length=1)
    brief: Brief
    full_text: str = Field(min_length=1)
    hints: str = ""
    present_categories: list[Category] = []
    hidden_categories: list[Category] = []
    visible_categories: list[Category] = []
    extra: dict[str, Any] = {}
    """Domain-specific sections carried through unchanged (e.g. OR-Clarify's [simulator])."""

    @property
    def case_id(self) -> str:
        return self.metadata.case_id


class MethodReference(Record):
    """Why a clarification method's results are a *reference* row, shown apart and never ranked with the methods.

    ``privileged``: it reads what the agent must ask for (hidden slots or categories), an upper bound no real method
    can reach. ``bound``: it reads nothing beyond the brief and asks nothing, the floor every method should clear.
    """

    kind: Literal["privileged", "bound"]
    reads: str = Field(min_length=1)
    """What the method reads (or skips) to produce its row, as the reports print it."""

"""Typed records of every artifact row. Stages read and write these, never loose dicts."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tasks.categories import Category
from tasks.errors import InputError
from tasks.limits import MAX_TEXT_CHARS, MAX_UNITS

SAFE_ID = r"^[A-Za-z0-9][A-Za-z0-9_.+\-]{0,199}$"
"""Ids become file names and cache keys, so they may not contain path separators or spaces."""

DOMAIN_NAME = re.compile(r"\A[a-z][a-z0-9_]{1,39}\Z")
r"""A domain name: a Python identifier in lower case (it names a module, a params key, folders and DVC stages).
``\A``/``\Z``, not ``^``/``$``: ``$`` also matches before a trailing newline."""

SCHEMA_VERSION = "0.3"


def require_text(value: str, message: str) -> str:
    """``value`` unchanged, or ``ValueError(message)`` when it is blank (the check of a record's text fields)."""
    if not value.strip():
        raise ValueError(message)
    return value


class NonBlankText(BaseModel):
    """Base of a free-text record whose ``text`` field may not be blank (``ValueError(blank_text_error)``).

    It declares no field, so a record's own fields keep their order."""

    blank_text_error: ClassVar[str] = "text is empty"

    @field_validator("text", check_fields=False)
    @classmethod
    def _text_not_blank(cls, value: str) -> str:
        return require_text(value, cls.blank_text_error)


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
        return require_text(value, "span text is blank")


class IssueRecord(Record):
    """One complete source issue (SWE domain). ``spans`` is None when nobody has annotated it yet."""

    instance_id: str = Field(pattern=SAFE_ID)
    repo: str = ""
    version: str = ""
    created_at: str = ""
    text: str = Field(max_length=MAX_TEXT_CHARS)
    hints_text: str = Field(default="", max_length=MAX_TEXT_CHARS)
    base_commit: str = ""
    """SWE-bench's commit to check the repository out at; empty where the source does not give it."""
    environment_setup_commit: str = ""
    """SWE-bench's commit for building the environment (where the dataset has the field)."""
    spans: list[SpanAnnotation] | None = None
    present: list[Category] | None = None
    """Categories the annotator marked present; defaults to the categories that have spans."""

    @field_validator("text")
    @classmethod
    def _text_not_empty(cls, value: str) -> str:
        return require_text(value, "issue text is empty")

    def present_categories(self) -> list[Category]:
        if self.present is not None:
            return [c for c in Category if c in self.present]
        return [c for c in Category if any(s.category == c for s in self.spans or [])]


def check_units(units: Sequence[Unit] | None, *, kinds: Iterable[str], path: Path | str, record: object,
                field: str = "units") -> None:
    """Units given with a source record, checked when it is loaded: present, ids unique, kinds known, content set.

    ``None`` (no units: the decomposer cuts the text) passes; an empty list does not, it would drop the record.
    """
    if units is None:
        return
    if not units:
        raise InputError(path, "no units (give at least one, or leave the field out to decompose the text)",
                         record=record, field=field)
    if len(units) > MAX_UNITS:
        raise InputError(path, f"{len(units)} units, over the limit of {MAX_UNITS} per record", record=record,
                         field=field)
    known = tuple(kinds)
    seen: set[str] = set()
    for j, unit in enumerate(units):
        if unit.id in seen:
            raise InputError(path, f"duplicate unit id {unit.id!r}", record=record, field=f"{field}.{j}.id")
        seen.add(unit.id)
        if unit.kind not in known:
            raise InputError(path, f"unknown unit kind {unit.kind!r} (known: {', '.join(known)})", record=record,
                             field=f"{field}.{j}.kind")
        if not unit.content.strip():
            raise InputError(path, "unit content is blank", record=record, field=f"{field}.{j}.content")


def check_case_units(case: Case, *, path: Path | str, record: object) -> None:
    """A case read from a file: its hidden and visible unit ids are among its units, and no unit is both."""
    ids = [u.id for u in case.units]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise InputError(path, f"duplicate unit id {dup!r}", record=record, field="units")
    known = set(ids)
    for i, slot in enumerate(case.hidden_slots):
        for uid in slot.unit_ids:
            if uid not in known:
                raise InputError(path, f"hidden unit {uid!r} is not among the case's units", record=record,
                                 field=f"hidden_slots.{i}.unit_ids")
    hidden = {uid for slot in case.hidden_slots for uid in slot.unit_ids}
    for i, uid in enumerate(case.brief.visible_unit_ids):
        if uid not in known:
            raise InputError(path, f"visible unit {uid!r} is not among the case's units", record=record,
                             field=f"brief.visible_unit_ids.{i}")
        if uid in hidden:
            raise InputError(path, f"unit {uid!r} is both hidden and visible", record=record,
                             field=f"brief.visible_unit_ids.{i}")


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
    content: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    category: Category | None = None


class Eligibility(BaseModel):
    """The filter's verdict on one unit: may it be hidden, and why (kept in ``extra.construction``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    unit_id: str
    eligible: bool
    reason: str


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

"""The annotator's records: the role's input and output models, and the unit an issue is cut into."""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

from tasks.categories import Category


class AnnotateInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    instance_id: str = ""
    text: str = Field(min_length=1)
    hints: str = ""


class TaggedSpan(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    category: Category
    text: str = Field(min_length=1, description="a verbatim excerpt of the issue text")


class Annotation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    spans: list[TaggedSpan] = []
    present: list[Category] = []


@dataclass
class Unit:
    """One classification unit of an issue: a character range of the issue text, its kind and, once the rules have
    run, its categories and context."""

    start: int
    end: int
    kind: str
    """``prose``, ``title``, ``heading``, ``code``, ``output``, ``exchange``, ``traceback``, ``diff``, ``comment``
    (a link inside an HTML template comment)."""
    text: str = ""
    cats: set[Category] = field(default_factory=set)
    block: int = -1
    """Index of the code block (fenced, indented, REPL or traceback) the unit belongs to; -1 for prose."""
    section: Category | None = None
    """The category of the heading the unit sits under (set by the rules)."""
    context: Category | None = None
    """For code-block units: the category the block was announced with (lead-in line, else section)."""


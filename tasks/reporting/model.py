"""The report as data: sections of text, tables and figures, rendered to Markdown and to HTML from the same objects."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

NOT_RUN = "Not run yet"


@dataclass(frozen=True)
class Text:
    text: str
    kind: Literal["p", "note", "missing"] = "p"


@dataclass(frozen=True)
class Table:
    header: list[str]
    rows: list[list[str]]
    caption: str = ""
    collapsed: bool = False
    """Long reference tables: folded (``<details>``) in the HTML page, in full in the Markdown."""


@dataclass(frozen=True)
class Figure:
    name: str
    """Path inside the report folder (``hidden_categories.png``, ``figures/shap-weights.png``)."""
    data: bytes
    caption: str


Block = Text | Table | Figure


@dataclass
class Section:
    key: str
    """HTML id; unique in the report."""
    title: str
    blocks: list[Block] = field(default_factory=list)
    children: list[Section] = field(default_factory=list)
    stage: str | None = None
    """The DVC stage whose outputs the section shows (``construct@swe``), if any."""
    backend: str | None = None
    """The backend the stage's metrics name."""
    missing: bool = False

    @classmethod
    def not_run(cls, key: str, title: str, what: str, stage: str | None = None) -> Section:
        return cls(key, title, [Text(f"{NOT_RUN}: {what}", kind="missing")], stage=stage, missing=True)

    def walk(self):
        yield self
        for child in self.children:
            yield from child.walk()


@dataclass
class Report:
    title: str
    intro: list[Block]
    sections: list[Section]

    def walk(self):
        for section in self.sections:
            yield from section.walk()

    def figures(self) -> list[Figure]:
        return [b for s in self.walk() for b in s.blocks if isinstance(b, Figure)]

    def tables(self) -> list[Table]:
        return [b for s in self.walk() for b in s.blocks if isinstance(b, Table)]

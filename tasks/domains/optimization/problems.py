"""Complete optimisation problems, the input of ``construct@optimization``.

Two sources: the project's samples (``data/samples/optimization/problems.jsonl``: free text, decomposed by the
``decomposer`` role), and OR-Clarify TOML files, whose full ``problem_units`` are taken as an already decomposed
complete problem (so the published cases can be re-constructed; ``.or_toml.load_problems_from_toml``).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ConfigDict, Field

from tasks import store
from tasks.errors import InputError
from tasks.limits import MAX_TEXT_CHARS
from tasks.records import SAFE_ID, NonBlankText, Unit, check_units


class ProblemRecord(NonBlankText):
    model_config = ConfigDict(extra="forbid", frozen=True)

    problem_id: str = Field(pattern=SAFE_ID)
    title: str = ""
    text: str = Field(max_length=MAX_TEXT_CHARS)
    """The complete problem statement (markdown: prose, bullet lists, tables)."""
    units: list[Unit] | None = None
    """Already decomposed units (TOML source); None means the decomposer runs on ``text``."""

    blank_text_error = "problem text is empty"


def check_unique(problems: list[ProblemRecord], path: Path) -> None:
    seen: dict[str, int] = {}
    for i, problem in enumerate(problems, start=1):
        if problem.problem_id in seen:
            raise InputError(path, f"duplicate id {problem.problem_id!r} (first at record {seen[problem.problem_id]})",
                             record=i, field="problem_id")
        seen[problem.problem_id] = i


def load_problem_samples(path: Path) -> list[ProblemRecord]:
    """The samples JSONL; units given with a problem are checked here (not after construction)."""
    from tasks.domains.optimization.vocabulary import UNIT_KINDS

    problems = store.read_jsonl(path, ProblemRecord)
    check_unique(problems, path)
    for i, problem in enumerate(problems, start=1):
        check_units(problem.units, kinds=UNIT_KINDS, path=path, record=f"{i} ({problem.problem_id})")
    return problems

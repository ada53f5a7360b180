"""The domain plugin API: what a domain module provides so that ``construct@<name>`` and ``evaluate@<name>`` run.

A domain is one module (or package) under ``tasks/domains/`` that exposes ``DOMAIN``, an object satisfying
:class:`Domain`. The registry (``tasks/domains/__init__.py``) finds it by name; ``params.yaml`` lists the name under
``domains:`` and gives it ``construct.<name>`` and ``evaluate.<name>`` sections; ``dvc.yaml``'s matrices then
create both stages. Every hook is a plain function of records, so it can be tested without Prefect or DVC.

Construction (``flows/construct.py``) calls ``parse_params`` → ``check_inputs`` → ``construct`` → ``write`` →
``validation_table`` (the GX gate) in that order. ``construct`` is built from the finer hooks, which keep the steps
of DESIGN §3 visible and replaceable:

==========================  =========================================================================================
hook                        meaning
==========================  =========================================================================================
``load_records``            the complete records (issues, problems, requests) from the configured source
``taxonomy``                the closed vocabulary of unit kinds (or categories) and which of them may be hidden
``decompose``               one complete record → its typed units, in order
``hide_candidates``         a verdict and a reason per unit: may it be hidden? (the filter)
``choose_hidden``           the masking policy: which candidates each case hides (one list per case variant)
``severity``                P0/P1/P2 and why, for one hidden slot (None where the domain has no severities)
``reference_questions``     local templates: the questions that recover a hidden slot
``simulated_answer``        local template: what the simulated user answers when asked about the slot
``gap_inventory``           the gaps the local agents ask about (episode domains; None otherwise)
``user_aspects``            per kind, how a question about it is put (the simulated user's local matching)
``judge_hints``             what the brief is and what READY means, for the judges' prompts
``evaluation``              ``episodes`` (the OR-Clarify loop over Case records) or ``questions`` (SWE question sets)
==========================  =========================================================================================

The SWE domain (``tasks/domains/swe/``), the optimisation domain (``tasks/domains/optimization/``) and the
analytics domain (``tasks/domains/analytics/``) implement it; :class:`tasks.domains.units.UnitDomain` implements
``construct`` / ``write`` / ``validation_table`` from the finer hooks for any domain whose records are free text
cut into typed units (what ``python -m flows.new_domain`` scaffolds).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel

from tasks.caching import RunStats
from tasks.domain_context import JudgeHints
from tasks.records import Case, Eligibility, Unit

if TYPE_CHECKING:
    from tasks.domain_context import GapInventory

Evaluation = Literal["episodes", "questions"]
"""``episodes``: clarifiers play the OR-Clarify loop against the simulated user over Case records and the judge
scores slot recovery (``evaluate.<name>`` is an ``EvalSettings``). ``questions``: each method writes a question set
for the incomplete text, answered and scored as in CLARITI (``evaluate.<name>`` is a ``QuestionSettings``)."""
EVALUATIONS: tuple[Evaluation, ...] = ("episodes", "questions")
Severity = Literal["P0", "P1", "P2"]


@dataclass(frozen=True)
class Taxonomy:
    """A domain's unit kinds (or categories): the closed vocabulary its units and slots use."""

    kinds: tuple[str, ...]
    hideable: tuple[str, ...]
    """The kinds that may be hidden (the rest stay visible: context, raw data, schemas)."""
    descriptions: dict[str, str] = field(default_factory=dict)
    """One line per kind, for prompts, docs and reports."""

    def __post_init__(self) -> None:
        unknown = [k for k in self.hideable if k not in self.kinds]
        if unknown:
            raise ValueError(f"hideable kinds not in the taxonomy: {', '.join(unknown)}")


@dataclass
class ConstructResult:
    cases: list[Case]
    metrics: dict[str, Any]
    stats: RunStats = field(default_factory=RunStats)


@runtime_checkable
class Domain(Protocol):
    """The interface every domain implements (module attribute ``DOMAIN``)."""

    name: str
    evaluation: Evaluation
    taxonomy: Taxonomy
    judge_hints: JudgeHints
    user_aspects: dict[str, list[str]]
    """Per hideable kind, how questions about that kind of fact are put ("Which period should the analysis
    cover?"); the simulated user's local backend also matches questions against them. Empty: the facts only."""

    # ---- construct@<name> ----------------------------------------------------------------------------------------

    def parse_params(self, params_path: Path, data: Any) -> Any:
        """``params.yaml: construct.<name>`` as a typed model (InputError naming the field when invalid)."""
        ...

    def check_inputs(self, cfg: Any, root: Path) -> None:
        """Parse the sources (fast) so bad input fails with one line before any task runs or output is written."""
        ...

    def load_records(self, cfg: Any, root: Path) -> Sequence[BaseModel]:
        """The complete records (before any masking) from the configured source."""
        ...

    def decompose(self, record: Any) -> list[Unit]:
        """One complete record cut into typed units (kinds from ``taxonomy``), in text order."""
        ...

    def hide_candidates(self, units: Sequence[Unit]) -> list[Eligibility]:
        """One verdict per unit, in order: the filter of DESIGN §3."""
        ...

    def choose_hidden(self, record_id: str, candidates: Sequence[Unit], cfg: Any,
                      units: Sequence[Unit] = ()) -> list[list[str]]:
        """The masking policy: per case variant, the ids of the candidate units to hide (deterministic per record
        id and seed; an empty list means the record yields no case). ``units`` are all of the record's units, for
        policies that weigh a candidate by its context (its severity, say)."""
        ...

    def severity(self, hidden: Sequence[Unit], units: Sequence[Unit]) -> tuple[Severity | None, str]:
        """The slot's severity and its reason (None: the domain grades no severity; the judge counts P1)."""
        ...

    def reference_questions(self, hidden: Sequence[Unit], units: Sequence[Unit]) -> list[str]:
        """Local question templates: questions that target the hidden fact without stating it."""
        ...

    def simulated_answer(self, hidden: Sequence[Unit], units: Sequence[Unit]) -> str:
        """Local answer template: what the simulated user says when asked about the slot (facts only)."""
        ...

    def construct(self, cfg: Any, root: Path, *, roles: Any = None, refresh_cache: bool = False,
                  cluster: Any = None) -> ConstructResult:
        """The cases and the stage metrics (``roles`` is ``params.yaml: roles`` for domains that call roles;
        ``cluster`` is ``params.yaml: cluster``, where chunk tasks run under ``task_runner: dask``)."""
        ...

    def write(self, result: ConstructResult, folder: Path) -> None:
        """The cases into the (staging) folder: at least ``cases.jsonl``."""
        ...

    def validation_table(self, result: ConstructResult) -> tuple[str, Any]:
        """``(suite name, pandas frame)`` for the GX gate (``tasks/validation/suites.py``)."""
        ...

    # ---- evaluate@<name> -----------------------------------------------------------------------------------------

    @property
    def gap_inventory(self) -> GapInventory | None:
        """The gaps the local agents ask from (``evaluation == "episodes"``); None for question-set domains."""
        ...


def check_domain(domain: Any) -> list[str]:
    """What ``domain`` lacks to satisfy :class:`Domain` (empty when it satisfies it)."""
    problems = []
    for name in ("name", "evaluation", "taxonomy", "judge_hints", "user_aspects", "gap_inventory", "parse_params",
                 "check_inputs",
                 "load_records", "decompose", "hide_candidates", "choose_hidden", "severity", "reference_questions",
                 "simulated_answer", "construct", "write", "validation_table"):
        if not hasattr(domain, name):
            problems.append(f"missing {name}")
    if getattr(domain, "evaluation", None) not in EVALUATIONS:
        problems.append(f"evaluation must be one of {', '.join(EVALUATIONS)}")
    if not isinstance(getattr(domain, "taxonomy", None), Taxonomy):
        problems.append("taxonomy must be a Taxonomy")
    if not isinstance(getattr(domain, "judge_hints", None), JudgeHints):
        problems.append("judge_hints must be a JudgeHints")
    if getattr(domain, "evaluation", None) == "episodes" and getattr(domain, "gap_inventory", None) is None:
        problems.append("an episodes domain needs a gap_inventory")
    return problems

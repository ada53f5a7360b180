"""One settings record for every evaluation (``params.yaml: evaluate.<domain>``) and one record for its method rows.

:class:`EvaluationSettings` holds what every kind of evaluation reads: the cases, the method rows, the seed, the
bootstrap, the task runner and its concurrency, the simulated user's personas. Each kind adds only what it alone
needs: the episode kind (``tasks.evaluation.runs.EvalSettings``: protocols, repeats, the turn limit, the sanity
ladder) and the question-list kind (``tasks.evaluation.question_inputs.QuestionSettings``: batches, category weights,
the surrogate, published lists, abstention). The kind a domain is evaluated by picks the record
(``tasks.evaluation.stage.EVALUATIONS``).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tasks.cluster import Runner
from tasks.records import SAFE_ID
from tasks.roles.personas import COOPERATIVE, Persona


class MethodRow(BaseModel):
    """One row of ``evaluate.<domain>.methods``: a display name, the registered method kind it runs and its options."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=SAFE_ID)
    """Display name (the report row, ``protocol::name`` for episodes) and the run-folder name."""
    method: str | None = None
    """The registered method kind (episodes: ``tasks/clarifiers/``; question lists:
    ``tasks/clarifiers/question_methods.py``); defaults to ``name``."""
    options: dict[str, Any] = Field(default_factory=dict)
    """The method's options, validated by the kind when it is built."""

    @property
    def kind(self) -> str:
        return self.method or self.name


class EvaluationSettings(BaseModel):
    """What every evaluation reads; a kind's settings extend it."""

    model_config = ConfigDict(extra="forbid")

    cases: str
    """The cases: a JSONL of Case records (the episode kind also reads a folder of OR-Clarify TOML files)."""
    case_ids: list[str] | None = None
    limit: int | None = Field(default=None, ge=1)
    seed: int = 0
    bootstrap: int = Field(default=2000, ge=10)
    """Resamples of the 95 % bootstrap intervals."""
    task_runner: Runner = "threads"
    """threads: Prefect's ThreadPoolTaskRunner; dask: prefect-dask's DaskTaskRunner on ``params.yaml: cluster``;
    serial: one at a time in the flow's thread (``tasks/cluster.py``)."""
    concurrency: int = Field(default=8, ge=1)
    """Units (episodes, or batches of question units) in flight under ``threads``."""
    methods: list[MethodRow] = Field(min_length=1)
    personas: list[Persona] = [COOPERATIVE]
    """The simulated user's personas (``tasks/roles/personas.py``). The first (cooperative) feeds the main tables;
    with more, every ``persona_methods`` row is played (or answered) by each and the robustness table compares them."""
    persona_methods: list[str] | None = None
    """The method rows (``name``) of the robustness table; None: every row."""

    @model_validator(mode="after")
    def _rows_and_personas(self) -> EvaluationSettings:
        names = [m.name for m in self.methods]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"duplicate method names: {', '.join(dupes)}")
        personas = [p.name for p in self.personas]
        if not personas or len(set(personas)) != len(personas) or self.personas[0].behaviour != "cooperative":
            raise ValueError("personas: distinct names, the first one cooperative (the main tables' user)")
        # with only the cooperative user no row is replayed, so the list is not checked (a copy of the params that
        # keeps fewer rows stays valid)
        unknown = sorted(set(self.persona_methods or ()) - set(names)) if len(self.personas) > 1 else []
        if unknown:
            raise ValueError(f"persona_methods: not a method row: {', '.join(unknown)}")
        return self

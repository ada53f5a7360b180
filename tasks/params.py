"""Typed view of ``params.yaml``. Each stage reads only its own section through these models."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from tasks.cluster import ClusterParams, Runner
from tasks.errors import InputError, validation_message
from tasks.params_yaml import load_yaml_file
from tasks.records import DOMAIN_NAME
from tasks.rewards.config import RewardConfig
from tasks.roles.config import RolesParams


def check_hidden_range(min_hidden: int, max_hidden: int) -> None:
    """A construct section's hidden-slot range is not empty (the ``_range`` check of each such section)."""
    if min_hidden > max_hidden:
        raise ValueError("min_hidden must not exceed max_hidden")


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SplitParams(Section):
    """The train/heldout split every ``construct.<domain>`` makes once, by source id (``tasks/splits.py``)."""

    heldout_fraction: float = Field(default=0.3, ge=0.0, lt=1.0)
    """Share of source ids (issues, problems, requests; never single variants) held out from training."""
    split_seed: int = 0


SPLIT_KEYS = frozenset({"heldout_fraction", "split_seed"})
"""Left out of the construction tasks' cache keys: the split is assigned after them (``flows/construct.py``)."""


class FanOutParams(Section):
    """Where a construction stage's chunk tasks run (``tasks/cluster.py``)."""

    task_runner: Runner = "threads"
    """threads: Prefect's thread pool; dask: the workers of ``params.yaml: cluster``; serial: one chunk after another
    in the flow's thread."""
    concurrency: int | None = Field(default=None, ge=1)
    """Chunks in flight under ``threads``; None: Prefect's default (``PREFECT_TASK_RUNNER_THREAD_POOL_MAX_WORKERS``,
    else every chunk at once)."""


RUNNER_KEYS = frozenset({"task_runner", "annotate_runner", "concurrency"})
"""Left out of the construction tasks' cache keys too: where a chunk runs never changes its result."""


class SweBenchSource(Section):
    path: str | None = None
    """A dataset saved with ``save_to_disk``, a local data file (json/jsonl/parquet), or a dataset name that is
    already in the local ``datasets`` cache. Nothing is ever downloaded."""
    split: str = "test"


class SweConstructParams(SplitParams, FanOutParams):
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
    annotate_runner: Runner = "threads"
    """Where the annotator's chunks of unannotated issues run (``task_runner`` is the masking chunks')."""
    split_seed: int = 2
    """With the default fraction, seed 2 holds out 10 of the 34 sample issues (30 cases): evaluate@swe's policy
    rows need at least 24 held-out cases from 8 issues."""

    @model_validator(mode="after")
    def _range(self) -> SweConstructParams:
        check_hidden_range(self.min_hidden, self.max_hidden)
        if isinstance(self.variants_per_issue, int) and self.variants_per_issue < 1:
            raise ValueError("variants_per_issue must be >= 1 or 'all'")
        return self

    @property
    def n_variants(self) -> int | None:
        return None if self.variants_per_issue == "all" else self.variants_per_issue


class OptimizationConstructParams(SplitParams, FanOutParams):
    source: Literal["samples", "orclarify"] = "samples"
    """``samples``: the project's complete problems (decomposed by ``roles.decomposer``); ``orclarify``: the full
    ``problem_units`` of OR-Clarify TOML files taken as complete problems (re-construction)."""
    samples_path: str = "data/samples/optimization/problems.jsonl"
    orclarify_path: str = "../shared/data/or-clarify"
    limit: int | None = Field(default=None, ge=1)
    hide_fraction: float = Field(default=0.5, gt=0.0, le=1.0)
    """Used only when ``hidden_counts`` is null: hide about this share of the eligible units."""
    hidden_counts: dict[int, float] | None = None
    """Slots per case -> probability (OR-Clarify's shape: 1-3 slots, about 1.8 on average); null: ``hide_fraction``."""
    severity_mix: dict[Literal["P0", "P1", "P2"], float] | None = None
    """Target share of each severity among the hidden slots (with ``hidden_counts``); null: every unit alike."""
    min_hidden: int = Field(default=1, ge=1)
    max_hidden: int = Field(default=3, ge=1)
    seed: int = 0
    chunk_size: int = Field(default=4, ge=1)

    @model_validator(mode="after")
    def _range(self) -> OptimizationConstructParams:
        check_hidden_range(self.min_hidden, self.max_hidden)
        counts = self.hidden_counts
        if counts is not None and (not counts or min(counts) < 1 or any(p < 0 for p in counts.values())
                                   or sum(counts.values()) <= 0):
            raise ValueError("hidden_counts maps slot counts >= 1 to non-negative probabilities with a positive sum")
        if self.severity_mix is not None and any(p < 0 for p in self.severity_mix.values()):
            raise ValueError("severity_mix shares must be non-negative")
        return self


class SimulatedRunsParams(Section):
    n_variants: int = Field(default=3000, ge=10)
    agent_models: list[str] = Field(default_factory=lambda: ["sim-agent-a", "sim-agent-b"], min_length=1)
    effects: dict[str, float] | None = None
    """Planted log-odds effect of each category's presence; None uses the documented defaults."""
    intercept: float | None = None
    presence_prob: float = Field(default=0.5, gt=0.0, lt=1.0)
    noise: float = Field(default=0.3, ge=0.0)


class AmbigSweParams(Section):
    dir: str = "../shared/data/ambig-swe"
    workbook: str = "../shared/data/clariti/data.xlsx"
    presence: Literal["workbook", "annotator"] = "workbook"
    removed_in_underspecified: list[str] = Field(
        default_factory=lambda: ["error_info", "reproduction", "expected_behavior"]
    )
    models: list[str] | None = None


class HarnessParams(Section):
    cases: str = "data/cases/swe/cases.jsonl"
    resolved: str | None = None
    """The harness report JSON (a list of resolved ids, or a dict with ``resolved_ids``/``resolved``)."""
    agent_model: str = "unknown-agent"


class ShapParams(Section):
    source: Literal["simulated", "ambig_swe", "harness"] = "simulated"
    seed: int = 0
    folds: int = Field(default=5, ge=2)
    bootstrap: int = Field(default=1000, ge=10)
    min_per_class: int = Field(default=10, ge=1)
    lightgbm: dict[str, Any] = Field(default_factory=dict)
    """Overrides of the classifier's LightGBM parameters."""
    simulated: SimulatedRunsParams = SimulatedRunsParams()
    ambig_swe: AmbigSweParams = AmbigSweParams()
    harness: HarnessParams = HarnessParams()


class PublishedTargetsParams(Section):
    """Published question lists as SFT targets (``sft_data.targets: published``)."""

    workbook: str = "../shared/data/clariti/data.xlsx"
    column: str = "clarification_questions_gpt5_3"
    """The workbook column with one numbered question list per issue (GPT-5's questions for rewrite 3)."""
    min_reward: float = Field(default=0.5, ge=0.0, le=1.0)
    """A published list (cut to the questions the classifier puts in the case's hidden categories) is the target
    when its staged reward, with GRPO's reward settings, is at least this; otherwise the question writer's."""
    max_questions: int = Field(default=6, ge=1, le=6)


class SftDataParams(Section):
    cases: str = "data/cases/swe/cases.jsonl"
    weights: str = "data/shap/weights.json"
    """Category weights that order the target questions; CLARITI's published weights when the file is absent."""
    targets: Literal["writer", "published"] = "writer"
    """``writer``: the question_writer role's questions; ``published``: the workbook's questions where they pass
    the staged reward (matched by instance id), the writer's elsewhere."""
    published: PublishedTargetsParams = PublishedTargetsParams()

    @model_validator(mode="before")
    @classmethod
    def _moved_split(cls, data: Any) -> Any:
        old = [k for k in ("heldout_fraction", "seed") if isinstance(data, dict) and k in data]
        if old:
            raise ValueError(f"sft_data.{old[0]} was removed: the split is made once by construct@swe; set "
                             "construct.swe.heldout_fraction and construct.swe.split_seed instead")
        return data


class HeldoutParams(Section):
    every: int | None = Field(default=None, ge=1)
    """Score the policy on the held-out SFT rows every this many GRPO steps (and before the first, = SFT); None: no
    curve (the default run: evaluate@swe scores the SFT and GRPO policies on the same held-out cases and pairs them,
    ``evaluate.swe.compare``, so a curve of the 2-step default GRPO would generate the same answers twice)."""
    max_new_tokens: int = Field(default=128, ge=1)
    """Greedy answer length of those scorings (evaluate@swe's policies use 128)."""
    limit: int | None = Field(default=None, ge=1)
    """The first N held-out rows only; None: all of them."""


class TrainingParams(Section):
    profile: str = Field(default="cpu", pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    """A recipe, ``recipes/<profile>.yaml`` (checked by the training stages): ``cpu``: SmolLM2-135M-Instruct, few
    short steps; ``grpo-long``: a 9-step SFT and a 20-step GRPO that beats it on the held-out rows (27 min);
    ``cpu-long``: the cpu SFT and a 30-step GRPO (90 min; it did not beat SFT); ``gpu``: Qwen3-8B (needs CUDA)."""
    overrides: dict[str, Any] = Field(default_factory=dict)
    """Deep-merged into the profile (e.g. ``{sft: {max_steps: 40}, grpo: {num_generations: 8}}``)."""
    grpo_prompts: int | None = Field(default=None, ge=1)
    """How many training prompts GRPO draws (deterministically) from data/sft/train.jsonl; None: the profile's
    ``grpo.prompts`` (cpu 16, cpu-long and gpu all)."""
    grpo_update: Literal["trl_grpo", "reference_reinforce"] | None = None
    """GRPO's update: ``trl_grpo`` (TRL's GRPOTrainer) or ``reference_reinforce`` (CLARITI's public update,
    tasks/training/reinforce.py); None: the profile's (``gpu``: reference_reinforce, the others trl_grpo)."""
    lora: bool | None = None
    """False: full fine-tuning in both stages (the reference trains every weight); None: the profile's (LoRA)."""
    heldout: HeldoutParams = HeldoutParams()
    """The held-out reward curve GRPO logs (data/models/grpo/heldout_curve.json)."""

    def profile_overrides(self) -> dict[str, Any]:
        """``overrides`` with ``grpo_update`` and ``lora`` merged in where set (they win)."""
        merged: dict[str, Any] = {k: dict(v) if isinstance(v, dict) else v for k, v in self.overrides.items()}
        if self.grpo_update is not None:
            merged["grpo"] = {**merged.get("grpo", {}), "update": self.grpo_update}
        if self.lora is not None:
            merged["lora"] = {**merged.get("lora", {}), "enabled": self.lora}
        return merged


class QuestionAnalysisParams(Section):
    """``question_analysis``: which properties separate answerable from unanswerable questions (CLARITI RQ2)."""

    eval_rows: str = "data/eval/swe/rows.jsonl"
    """evaluate@swe's per-question outputs (its methods and policies on the held-out cases)."""
    workbook: str = "../shared/data/clariti/data.xlsx"
    use_workbook: Literal["auto", "never", "always"] = "auto"
    """``auto``: the workbook's published lists when the file exists; ``always``: an error when it does not."""
    published: dict[str, str] = Field(default_factory=lambda: {
        "clariti_grpo": "clarification_questions_grpo_3", "gpt5": "clarification_questions_gpt5_3",
        "gpt5_nano": "clarification_questions_gpt5_nano_3"})
    """Question set name -> workbook column (the three published lists for rewrite 3)."""
    workbook_limit: int | None = Field(default=100, ge=1)
    """The first N workbook rows only (judging all 500 rows' lists locally takes about 25 minutes); None: all."""
    max_position: int = Field(default=6, ge=2)
    """Positions from this one on are pooled (``6+``)."""
    folds: int = Field(default=5, ge=2)
    seed: int = 0
    min_per_class: int = Field(default=10, ge=2)
    """The separating model is fitted for a source with at least this many answerable and unanswerable questions."""
    batch_size: int = Field(default=256, ge=1)


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
    shap: ShapParams = ShapParams()
    sft_data: SftDataParams = SftDataParams()
    reward: RewardConfig = RewardConfig()
    """The staged reward. Its judges' backends come from ``roles`` (see ``reward_config``)."""
    training: TrainingParams = TrainingParams()
    question_analysis: QuestionAnalysisParams = QuestionAnalysisParams()
    evaluate: dict[str, dict[str, Any]] = {}
    """Per domain; validated by the evaluate flow (``tasks.evaluation.runs.EvalSettings``)."""
    cluster: ClusterParams = ClusterParams()
    """The Dask cluster of every fan-out whose ``task_runner`` is ``dask`` (``tasks.cluster``)."""

    @field_validator("domains")
    @classmethod
    def _domain_names(cls, names: list[str]) -> list[str]:
        """Every entry a safe domain name (it becomes a DVC stage, a folder and a module name)."""
        for i, name in enumerate(names):
            if not DOMAIN_NAME.fullmatch(name):
                shown = repr(name) if len(name) <= 60 else repr(name[:57]) + "..."
                raise ValueError(f"domains.{i}: {shown} is not a domain name (2-40 lower-case letters, digits or "
                                 "underscores, starting with a letter)")
        return names

    def reward_config(self) -> RewardConfig:
        """``reward`` with the judge roles taken from ``roles`` (one place configures each role)."""
        return reward_with_roles(self.reward, self.roles)


def reward_with_roles(reward: RewardConfig, roles: RolesParams) -> RewardConfig:
    """``reward`` with its judge roles (redundancy, answerability, classifier) configured as ``roles`` says."""
    judges = {name: roles.get(name) for name in ("redundancy_judge", "answerability_judge", "question_classifier")}
    return reward.model_copy(update={"judges": reward.judges.model_validate(judges)})


def load_params(path: Path | str = "params.yaml") -> Params:
    path = Path(path)
    data = load_yaml_file(path)  # duplicate keys, alias bombs and oversized files refused with one line
    if not isinstance(data, dict):
        raise InputError(path, "expected a mapping at the top level")
    try:
        return Params.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        raise InputError(path, validation_message(first), field=field_path(first["loc"])) from None


def section(path: Path | str, model: type[Section], data: Any, field: str) -> Section:
    """Validate one params section, naming the params file and the dotted field on error."""
    try:
        return model.model_validate(data or {})
    except ValidationError as err:
        first = err.errors()[0]
        sub = field_path(first["loc"])
        raise InputError(path, validation_message(first), field=f"{field}.{sub}" if sub else field) from None


def field_path(loc: tuple) -> str:
    """The dotted params key of a validation error's location, without the tags pydantic adds for the member of a
    union it tried (``RolePreset``, ``literal['served']``): ``roles.preset.judge``, as the file spells it."""
    return ".".join(str(p) for p in loc if not (isinstance(p, str) and (p[:1].isupper() or "[" in p)))

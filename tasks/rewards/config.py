"""The staged reward's settings (thresholds, stage weights, partial credit, judges, diversity cache)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tasks.llm.records import RoleConfig

StageName = Literal["non_redundancy", "diversity", "answerability", "task_relevance"]
STAGE_NAMES: tuple[str, ...] = ("non_redundancy", "diversity", "answerability", "task_relevance")

PartialCredit = Literal["public", "paper", "passed"]
"""How a sample that fails stage k (0-based) is scored; ``w`` = stage weights, ``r`` = stage values.

- ``public`` (the paper's public code, clariti.md §5.4): k = 0 -> 0; otherwise 0.5 · Σ_{i<k} w_i·r_i, where the
  second stage's term is multiplied by √max(r_0, 0.01) (the code only defines k ≤ 2; k = 3 follows the pattern).
- ``paper`` (the paper's figure, "Score1 + 0 + 0 + 0"): Σ_{i≤k} w_i·r_i, the stages evaluated so far including
  the one that failed; later stages count 0.
- ``passed``: Σ_{i<k} w_i·r_i, only the stages that passed.

All stages passed -> Σ w_i·r_i under every rule; no questions -> 0.
"""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StageValues(_Section):
    """One number per stage (thresholds or weights)."""

    non_redundancy: float
    diversity: float
    answerability: float
    task_relevance: float

    def get(self, stage: str) -> float:
        return float(getattr(self, stage))


class Thresholds(StageValues):
    """A stage passes when its value is >= its threshold. CLI defaults of the public code: 0.3 / 0.3 / 0 (its
    dataclass says 0.5 / 0.5 / 0); it has no threshold for task relevance, so 0 (never fails)."""

    non_redundancy: float = Field(default=0.3, ge=0.0, le=1.0)
    diversity: float = Field(default=0.3, ge=0.0, le=1.0)
    answerability: float = Field(default=0.0, ge=0.0, le=1.0)
    task_relevance: float = Field(default=0.0, ge=0.0, le=1.0)


class StageWeights(StageValues):
    non_redundancy: float = Field(default=0.25, ge=0.0)
    diversity: float = Field(default=0.25, ge=0.0)
    answerability: float = Field(default=0.25, ge=0.0)
    task_relevance: float = Field(default=0.25, ge=0.0)


class JudgeRoles(_Section):
    """Backends of the three judge roles (local by default; e.g. ``backend: llm, model: hosted_vllm/Qwen3-32B``)."""

    redundancy_judge: RoleConfig = RoleConfig()
    answerability_judge: RoleConfig = RoleConfig()
    question_classifier: RoleConfig = RoleConfig()


class DiversityParams(_Section):
    mode: Literal["intent", "embedding"] = "intent"
    """``intent``: the value is distinct intents / questions (``tasks.rewards.intents``: two questions share an
    intent when the ``question_classifier`` gives them one category and their cosine is >= ``intent_threshold``,
    or when their cosine is >= ``similarity_threshold`` whatever the labels), so rephrasing one ask does not count
    as diverse; an intent also met in a sibling completion or a cached generation does not count.
    ``embedding``: 1 − similar/total on MiniLM cosine alone. Neither is the public code's rule (an LLM counts the
    similar questions, no embedding threshold): that is ``protocol: reference``."""
    similarity_threshold: float = Field(default=0.7, gt=0.0, le=1.0)
    """A question is similar to another when their MiniLM cosine is >= this."""
    intent_threshold: float = Field(default=0.45, gt=0.0, le=1.0)
    """``intent`` mode: questions of one category share an intent from this cosine on (calibrated on hand-written
    rephrasings: README, staged reward)."""
    cache_size: int = Field(default=2, ge=0)
    """Recent generations (completions) kept across batches to compare against; the public code keeps 2."""
    siblings: bool = True
    """Compare with the other completions of the same prompt (this design: the public code compares within the
    generation and with its cache, which it fills only after the batch); False: each completion is judged alone, as
    a held-out evaluation judges it."""
    within_completion: Literal["any", "earlier"] = "any"
    """``embedding`` mode. ``any``: both members of a near-duplicate pair inside one completion count as similar;
    ``earlier``: only the later one (the public code's LLM judge counts questions similar to *earlier* ones)."""


Protocol = Literal["clarifyflow", "reference"]
"""``clarifyflow``: this project's design (per-question judges, intent diversity, all stages evaluated).
``reference``: the CLARITI public code's rules (``tasks.rewards.reference``; docs/clariti-protocol.md)."""

JudgeFailure = Literal["unscored", "neutral", "repair"]
"""What a judge call that fails or cannot be parsed gives.

- ``unscored`` (this project): the item is counted as unscored and left out of the stage's mean; a stage with no
  scored item is unscored and left out of the reward (the scored stages' weights are rescaled to the full sum).
- ``neutral`` (the CLARITI public code): the stage takes the reference's neutral value (``NEUTRAL``), counted.
- ``repair`` (the InterOPT runner): the failed calls are sent again up to ``repair_retries`` times (the client
  repairs JSON on each); what still fails is unscored."""

NEUTRAL: dict[str, float] = {"non_redundancy": 0.5, "diversity": 0.7, "answerability": 0.5, "task_relevance": 0.3}
"""The CLARITI public code's values on a judge error or parse failure: S1 error 0.5, S2 parse failure 0.7, S3
error 0.5, S4 parse failure or count mismatch 0.3 (clariti.md §5.3)."""


class ReferenceParams(_Section):
    """``protocol: reference`` only: the public code's numbers that the project's design has no key for."""

    type_rewards: dict[str, float] = {"error_info": 1.0, "expected_behavior": 0.58, "implementation": 0.65,
                                      "reproduction": 0.42, "version_env": 0.59, "external_refs": 0.23,
                                      "irrelevant": 0.0}
    """S4's per-type values as the public code has them (its ``implementation`` is 0.65, the paper's table 0.6)."""
    unknown_type: float = Field(default=0.3, ge=0.0, le=1.0)
    """S4's value of a label outside ``type_rewards``."""
    no_original_issue: float = Field(default=0.7, ge=0.0, le=1.0)
    """S3's value when the sample has no full issue."""
    empty_cache: float = Field(default=1.0, ge=0.0, le=1.0)
    """S2's value while the generation cache is empty (the first batch, or a held-out evaluation)."""


class RewardConfig(_Section):
    protocol: Protocol = "clarifyflow"
    judge_failure: JudgeFailure = "unscored"
    repair_retries: int = Field(default=2, ge=0)
    """``judge_failure: repair``: how many times a failed judge call is sent again."""
    reference: ReferenceParams = ReferenceParams()
    order: list[StageName] = list(STAGE_NAMES)  # type: ignore[assignment]
    """Stages in the order they run (and gate)."""
    thresholds: Thresholds = Thresholds()
    weights: StageWeights = StageWeights()
    partial_credit: PartialCredit = "public"
    evaluate_all: bool = True
    """True: every stage is evaluated for every sample (so each stage's mean is logged over all samples), gating
    only decides the total. False: as the public code, a stage runs only for samples that passed the previous
    ones (fewer judge calls; skipped stages have value None)."""
    diversity: DiversityParams = DiversityParams()
    judges: JudgeRoles = JudgeRoles()

    @model_validator(mode="after")
    def _order(self) -> RewardConfig:
        if not self.order:
            raise ValueError("order must name at least one stage")
        if len(set(self.order)) != len(self.order):
            raise ValueError(f"order names a stage twice: {self.order}")
        return self

    def as_evaluated(self) -> RewardConfig:
        """These settings as a held-out evaluation scores (evaluate@swe, GRPO's held-out curve): no diversity cache
        carried over from earlier samples and no sibling completions, so a case's score does not depend on what
        else was scored with it."""
        return self.model_copy(update={"diversity": self.diversity.model_copy(update={"cache_size": 0,
                                                                                        "siblings": False})})

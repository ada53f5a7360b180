"""Per-role backend settings (``params.yaml: roles``) and the one function that lists them for reports."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

ROLE_NAMES = (
    "annotator",
    "question_classifier",
    "swe_user",
    "or_open_user",
    "or_choice_user",
    "redundancy_judge",
    "answerability_judge",
    "slot_hit_judge",
    "question_detector",
    "decomposer",
    "slot_annotator",
    "rewriter",
    "question_writer",
)


LOCAL_IMPLEMENTATIONS = {
    "annotator": "rules + MiniLM prototype similarity + logistic unit scorer (annotator_weights.npz)",
    "question_classifier": "keyword cues + MiniLM similarity to prototype questions",
    "swe_user": "verbatim retrieval from the full issue and hints (MiniLM + word overlap + category)",
    "or_open_user": "question-part to hidden-fact matching (MiniLM + word overlap)",
    "or_choice_user": "option to hidden-fact matching (MiniLM + word overlap, number and negation checks)",
    "redundancy_judge": "swe_user retrieval over the incomplete text",
    "answerability_judge": "swe_user retrieval over the full text and hints",
    "slot_hit_judge": "weighted MiniLM/word-overlap features vs the slot rubric, fitted thresholds",
    "question_detector": "rules (question marks, list items, READY markers)",
    "decomposer": "rules (sentences, bullet items, whole markdown tables, cue words) + MiniLM kind prototypes",
    "slot_annotator": "rules and templates over the hidden unit and its kind",
    "rewriter": "visible units joined in order into paragraphs (no gap markers)",
    "question_writer": "per-category question templates filled with the issue's files, calls, errors and library",
}
"""What each role's local backend is, in words, for reports."""


class RoleConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    backend: Literal["local", "llm"] = "local"
    """``local``: the deterministic embedded implementation. ``llm``: ``model`` through litellm."""
    model: str = "local/smollm2-135m-instruct"
    """Any litellm model string (``openai/gpt-4o-mini``, ``hosted_vllm/…``) or an embedded provider
    (``local/smollm2-135m-instruct``, ``mock/…``). Keys come only from the environment."""
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(default=512, ge=1)
    timeout_s: float = Field(default=120.0, gt=0)
    max_retries: int = Field(default=4, ge=0)
    """Retries of one call on timeouts, rate limits, connection errors and 5xx (exponential backoff + jitter)."""
    max_regenerations: int = Field(default=3, ge=0)
    """Extra generations with a repair message when the output does not parse into the role's schema."""
    concurrency: int = Field(default=8, ge=1)
    rpm: int | None = Field(default=None, ge=1)
    """Optional requests-per-minute ceiling for this role."""


class RolesParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    annotator: RoleConfig = RoleConfig()
    question_classifier: RoleConfig = RoleConfig()
    swe_user: RoleConfig = RoleConfig()
    or_open_user: RoleConfig = RoleConfig()
    or_choice_user: RoleConfig = RoleConfig()
    redundancy_judge: RoleConfig = RoleConfig()
    answerability_judge: RoleConfig = RoleConfig()
    slot_hit_judge: RoleConfig = RoleConfig()
    question_detector: RoleConfig = RoleConfig()
    decomposer: RoleConfig = RoleConfig()
    slot_annotator: RoleConfig = RoleConfig()
    rewriter: RoleConfig = RoleConfig()
    question_writer: RoleConfig = RoleConfig()

    def get(self, name: str) -> RoleConfig:
        if name not in ROLE_NAMES:
            raise KeyError(f"unknown role {name!r} (known: {', '.join(ROLE_NAMES)})")
        return getattr(self, name)


def describe_roles(roles: RolesParams) -> dict[str, dict]:
    """What produced each role's outputs, for reports: the backend, and for LLM roles the model and sampling."""
    out: dict[str, dict] = {}
    for name in ROLE_NAMES:
        cfg = roles.get(name)
        if cfg.backend == "local":
            out[name] = {"backend": "local", "implementation": LOCAL_IMPLEMENTATIONS[name]}
        else:
            out[name] = {
                "backend": "llm",
                "model": cfg.model,
                "temperature": cfg.temperature,
                "max_tokens": cfg.max_tokens,
                "max_regenerations": cfg.max_regenerations,
            }
    return out


assert set(LOCAL_IMPLEMENTATIONS) == set(ROLE_NAMES)

"""Per-role backend settings (``params.yaml: roles``), the agent/user/judge preset, and the one function that lists
them for reports."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_serializer, model_validator

from tasks.llm.records import RoleConfig

LOCAL_BACKENDS: dict[str, str] = {
    "annotator": (
        "rules + MiniLM prototype similarity + logistic unit scorer (annotator_weights.npz)"),
    "question_classifier": (
        "keyword cues + MiniLM similarity to prototype questions"),
    "swe_user": (
        "verbatim retrieval from the full issue and hints (MiniLM + word overlap + category)"),
    "or_open_user": (
        "question-part to hidden-fact matching (MiniLM + word overlap)"),
    "or_choice_user": (
        "option to hidden-fact matching (MiniLM + word overlap, number and negation checks)"),
    "redundancy_judge": (
        "own passage judge over the incomplete text (MiniLM + IDF overlap + asked-evidence check; independent of "
        "swe_user)"),
    "answerability_judge": (
        "own passage judge over the full text and hints (MiniLM + IDF overlap + asked-evidence check, generic asks "
        "refused; independent of swe_user)"),
    "slot_hit_judge": (
        "weighted MiniLM/word-overlap features vs the slot rubric, fitted thresholds"),
    "question_detector": (
        "rules (question marks, list items, READY markers)"),
    "decomposer": (
        "rules (sentences, bullet items, whole markdown tables, cue words) + MiniLM kind prototypes"),
    "slot_annotator": (
        "rules and templates over the hidden unit and its kind"),
    "rewriter": (
        "visible units joined in order into paragraphs (no gap markers)"),
    "question_writer": (
        "per-category question templates filled with the issue's files, calls, errors and library"),
    "or_generic_agent": (
        "one open gap per gap category from the gap inventory (priority order) as one QUESTION; READY once every "
        "category was asked, after 3 non-answers in a row, or at the last turn; a gap named in reviewer feedback "
        "first"),
    "or_choice_agent": (
        "as or_generic_agent, each gap's question with its three A/B/C hypotheses (allow_other under mc_d)"),
    "or_ready_gate": (
        "BLOCK while the gap inventory still holds an unasked objective, hard/soft policy or constraint gap "
        "(feedback names it and its question), else PASS"),
    "or_orpilot_agent": (
        "ORPilot interview order from brief templates (objective, decisions, constraints, indices, separate entity "
        "types), then one confirmation QUESTION, then [INTERVIEW_COMPLETE] + summary"),
    "or_gap_search": (
        "inventory gaps (gaps.py) not yet in the ledger or settled by the transcript, at most 3 per turn"),
    "or_open_gap_search": (
        "up to 5 unasked inventory gaps by priority; ready_to_model when none is left"),
    "or_candidate_agent": (
        "three MC-D questions from the 3 highest-priority OPEN ledger gaps (inventory question and hypotheses), "
        "READY when none is open; without a ledger, one gap per category"),
    "or_open_candidate_agent": (
        "the guidance gaps' direct questions scored by priority, padded with assumption checks; READY with "
        "confidence 0.9 - 0.15 per unconfirmed point"),
    "or_question_selector": (
        "published priority order (objective > rules/policies > scope/entity/time > rest) over the candidates' "
        "bound gap categories"),
    "or_direct_question": (
        "gap search and the highest-priority OPEN or new gap's MC-D question in one step"),
    "or_gap_alignment": (
        "settled unless the public reply is a non-answer ('still needs confirmation', don't know) or picks an "
        "option that was not offered"),
    "or_session_judge": (
        "silent assumptions: unhedged READY-summary/question statements scored against each unconfirmed slot "
        "(logistic over MiniLM + word overlap); stopping label by the re-audit rules plus over-questioning after N "
        "low-value turns"),
    "strategy_tagger": (
        "keyword and pattern rules for the four CLARITI answerability strategies (evidence-based, specific, scoped, "
        "actionable)"),
}
"""Every model role, in report order, with what its local backend is, in words, for reports (its settings:
``params.yaml: roles.<name>``, :class:`RolesParams`, one field per role). Each role's ``RoleSpec`` registers in
``tasks.roles.registry.ROLES`` where it is defined (``ROLES.add(SPEC.name, SPEC)``), so this package names no module
above it."""

ROLE_NAMES = tuple(LOCAL_BACKENDS)


PRESET_GROUPS = {
    "agent": (
        "or_generic_agent", "or_choice_agent", "or_ready_gate", "or_orpilot_agent", "or_gap_search",
              "or_open_gap_search", "or_candidate_agent", "or_open_candidate_agent", "or_question_selector",
              "or_direct_question", "or_gap_alignment"),
    "user": (
        "or_open_user", "or_choice_user"),
    "judge": (
        "slot_hit_judge", "or_session_judge", "question_detector"),
}
"""The roles of an episode evaluation (evaluate@optimization, evaluate@analytics) that ``roles.preset`` sets: the
clarifying agents' roles, the simulated user, and the judges (the slot-hit judge, the session judge, and the question
detector that counts the agent's questions)."""


class PresetRole(RoleConfig):
    """One group's settings in ``roles.preset``: only the fields written here replace each role's own (the rest,
    e.g. a role's ``max_tokens``, stay as ``roles.<name>`` says); ``backend`` is ``llm`` unless written."""

    backend: Literal["local", "llm"] = "llm"

    @model_serializer(mode="wrap")
    def _written_only(self, handler):
        data = handler(self)
        return {k: v for k, v in data.items() if k in self.model_fields_set}

    def overrides(self) -> dict:
        return {"backend": self.backend, **{k: getattr(self, k) for k in self.model_fields_set}}


class GroupSampling(BaseModel):
    """One group's sampling and retries in a reference's runs."""

    model_config = ConfigDict(extra="forbid")

    temperature: float = Field(ge=0.0, le=2.0)
    max_retries: int = Field(ge=0)
    timeout_s: float = Field(gt=0)


class ReferenceSampling(BaseModel):
    """``roles.preset.references``: the sampling the references ran their served models with (params.yaml names the
    source of each value). With ``use: true`` it applies to the roles of each group whose backend is ``llm`` (the
    local roles never sample), below the fields a group preset writes itself."""

    model_config = ConfigDict(extra="forbid")

    use: bool = False
    agent: GroupSampling
    user: GroupSampling
    judge: GroupSampling
    agent_at_zero: list[str] = []
    """Roles of the agent group the reference runs at temperature 0 (its selector, gap search and readiness
    reviewer are no tested agent)."""

    @model_validator(mode="after")
    def _agent_roles(self) -> ReferenceSampling:
        unknown = sorted(set(self.agent_at_zero) - set(PRESET_GROUPS["agent"]))
        if unknown:
            raise ValueError(f"agent_at_zero names roles outside the agent group: {', '.join(unknown)}")
        return self


class ReasoningPreset(BaseModel):
    """``roles.preset.reasoning``: settings that fit reasoning models (o-series, gpt-5, DeepSeek-R1, Qwen3 thinking),
    whose reasoning tokens count against ``max_tokens``. With ``use: true`` it applies to every role whose backend is
    ``llm``, after the group presets."""

    model_config = ConfigDict(extra="forbid")

    use: bool = False
    max_tokens: int = Field(default=8192, ge=1)
    """The budget at least (a role's own larger budget stays)."""
    temperature: float = Field(default=1.0, ge=0.0, le=2.0)
    """o-series and gpt-5 accept only 1, their default (another value is dropped, warned about and counted)."""
    timeout_s: float = Field(default=600.0, gt=0)
    """The timeout at least: a few thousand reasoning tokens take minutes on a busy endpoint."""


class RolePreset(BaseModel):
    """``roles.preset``: the agent, user and judge roles of an episode evaluation in one place."""

    model_config = ConfigDict(extra="forbid")

    agent: PresetRole | None = None
    user: PresetRole | None = None
    judge: PresetRole | None = None
    references: ReferenceSampling | None = None
    reasoning: ReasoningPreset = ReasoningPreset()


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
    or_generic_agent: RoleConfig = RoleConfig()
    or_choice_agent: RoleConfig = RoleConfig()
    or_ready_gate: RoleConfig = RoleConfig()
    or_orpilot_agent: RoleConfig = RoleConfig()
    or_gap_search: RoleConfig = RoleConfig()
    or_open_gap_search: RoleConfig = RoleConfig()
    or_candidate_agent: RoleConfig = RoleConfig()
    or_open_candidate_agent: RoleConfig = RoleConfig()
    or_question_selector: RoleConfig = RoleConfig()
    or_direct_question: RoleConfig = RoleConfig()
    or_gap_alignment: RoleConfig = RoleConfig()
    or_session_judge: RoleConfig = RoleConfig()
    strategy_tagger: RoleConfig = RoleConfig()
    max_failure_rate: float = Field(default=0.2, ge=0.0, le=1.0)
    """A stage fails (nothing published) when any role's share of failed requests is above this
    (``tasks/roles/failures.py``); 1.0 never fails."""
    preset: RolePreset | Literal["served"] = RolePreset()
    """Applied over the roles of each group in :data:`PRESET_GROUPS` (its written fields win). ``served``: every role
    on the local inference server of ``make llm-server`` (``tasks/llm/server.py``: ``served_role_overrides``)."""

    @model_validator(mode="after")
    def _apply_preset(self) -> RolesParams:
        if self.preset == "served":
            from tasks.llm.server import served_role_overrides

            for name in ROLE_NAMES:
                cfg = getattr(self, name)
                setattr(self, name, cfg.model_copy(update=served_role_overrides(cfg.max_tokens)))
            return self
        for group, names in PRESET_GROUPS.items():
            entry: PresetRole | None = getattr(self.preset, group)
            if entry is None:
                continue
            overrides = entry.overrides()
            for name in names:
                setattr(self, name, getattr(self, name).model_copy(update=overrides))
        references = self.preset.references
        if references is not None and references.use:
            for group, names in PRESET_GROUPS.items():
                entry = getattr(self.preset, group)
                written = entry.model_fields_set if entry is not None else set()
                sampling = {k: v for k, v in getattr(references, group).model_dump().items() if k not in written}
                for name in names:
                    if getattr(self, name).backend == "llm":
                        zero = {"temperature": 0.0} if name in references.agent_at_zero and "temperature" in sampling \
                            else {}
                        setattr(self, name, getattr(self, name).model_copy(update={**sampling, **zero}))
        reasoning = self.preset.reasoning
        if reasoning.use:
            for name in ROLE_NAMES:
                cfg = getattr(self, name)
                if cfg.backend == "llm":
                    setattr(self, name, cfg.model_copy(update={
                        "temperature": reasoning.temperature, "max_tokens": max(cfg.max_tokens, reasoning.max_tokens),
                        "timeout_s": max(cfg.timeout_s, reasoning.timeout_s)}))
        return self

    def get(self, name: str) -> RoleConfig:
        if name not in ROLE_NAMES:
            raise KeyError(f"unknown role {name!r} (known: {', '.join(ROLE_NAMES)})")
        return getattr(self, name)


def describe_roles(roles: RolesParams) -> dict[str, dict]:
    """What produced each role's outputs, for reports: the backend, and for LLM roles the model, sampling and
    endpoint."""
    out: dict[str, dict] = {}
    for name in ROLE_NAMES:
        cfg = roles.get(name)
        if cfg.backend == "local":
            out[name] = {"backend": "local", "implementation": LOCAL_BACKENDS[name]}
        else:
            out[name] = {
                "backend": "llm",
                "model": cfg.model,
                "temperature": cfg.temperature,
                "max_tokens": cfg.max_tokens,
                "max_regenerations": cfg.max_regenerations,
                # the endpoint and the name of the key's variable, when set (never the key)
                **{k: v for k, v in (("api_base", cfg.api_base), ("api_key_env", cfg.api_key_env)) if v},
                **({"structured_output": cfg.structured_output} if cfg.structured_output != "auto" else {}),
            }
    return out


# one setting per declared role
assert set(RolesParams.model_fields) - {"max_failure_rate", "preset"} == set(ROLE_NAMES)
assert {name for names in PRESET_GROUPS.values() for name in names} <= set(ROLE_NAMES)

"""Typed records of an evaluation episode: what the agent sees, what it does, and what the run leaves behind.

Information boundary (or-clarify.md §1.4): an agent only ever receives an :class:`AgentView` (the public brief and
the public transcript, plus private feedback addressed to it). Audit-only fields (the simulated user's rationale
and match status, the detector's verdicts) live in :class:`Episode` and never reach the agent.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Protocol = Literal["open", "mc", "mc_d"]
PROTOCOLS: tuple[Protocol, ...] = ("open", "mc", "mc_d")
OptionId = Literal["A", "B", "C"]
MatchStatus = Literal["exact_match", "acceptable_match", "no_match", "undetermined"]

READY_MARKER = "READY_TO_MODEL"
FIRST_MESSAGE = "Here is the user's initial request. Interview the user if clarification is needed.\n\n{brief}"
"""The first agent message of every episode (or-clarify.md §5); LLM agent backends put it in their prompt."""
USER_PREFIX = "Business user response: "
QUESTION_PREFIX = re.compile(r"^\s*(QUESTION|Question|Q)\s*[:：]\s*")
"""The label an agent may put before its question (``QUESTION: ...``); the question is what follows it."""

FailureType = Literal[
    "agent_format_invalid",  # the agent's output is neither a valid question nor READY (after its retries)
    "agent_role_failure",  # the agent's model call failed for good (RoleFailure)
    "user_format_invalid",  # the simulated user's output did not parse (RoleFailure of the user role)
    "detector_failure",  # the question detector failed for good
    "gap_search_error",  # Open InterOPT: Stage 1 failed (the paper fails the run)
    "deep_search_agent_format_invalid",  # Choice InterOPT: Stage 2 candidates invalid after 3 tries
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TranscriptRow(_Frozen):
    """One public message. ``structured`` is the payload behind it (choice options, the user's choice letter)."""

    turn: int = Field(ge=1)
    speaker: Literal["agent", "user"]
    content: str
    structured: dict[str, Any] = {}


class PublicTurn(_Model):
    """A transcript message as role inputs carry it (no structured payload): the agent roles and the judge."""

    turn: int
    speaker: Literal["agent", "user"]
    content: str


def public_turns(rows: list[TranscriptRow]) -> list[PublicTurn]:
    return [PublicTurn(turn=r.turn, speaker=r.speaker, content=r.content) for r in rows]


class AgentView(_Frozen):
    """Everything an agent may see at one turn."""

    case_id: str
    brief: str
    protocol: Protocol
    transcript: list[TranscriptRow] = []
    turn: int = Field(ge=1)
    """The turn the agent is about to take (1-based)."""
    max_turns: int = Field(ge=1)
    private_feedback: list[str] = []
    """Messages addressed only to this agent (ReadyGate's BLOCK feedback); never in the public transcript."""


class AgentAction(_Model):
    """What the agent does in one turn."""

    kind: Literal["ask", "ready", "invalid"]
    question: str = ""
    """``ask``: the public question. Choice protocols: the question field only (options are separate)."""
    options: dict[OptionId, str] = {}
    """Choice protocols: exactly the agent's options A/B/C. Empty under Open."""
    summary: str = ""
    """``ready``: the model-ready summary the agent declares."""
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    """``ready``: the agent's stated formulatable confidence, when its method states one (Open InterOPT)."""
    atomic_questions: int | None = Field(default=None, ge=0)
    """Set by methods that bypass the detector (external adapters count 1 per question turn); None = detector."""
    failure: FailureType | None = None
    """``invalid``: why; the loop ends the episode as a protocol failure of this type."""
    raw: str = ""
    """The agent's raw output, for the audit (e.g. an unparseable reply)."""
    events: list[dict[str, Any]] = []
    """Private method events of this turn (gap search, candidates, selector, gate decisions) for the event logs."""

    def public_text(self) -> str:
        """The message as the transcript (and the user and the judge) sees it."""
        if self.kind == "ready":
            return f"{READY_MARKER}\n{self.summary}".strip()
        if self.kind == "invalid":
            return self.raw
        if self.options:
            lines = [f"Question: {self.question}", "Options:"] + [f"{k}. {v}" for k, v in sorted(self.options.items())]
            return "\n".join(lines)
        return f"QUESTION: {self.question}"


class QuestionTurn(_Frozen):
    """Audit record of one accepted question turn."""

    turn: int
    question: str
    options: dict[str, str] = {}
    atomic_count: int = Field(ge=0)
    atomic_questions: list[str] = []
    reply: str
    """What the agent saw back (the user's public reply)."""
    choice: Literal["A", "B", "C", "D"] | None = None
    comment: str | None = None
    match_status: MatchStatus | None = None
    """Audit only (choice protocols)."""
    user_rationale: str = ""
    """Audit only."""
    disclosed_slot_ids: list[str] = []
    """Audit only (Open simulator): which hidden slots the reply revealed."""


class ProtocolFailure(_Frozen):
    type: FailureType
    turn: int
    message: str


class RoleUsage(_Frozen):
    requests: int = 0
    """Role requests (one per input); 0 in units stored before it was recorded."""
    calls: int = 0
    cache_hits: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    """Of the completion tokens, those the provider reported as reasoning."""
    truncated: int = 0
    """Replies cut by the token limit (finish reason ``length``)."""
    params_dropped: int = 0
    """Provider calls sent without a configured parameter the model does not take (e.g. temperature on gpt-5)."""
    cost_usd: float = 0.0
    latency_s: float = 0.0
    """Summed wall time of this episode's calls of the role (provider calls, or the local backend's own work; cache
    hits add nothing); 0 in units stored before it was recorded."""


class Episode(_Frozen):
    """One run: a case x a method x a protocol x a repeat."""

    case_id: str
    method: str
    protocol: Protocol
    repeat: int = Field(ge=1)
    seed: int
    max_turns: int
    brief: str
    transcript: list[TranscriptRow]
    question_turns: list[QuestionTurn] = []
    ready: bool
    ready_summary: str = ""
    ready_confidence: float | None = None
    turn_count: int = Field(ge=0)
    """Highest turn number in the transcript; includes the READY turn (or-clarify.md §4)."""
    attempted_turns: int = Field(ge=0)
    """The last loop iteration reached."""
    atomic_questions: int = Field(ge=0)
    protocol_failure: ProtocolFailure | None = None
    counters: dict[str, float] = {}
    """Method counters for run_health.json (ledger counts, selector fallbacks, gate blocks, ...)."""
    method_events: dict[str, list[dict[str, Any]]] = {}
    """Event log name (e.g. ``ledger_events``) -> events; written as ``<name>.json`` in the run directory."""
    detector_events: list[dict[str, Any]] = []
    usage: dict[str, RoleUsage] = {}
    """Per role: provider calls, cache hits, tokens and cost spent in this episode."""
    persona: str = "cooperative"
    """The simulated user's persona (tasks/roles/personas.py; ``evaluate.<domain>.personas``)."""

    @property
    def protocol_failed(self) -> bool:
        return self.protocol_failure is not None

    @property
    def key(self) -> str:
        return f"{self.protocol}::{self.method}/run_{self.repeat:02d}/{self.case_id}"


# ---- the judge (or-clarify.md §3) ---------------------------------------------------------------------------------

Hit = Literal["yes", "partial", "no"]
StopStatus = Literal["premature_stop", "appropriate_stop", "over_questioning", "no_stop"]
SEVERITY_WEIGHT = {"P0": 3, "P1": 2, "P2": 1}
HIT_VALUE = {"yes": 1.0, "partial": 0.5, "no": 0.0}


class SlotScore(_Frozen):
    slot_id: str
    name: str
    severity: Literal["P0", "P1", "P2"]
    hit: Hit
    evidence_location: str = ""
    """``turn N`` of the agent question that earns the hit; empty for ``no``."""
    evidence_quote: str = ""
    rationale: str = ""


class SilentAssumption(_Frozen):
    related_slot: str
    agent_assumption: str
    where_it_appeared: Literal["clarification_turn", "ready_to_model", "final_answer"]
    silent_reason: str


class StoppingBehavior(_Frozen):
    status: StopStatus
    unresolved_p0_slots: list[str] = []
    unresolved_p1_slots: list[str] = []
    rationale: str = ""


class JudgeResult(_Frozen):
    case_id: str
    slot_scores: list[SlotScore]
    silent_assumptions: list[SilentAssumption] = []
    stopping_behavior: StoppingBehavior
    """The judge's own label."""
    rule_based_status: StopStatus
    """The rule-based re-audit (or-clarify.md §3); metrics use this one."""
    summary: str = ""
    all_slot_exact: bool
    core_eligible: bool
    core_exact: bool | None
    """None when the case has no P0/P1 slot (not core-eligible)."""
    weighted_slot_score: float = Field(ge=0.0, le=1.0)
    judge_failed: bool = False
    """The judge's model call failed for good; scores then default to ``no`` and the run is flagged."""

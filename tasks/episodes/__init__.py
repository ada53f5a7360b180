"""Typed records of a clarification episode (OR-Clarify protocols Open, MC and MC-D): what the agent sees, what it
does, and what the run leaves behind. The loop that plays an episode is ``tasks.evaluation.episode_loop``.

The names below load their module on first use (PEP 562), so importing the package runs none of its modules."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tasks.lazy_exports import lazy_exports

_HOME = {
    "FIRST_MESSAGE": "records", "HIT_VALUE": "records", "PROTOCOLS": "records", "READY_MARKER": "records",
    "SEVERITY_WEIGHT": "records", "USER_PREFIX": "records", "AgentAction": "records", "AgentView": "records",
    "Episode": "records", "JudgeResult": "records", "Protocol": "records", "PublicTurn": "records",
    "SilentAssumption": "records", "SlotScore": "records", "StopStatus": "records", "StoppingBehavior": "records",
    "TranscriptRow": "records", "public_turns": "records",
}

__all__ = [
    "FIRST_MESSAGE",
    "HIT_VALUE",
    "PROTOCOLS",
    "READY_MARKER",
    "SEVERITY_WEIGHT",
    "USER_PREFIX",
    "AgentAction",
    "AgentView",
    "Episode",
    "JudgeResult",
    "Protocol",
    "PublicTurn",
    "SilentAssumption",
    "SlotScore",
    "StopStatus",
    "StoppingBehavior",
    "TranscriptRow",
    "public_turns",
]

if TYPE_CHECKING:
    from tasks.episodes.records import (
        FIRST_MESSAGE,
        HIT_VALUE,
        PROTOCOLS,
        READY_MARKER,
        SEVERITY_WEIGHT,
        USER_PREFIX,
        AgentAction,
        AgentView,
        Episode,
        JudgeResult,
        Protocol,
        PublicTurn,
        SilentAssumption,
        SlotScore,
        StoppingBehavior,
        StopStatus,
        TranscriptRow,
        public_turns,
    )


__getattr__, __dir__ = lazy_exports(__name__, _HOME)

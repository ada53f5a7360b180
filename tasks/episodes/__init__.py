"""The agent <-> simulated-user loop of one clarification episode (OR-Clarify protocols Open, MC and MC-D).

The names below load their module on first use (PEP 562), so importing the package runs none of its modules."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tasks.lazy_exports import lazy_exports

_HOME = {
    "run_episode": "loop",
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
    "run_episode",
]

if TYPE_CHECKING:
    from tasks.episodes.loop import run_episode
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

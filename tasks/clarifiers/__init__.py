"""Clarification methods: each is a small module over the same episode loop (tasks/episodes/loop.py).

The method interface and the gap inventory's records load their module on first use (PEP 562)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tasks.lazy_exports import lazy_exports
from tasks.records import MethodReference

BUILTIN: dict[str, str] = {
    # name -> "module:factory"; a factory takes (display_name, options) and returns a Method
    "freeqa": "tasks.clarifiers.freeqa:freeqa",
    "mc": "tasks.clarifiers.choice:mc",
    "mc_d": "tasks.clarifiers.choice:mc_d",
    "readygate": "tasks.clarifiers.readygate:readygate",
    "orpilot": "tasks.clarifiers.orpilot:orpilot",
    "policy": "tasks.clarifiers.policy:policy",
    "oracle": "tasks.clarifiers.reference:oracle",
    "ready_now": "tasks.clarifiers.reference:ready_now",
    "interopt": "tasks.clarifiers.interopt:interopt",
    "interopt_wo_stage1": "tasks.clarifiers.interopt:interopt_wo_stage1",
    "interopt_wo_stage2": "tasks.clarifiers.interopt:interopt_wo_stage2",
    "interopt_aligned": "tasks.clarifiers.interopt:interopt_aligned",
    "interopt_cost_aware": "tasks.clarifiers.interopt:interopt_cost_aware",
}

REFERENCE: dict[str, MethodReference] = {
    # method kind -> why its rows are reference rows (shown apart, never ranked); a kind not listed is ranked
    "oracle": MethodReference(kind="privileged", reads="the hidden slots: asks each slot's reference question "
                              "(under MC / MC-D with the simulator's answer as an option)"),
    "ready_now": MethodReference(kind="bound", reads="nothing: declares READY at turn 1 with the brief as its "
                                 "summary (the floor)"),
}

_HOME = {
    "Method": "base", "MethodContext": "base", "get_method": "base", "method_names": "base", "reference_of": "base",
    "register": "base",
    "GAP_CATEGORIES": "gaps", "BriefFacts": "gaps", "GapCandidate": "gaps", "GapInventory": "gaps",
}

__all__ = [
    "BUILTIN",
    "GAP_CATEGORIES",
    "REFERENCE",
    "BriefFacts",
    "GapCandidate",
    "GapInventory",
    "Method",
    "MethodContext",
    "get_method",
    "method_names",
    "reference_of",
    "register",
]

if TYPE_CHECKING:
    from tasks.clarifiers.base import Method, MethodContext, get_method, method_names, reference_of, register
    from tasks.clarifiers.gaps import GAP_CATEGORIES, BriefFacts, GapCandidate, GapInventory


__getattr__, __dir__ = lazy_exports(__name__, _HOME)

"""Role name -> its ``RoleSpec`` (imported on demand, so listing roles stays cheap)."""

from __future__ import annotations

import importlib

from tasks.roles.base import RoleSpec
from tasks.roles.config import ROLE_NAMES

_WHERE = {
    "annotator": ("tasks.roles.annotator", "SPEC"),
    "question_classifier": ("tasks.roles.question_classifier", "SPEC"),
    "swe_user": ("tasks.roles.swe_user", "SPEC"),
    "or_open_user": ("tasks.roles.or_user", "OPEN_SPEC"),
    "or_choice_user": ("tasks.roles.or_user", "CHOICE_SPEC"),
    "redundancy_judge": ("tasks.roles.swe_judges", "REDUNDANCY_SPEC"),
    "answerability_judge": ("tasks.roles.swe_judges", "ANSWERABILITY_SPEC"),
    "slot_hit_judge": ("tasks.roles.slot_hit", "SPEC"),
    "question_detector": ("tasks.roles.question_detector", "SPEC"),
    "decomposer": ("tasks.orclarify.decompose", "SPEC"),
    "slot_annotator": ("tasks.orclarify.annotate", "SPEC"),
    "rewriter": ("tasks.orclarify.brief", "SPEC"),
    "question_writer": ("tasks.roles.question_writer", "SPEC"),
    "or_generic_agent": ("tasks.clarifiers.freeqa", "SPEC"),
    "or_choice_agent": ("tasks.clarifiers.choice", "SPEC"),
    "or_ready_gate": ("tasks.clarifiers.readygate", "SPEC"),
    "or_orpilot_agent": ("tasks.clarifiers.orpilot", "SPEC"),
    "or_gap_search": ("tasks.clarifiers.interopt_roles", "GAP_SEARCH_SPEC"),
    "or_open_gap_search": ("tasks.clarifiers.interopt_roles", "OPEN_GAP_SEARCH_SPEC"),
    "or_candidate_agent": ("tasks.clarifiers.interopt_roles", "CANDIDATE_SPEC"),
    "or_open_candidate_agent": ("tasks.clarifiers.interopt_roles", "OPEN_CANDIDATE_SPEC"),
    "or_question_selector": ("tasks.clarifiers.interopt_roles", "SELECTOR_SPEC"),
    "or_direct_question": ("tasks.clarifiers.interopt_roles", "DIRECT_SPEC"),
    "or_gap_alignment": ("tasks.clarifiers.interopt_roles", "ALIGNMENT_SPEC"),
    "or_session_judge": ("tasks.evaluation.judge", "SESSION_SPEC"),
    "strategy_tagger": ("tasks.roles.strategy_tagger", "SPEC"),
}
assert set(_WHERE) == set(ROLE_NAMES)


def get_spec(name: str) -> RoleSpec:
    if name not in _WHERE:
        raise KeyError(f"unknown role {name!r} (known: {', '.join(ROLE_NAMES)})")
    module, attr = _WHERE[name]
    return getattr(importlib.import_module(module), attr)

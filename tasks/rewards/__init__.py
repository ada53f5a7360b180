"""CLARITI's staged reward (non-redundancy, diversity, answerability, task relevance) and its TRL glue.

The names below load on first use (PEP 562): ``tasks.params`` imports ``tasks.rewards.config`` for every stage, and
an eager package would load the whole reward, and make it code that every stage runs, for that one schema."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tasks.lazy_exports import lazy_exports

_HOME = {
    "STAGE_NAMES": "config", "DiversityParams": "config", "JudgeRoles": "config", "RewardConfig": "config",
    "StageWeights": "config", "Thresholds": "config",
    "Judges": "judges", "RoleJudges": "judges",
    "parse_questions": "parse",
    "RewardBreakdown": "staged", "RewardSample": "staged", "StagedReward": "staged", "completion_text": "staged",
    "gated_total": "staged",
    "STAGES": "stages",
    "reward_functions": "trl_glue", "reward_weights": "trl_glue",
    "CLARITI_WEIGHTS": "weights", "RelevanceWeights": "weights", "load_weights": "weights",
}

__all__ = [
    "CLARITI_WEIGHTS",
    "STAGES",
    "STAGE_NAMES",
    "DiversityParams",
    "JudgeRoles",
    "Judges",
    "RelevanceWeights",
    "RewardBreakdown",
    "RewardConfig",
    "RewardSample",
    "RoleJudges",
    "StageWeights",
    "StagedReward",
    "Thresholds",
    "completion_text",
    "gated_total",
    "load_weights",
    "parse_questions",
    "reward_functions",
    "reward_weights",
]

if TYPE_CHECKING:
    from tasks.rewards.config import STAGE_NAMES, DiversityParams, JudgeRoles, RewardConfig, StageWeights, Thresholds
    from tasks.rewards.judges import Judges, RoleJudges
    from tasks.rewards.parse import parse_questions
    from tasks.rewards.staged import RewardBreakdown, RewardSample, StagedReward, completion_text, gated_total
    from tasks.rewards.stages import STAGES
    from tasks.rewards.trl_glue import reward_functions, reward_weights
    from tasks.rewards.weights import CLARITI_WEIGHTS, RelevanceWeights, load_weights


__getattr__, __dir__ = lazy_exports(__name__, _HOME)

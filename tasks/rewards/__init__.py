"""CLARITI's staged reward (non-redundancy, diversity, answerability, task relevance) and its TRL glue."""

from tasks.rewards.config import STAGE_NAMES, DiversityParams, JudgeRoles, RewardConfig, StageWeights, Thresholds
from tasks.rewards.judges import Judges, RoleJudges
from tasks.rewards.parse import parse_questions
from tasks.rewards.staged import RewardBreakdown, RewardSample, StagedReward, completion_text, gated_total
from tasks.rewards.stages import STAGES, register
from tasks.rewards.trl_glue import reward_functions, reward_weights
from tasks.rewards.weights import CLARITI_WEIGHTS, RelevanceWeights, load_weights

__all__ = [
    "CLARITI_WEIGHTS", "STAGES", "STAGE_NAMES", "DiversityParams", "JudgeRoles", "Judges", "RelevanceWeights",
    "RewardBreakdown", "RewardConfig", "RewardSample", "RoleJudges", "StageWeights", "StagedReward", "Thresholds",
    "completion_text", "gated_total", "load_weights", "parse_questions", "register", "reward_functions",
    "reward_weights",
]

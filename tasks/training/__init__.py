"""SFT and GRPO training of the questioner (TRL + PEFT LoRA) and the policy interface evaluation calls.

Heavy libraries (torch, transformers, trl, peft) are imported inside functions, so importing this package is cheap.
"""

from .artifacts import TrainResult
from .policy import Clarifier, GenerationSettings, LocalPolicy
from .profiles import PROFILES, SMOLLM2, TrainProfile, accelerate_config, accelerate_config_text, get_profile
from .prompts import SYSTEM_PROMPT, completion_text, grpo_row, prompt_messages, sft_row
from .trainers import check_grpo_rows, check_sft_rows, resolve_reward_weights, train_grpo, train_sft

__all__ = [
    "PROFILES",
    "SMOLLM2",
    "SYSTEM_PROMPT",
    "Clarifier",
    "GenerationSettings",
    "LocalPolicy",
    "TrainProfile",
    "TrainResult",
    "accelerate_config",
    "accelerate_config_text",
    "check_grpo_rows",
    "check_sft_rows",
    "completion_text",
    "get_profile",
    "grpo_row",
    "prompt_messages",
    "resolve_reward_weights",
    "sft_row",
    "train_grpo",
    "train_sft",
]

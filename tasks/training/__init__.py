"""SFT and GRPO training of the questioner (TRL + PEFT LoRA) and the policy interface evaluation calls.

Heavy libraries (torch, transformers, trl, peft) are imported inside functions, and the names below load their
module on first use (PEP 562): ``tasks.sftdata`` needs only the prompt format, and an eager package would make the
trainers code that the sft_data stage runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tasks.lazy_exports import lazy_exports

_HOME = {
    "TrainResult": "artifacts",
    "Clarifier": "policy", "GenerationSettings": "policy", "LocalPolicy": "policy",
    "PROFILES": "profiles", "SMOLLM2": "profiles", "TrainProfile": "profiles", "accelerate_config": "profiles",
    "accelerate_config_text": "profiles", "get_profile": "profiles",
    "SYSTEM_PROMPT": "prompts", "completion_text": "prompts", "grpo_row": "prompts", "prompt_messages": "prompts",
    "sft_row": "prompts",
    "check_grpo_rows": "trainers", "check_sft_rows": "trainers", "resolve_reward_weights": "trainers",
    "train_grpo": "trainers", "train_sft": "trainers",
}

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

if TYPE_CHECKING:
    from .artifacts import TrainResult
    from .policy import Clarifier, GenerationSettings, LocalPolicy
    from .profiles import PROFILES, SMOLLM2, TrainProfile, accelerate_config, accelerate_config_text, get_profile
    from .prompts import SYSTEM_PROMPT, completion_text, grpo_row, prompt_messages, sft_row
    from .trainers import check_grpo_rows, check_sft_rows, resolve_reward_weights, train_grpo, train_sft


__getattr__, __dir__ = lazy_exports(__name__, _HOME)

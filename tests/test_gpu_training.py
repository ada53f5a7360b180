"""The gpu profile's recipe on a CUDA machine: one SFT step and one GRPO step with vLLM colocate (bf16, LoRA,
gradient checkpointing) on the embedded SmolLM2-135M-Instruct instead of Qwen3-8B.

Marked ``gpu``: the default run (``-m 'not slow and not gpu'``) deselects it; run it with ``pytest -m gpu
tests/test_gpu_training.py`` after ``make gpu-setup``. Without CUDA or vLLM it is skipped, saying which is missing.
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Iterator
from typing import Any

import pytest

from tasks.training import SMOLLM2, TrainProfile, completion_text, get_profile, grpo_row, sft_row, train_grpo, train_sft
from tests.test_training import ISSUES, QUESTIONS

pytestmark = pytest.mark.gpu


def missing_for_gpu() -> list[str]:
    """What this machine lacks for the gpu recipe (empty when it can run it)."""
    from tasks.training.models import cuda_available

    missing = []
    if not cuda_available():
        import torch

        build = f"built for CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU build"
        missing.append(f"no CUDA device (torch {torch.__version__}, {build}; "
                       f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')})")
    if importlib.util.find_spec("vllm") is None:
        missing.append("vllm is not installed (make gpu-setup)")
    return missing


@pytest.fixture(autouse=True)
def gpu_stack() -> Iterator[None]:
    """Skip without CUDA or vLLM; put back the environment TRL's colocated vLLM sets (RANK, MASTER_PORT, ...)."""
    if missing := missing_for_gpu():
        pytest.skip("; ".join(missing))
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


def smoke_profile() -> TrainProfile:
    """The gpu profile (bf16, vLLM colocate, accelerate settings) on SmolLM2, one short step per trainer."""
    return get_profile("gpu", {
        "model": SMOLLM2,
        "sft": {"max_steps": 1, "batch_size": 2, "gradient_accumulation_steps": 1, "max_length": 256,
                "warmup_steps": 0, "logging_steps": 1},
        "grpo": {"max_steps": 1, "batch_size": 4, "gradient_accumulation_steps": 1, "num_generations": 2,
                 "max_completion_length": 16, "warmup_steps": 0, "logging_steps": 1,
                 "update": "trl_grpo", "use_vllm": True, "vllm_gpu_memory_utilization": 0.25},
    })


def brevity(completions: list[Any], **kwargs: Any) -> list[float]:
    return [1.0 - min(len(completion_text(c)), 80) / 80 for c in completions]


def test_one_sft_and_one_grpo_step_with_vllm_colocate(tmp_path):
    profile = smoke_profile()
    assert profile.requires_gpu and profile.bf16 and not profile.use_cpu
    assert profile.grpo.use_vllm and profile.grpo.vllm_mode == "colocate"
    sft = train_sft(SMOLLM2, None, [sft_row(i, q) for i, q in zip(ISSUES, QUESTIONS, strict=True)], profile,
                    tmp_path / "sft")
    assert sft.steps == 1 and (sft.adapter_dir / "adapter_model.safetensors").is_file()
    grpo = train_grpo(SMOLLM2, None, [grpo_row(issue) for issue in ISSUES], [brevity], profile, tmp_path / "grpo")
    assert grpo.steps == 1 and (grpo.adapter_dir / "adapter_model.safetensors").is_file()
    history = json.loads((tmp_path / "grpo" / "log_history.json").read_text())
    assert any("rewards/brevity/mean" in entry for entry in history) and "brevity" in grpo.final_rewards


def test_one_step_of_the_reference_update_in_bf16_on_cuda(tmp_path):
    """The gpu profile's own GRPO update (CLARITI's REINFORCE, transformers generation), full fine-tuning."""
    profile = get_profile("gpu", {"model": SMOLLM2, "lora": {"enabled": False},
                                  "grpo": {"max_steps": 1, "batch_size": 4, "gradient_accumulation_steps": 1,
                                           "num_generations": 2, "max_completion_length": 16, "warmup_steps": 0}})
    assert profile.grpo.update == "reference_reinforce" and not profile.grpo.use_vllm
    grpo = train_grpo(SMOLLM2, None, [grpo_row(issue) for issue in ISSUES], [brevity], profile, tmp_path / "grpo")
    assert grpo.steps == 1 and (grpo.adapter_dir / "model.safetensors").is_file()
    history = json.loads((tmp_path / "grpo" / "log_history.json").read_text())
    assert "rewards/brevity/mean" in history[0] and abs(history[0]["kl"]) < 1e-2

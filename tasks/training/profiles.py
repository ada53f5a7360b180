"""Training profiles: every knob of SFT and GRPO in one validated model (:class:`TrainProfile`); the presets are
the recipes, ``recipes/<name>.yaml`` (what each is and was measured to do: docs/training.md, "Recipes"). Any field can
be overridden with :func:`get_profile`'s ``overrides`` (a nested dict, deep-merged, then validated again).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from tasks.errors import InputError
from tasks.registry import Registry

SMOLLM2 = "smollm2-135m-instruct"
"""Sentinel model name: the local safetensors conversion from ``tasks.llm.smollm2_weights.convert()``."""


_BF16_CPU_FLAGS = ("avx512_bf16", "amx_bf16")


def cpu_has_native_bf16() -> bool:
    """Whether the CPU does bf16 arithmetic itself (AVX512-BF16 or AMX); elsewhere torch emulates it."""
    try:
        flags = Path("/proc/cpuinfo").read_text().split()
    except OSError:
        return False
    return any(f in flags for f in _BF16_CPU_FLAGS)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LoraSettings(_Strict):
    enabled: bool = True
    """False: full fine-tuning, every parameter trained (CLARITI's public code has no LoRA, clariti.md §6.4); the
    output folder ``adapter/`` then holds a whole model. The params key ``training.lora``, when set, overrides it."""
    r: int = Field(default=8, ge=1)
    alpha: int = Field(default=16, ge=1)
    dropout: float = Field(default=0.05, ge=0.0, lt=1.0)
    target_modules: list[str] = Field(default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"], min_length=1)


class SFTSettings(_Strict):
    max_steps: int = Field(default=12, ge=1)
    """12, not 20: on the 30 held-out cases the 12-step SFT scored 0.424 against the 20-step one's 0.354 (paired
    +0.071 [-0.083, +0.217], benchmarks/results/grpo_long/heldout_greedy.json): no worse, and 8 CPU steps shorter."""
    batch_size: int = Field(default=4, ge=1)
    gradient_accumulation_steps: int = Field(default=1, ge=1)
    learning_rate: float = Field(default=1e-3, gt=0)
    """1e-3 teaches SmolLM2-135M the numbered-question format within a few dozen CPU steps (2e-4 did not in 20)."""
    max_length: int = Field(default=384, ge=8)
    warmup_steps: int = Field(default=0, ge=0)
    logging_steps: int = Field(default=1, ge=1)


class GRPOSettings(_Strict):
    update: Literal["trl_grpo", "reference_reinforce"] = "trl_grpo"
    """``trl_grpo``: TRL's GRPOTrainer; ``reference_reinforce``: CLARITI's public update, REINFORCE with a
    group-mean baseline and the KL folded into the reward (tasks/training/reinforce.py). The params key
    ``training.grpo_update``, when set, overrides it."""
    prompts: int | None = Field(default=16, ge=1)
    """Training prompts drawn (deterministically) from data/sft/train.jsonl; None: all of them. The params key
    ``training.grpo_prompts``, when set, overrides it."""
    max_steps: int = Field(default=2, ge=1)
    """2 in the default run: it exercises the whole GRPO path in about a minute; 6 steps took 11 minutes there and left
    the held-out reward lower (0.354 -> 0.335); the learning runs are the profiles ``grpo-long`` and ``cpu-long``."""
    batch_size: int = Field(default=4, ge=1)
    """Completions per device per step (TRL's ``per_device_train_batch_size``); prompts = batch / G."""
    gradient_accumulation_steps: int = Field(default=1, ge=1)
    num_generations: int = Field(default=4, ge=2)
    max_completion_length: int = Field(default=64, ge=1)
    max_prompt_tokens: int | None = Field(default=1024, ge=8)
    """Prompts are cut to this many tokens before training (TRL 1.16 has no ``max_prompt_length``)."""
    temperature: float = Field(default=0.9, gt=0)
    top_p: float = Field(default=0.9, gt=0, le=1)
    learning_rate: float = Field(default=5e-5, gt=0)
    beta: float = Field(default=0.05, ge=0)
    """KL coefficient against the base model (the adapter switched off); 0 loads no reference."""
    loss_type: Literal["grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo", "luspo", "vespo"] = "grpo"
    scale_rewards: Literal["group", "batch", "none"] = "none"
    """CLARITI's update subtracts the group mean and does not divide by the std: ``none``."""
    reward_as_evaluated: bool = False
    """Train on the staged reward as the held-out curve and evaluate@swe score it (each completion alone: no sibling
    completions, no diversity cache) instead of the public code's group-relative diversity."""
    reward_weights: dict[str, float] | None = None
    """Weight per reward function name; ``None`` weights all 1. Weight 0 = logged but not in the advantage."""
    use_vllm: bool = False
    vllm_mode: Literal["colocate", "server"] = "colocate"
    vllm_gpu_memory_utilization: float = Field(default=0.3, gt=0, le=1)
    warmup_steps: int = Field(default=0, ge=0)
    logging_steps: int = Field(default=1, ge=1)

    @model_validator(mode="after")
    def _divisible(self) -> GRPOSettings:
        if (self.batch_size * self.gradient_accumulation_steps) % self.num_generations:
            raise ValueError(
                f"batch_size x gradient_accumulation_steps ({self.batch_size} x {self.gradient_accumulation_steps}) "
                f"must be divisible by num_generations ({self.num_generations})"
            )
        return self


class AccelerateSettings(_Strict):
    num_processes: int = Field(default=1, ge=1)
    num_machines: int = Field(default=1, ge=1)
    gpu_ids: str = "all"
    mixed_precision: Literal["no", "bf16"] | None = None
    """None follows the profile's ``bf16``; a value that contradicts it is refused."""


class TrainProfile(_Strict):
    name: str
    model: str = SMOLLM2
    """A hub name or a local folder; ``smollm2-135m-instruct`` means the embedded SmolLM2 conversion."""
    requires_gpu: bool = False
    """Refuse to load the model without CUDA (an 8B model on two CPU cores is never intended)."""
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    use_cpu: bool = True
    bf16: bool | Literal["auto"] = False
    """bf16 mixed precision (fp32 weights, bf16 autocast). ``auto`` (the ``cpu`` recipe) resolves when the profile
    is built: on for a CPU with native bf16 arithmetic (AVX512-BF16 or AMX; an SFT step 7.6 s against 9.6 s in fp32
    on 2 cores, the same final loss to 3 digits: docs/setup.md, "Precision"), off on one without, where torch emulates
    bf16 and is slower than fp32; on without ``use_cpu``."""
    gradient_checkpointing: bool = False
    seed: int = 0
    chat_template_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Passed to ``apply_chat_template`` (Qwen3: ``enable_thinking: false``)."""
    lora: LoraSettings = Field(default_factory=LoraSettings)
    sft: SFTSettings = Field(default_factory=SFTSettings)
    grpo: GRPOSettings = Field(default_factory=GRPOSettings)
    accelerate: AccelerateSettings | None = None

    @model_validator(mode="after")
    def _consistent(self) -> TrainProfile:
        if self.bf16 == "auto":
            self.bf16 = cpu_has_native_bf16() if self.use_cpu else True
        if self.grpo.update == "reference_reinforce" and self.grpo.use_vllm:
            raise ValueError("grpo.update reference_reinforce samples with transformers' generate: use_vllm false")
        if self.use_cpu and self.grpo.use_vllm:
            raise ValueError("use_cpu=True excludes use_vllm")
        if self.bf16 and self.dtype == "float16":
            raise ValueError("bf16=True needs dtype bfloat16 or float32, not float16")
        precision = self.accelerate.mixed_precision if self.accelerate else None
        if precision is not None and precision != ("bf16" if self.bf16 else "no"):
            raise ValueError(f"accelerate.mixed_precision {precision!r} contradicts bf16={self.bf16}")
        return self


RECIPES = Path(__file__).resolve().parents[2] / "recipes"
"""The training recipes, one YAML file each (``recipes/<name>.yaml``): the fields a profile sets over
:class:`TrainProfile`'s defaults."""


def _load_recipes() -> None:
    for path in sorted(RECIPES.glob("*.yaml")):
        recipe = yaml.safe_load(path.read_text()) or {}
        if recipe.get("name") != path.stem:
            raise InputError(path, f"a recipe's name must be its file name ({path.stem!r})", field="name")
        try:
            TrainProfile.model_validate(recipe)
        except ValidationError as err:
            first = err.errors()[0]
            raise InputError(path, first["msg"], field=".".join(str(p) for p in first["loc"]) or None) from None
        PROFILES.add(path.stem, recipe)


PROFILES: Registry[dict[str, Any]] = Registry("training profile", discover=_load_recipes)
"""Profile name -> its recipe, read from :data:`RECIPES` on the first lookup."""


def _deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict) and key not in ("reward_weights",):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def get_profile(name: str = "cpu", overrides: dict[str, Any] | None = None, *, source: str = "profile",
                field_prefix: str = "") -> TrainProfile:
    """The named recipe with ``overrides`` deep-merged in. Errors name ``source`` (the file) and the field as
    ``<field_prefix>profile`` or ``<field_prefix>overrides.<key>`` (``training.`` when they come from params.yaml)."""
    if name not in PROFILES:
        raise InputError(source, f"unknown training profile {name!r}: no recipes/{name}.yaml (known: "
                                 f"{', '.join(PROFILES)})", field=f"{field_prefix}profile")
    data = _deep_merge(TrainProfile(**PROFILES.get(name)).model_dump(), overrides or {})
    try:
        return TrainProfile.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise InputError(source, first["msg"], field=f"{field_prefix}overrides.{field}" if field else None) from None


def accelerate_config(profile: TrainProfile) -> dict[str, Any]:
    """The ``accelerate launch --config_file`` contents for a profile (DDP when more than one process)."""
    acc = profile.accelerate or AccelerateSettings()
    multi = acc.num_processes * acc.num_machines > 1
    return {
        "compute_environment": "LOCAL_MACHINE",
        "debug": False,
        "distributed_type": ("MULTI_CPU" if profile.use_cpu else "MULTI_GPU") if multi else "NO",
        "downcast_bf16": "no",
        "enable_cpu_affinity": False,
        "gpu_ids": acc.gpu_ids,
        "machine_rank": 0,
        "main_training_function": "main",
        "mixed_precision": acc.mixed_precision or ("bf16" if profile.bf16 else "no"),
        "num_machines": acc.num_machines,
        "num_processes": acc.num_processes,
        "rdzv_backend": "static",
        "same_network": True,
        "tpu_env": [],
        "tpu_use_cluster": False,
        "tpu_use_sudo": False,
        "use_cpu": profile.use_cpu,
    }


def accelerate_config_text(profile: TrainProfile) -> str:
    return yaml.safe_dump(accelerate_config(profile), sort_keys=True)

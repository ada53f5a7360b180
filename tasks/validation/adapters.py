"""Gate on a trained LoRA adapter folder (``data/models/{sft,grpo}/adapter``), run on the staging folder before
it is published: the adapter config matches the profile, the weights file is real, and (cpu profile) the base plus
the adapter loads and generates a few tokens."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from tasks.errors import GateError

MIN_WEIGHTS_BYTES = 1024
"""Below this the safetensors file cannot hold one LoRA pair of any real model."""
SMOKE_PROMPT = "The export command crashes when the output folder has a space in its name."


class AdapterConfig(BaseModel):
    """The ``adapter_config.json`` fields the gate checks (PEFT writes many more)."""

    model_config = ConfigDict(extra="allow")

    peft_type: str
    r: int
    lora_alpha: int
    target_modules: list[str]
    base_model_name_or_path: str


def check_adapter(adapter_dir: Path, *, base_model: str | set[str], r: int, lora_alpha: int,
                  target_modules: list[str], artifact: str) -> AdapterConfig:
    """GateError naming ``artifact`` unless the config matches and ``adapter_model.safetensors`` holds finite LoRA
    A/B tensors."""
    adapter_dir = Path(adapter_dir)
    config_path = adapter_dir / "adapter_config.json"
    if not config_path.is_file():
        raise GateError(artifact, "adapter_config.json missing")
    try:
        config = AdapterConfig.model_validate(json.loads(config_path.read_text(encoding="utf-8")))
    except (ValueError, ValidationError) as err:
        raise GateError(artifact, f"adapter_config.json unreadable: {_first_line(err)}") from None
    bases = {base_model} if isinstance(base_model, str) else set(base_model)
    expected = {"peft_type": ("LORA", config.peft_type), "r": (r, config.r),
                "lora_alpha": (lora_alpha, config.lora_alpha),
                "target_modules": (sorted(target_modules), sorted(config.target_modules))}
    for key, (want, got) in expected.items():
        if want != got:
            raise GateError(artifact, f"adapter_config.json: {key} is {got!r}, expected {want!r}")
    if config.base_model_name_or_path not in bases:
        wanted = " or ".join(map(repr, sorted(bases)))
        raise GateError(artifact, f"adapter_config.json: base_model_name_or_path is "
                                  f"{config.base_model_name_or_path!r}, expected {wanted}")
    _check_weights(adapter_dir / "adapter_model.safetensors", artifact)
    return config


def _check_weights(path: Path, artifact: str) -> None:
    if not path.is_file():
        raise GateError(artifact, "adapter_model.safetensors missing")
    size = path.stat().st_size
    if size < MIN_WEIGHTS_BYTES:
        raise GateError(artifact, f"adapter_model.safetensors is {size} bytes (expected at least {MIN_WEIGHTS_BYTES})")
    from safetensors.torch import load_file

    try:
        tensors = load_file(str(path))
    except Exception as err:  # noqa: BLE001 - safetensors raises its own error types for a garbled file
        raise GateError(artifact, f"adapter_model.safetensors unreadable: {_first_line(err)}") from None
    kinds = {"lora_A": 0, "lora_B": 0}
    for name, tensor in tensors.items():
        for kind in kinds:
            kinds[kind] += kind in name
        if not bool(tensor.float().isfinite().all()):
            raise GateError(artifact, f"adapter_model.safetensors: tensor {name} has non-finite values")
    if not all(kinds.values()):
        raise GateError(artifact, f"adapter_model.safetensors holds no LoRA A/B pair ({len(tensors)} tensors)")


def check_full_model(folder: Path, *, artifact: str) -> None:
    """GateError naming ``artifact`` unless ``folder`` holds a model config and finite safetensors weights."""
    folder = Path(folder)
    if not (folder / "config.json").is_file():
        raise GateError(artifact, "config.json missing (full fine-tuning writes a whole model)")
    files = sorted(folder.glob("model*.safetensors"))
    if not files:
        raise GateError(artifact, "model.safetensors missing")
    from safetensors.torch import load_file

    for path in files:
        try:
            tensors = load_file(str(path))
        except Exception as err:  # noqa: BLE001 - safetensors raises its own error types for a garbled file
            raise GateError(artifact, f"{path.name} unreadable: {_first_line(err)}") from None
        for name, tensor in tensors.items():
            if not bool(tensor.float().isfinite().all()):
                raise GateError(artifact, f"{path.name}: tensor {name} has non-finite values")


def smoke_generate(adapter_dir: Path, base: Any, *, artifact: str, tokenizer: Any | None = None,
                   max_new_tokens: int = 4) -> str:
    """Load ``base`` + the adapter (stacked ones first), generate a few greedy tokens from one prompt; GateError on
    a load failure or an empty answer. Returns the answer."""
    from tasks.training.policy import LocalPolicy

    try:
        policy = LocalPolicy.from_adapter(base, adapter_dir, tokenizer=tokenizer, device=None, merge=False,
                                          max_new_tokens=max_new_tokens)
        answer = policy.ask(SMOKE_PROMPT)
    except Exception as err:  # noqa: BLE001 - whatever PEFT or transformers raise: it does not load or run
        raise GateError(artifact, f"load-and-generate smoke check failed: {_first_line(err)}") from None
    if not answer.strip():
        raise GateError(artifact, f"load-and-generate smoke check: empty output after {max_new_tokens} new tokens")
    return answer


def adapter_gate(profile: Any, artifact: str) -> Callable[[Path], None]:
    """The check a trainer runs on its staging folder before publishing (``check=``): config and weights for every
    profile, the smoke generation on a CPU profile only (it loads the base model once more)."""
    from tasks.training.artifacts import ADAPTER_DIR
    from tasks.training.models import model_label

    def check(staging: Path) -> None:
        adapter = Path(staging) / ADAPTER_DIR
        if not profile.lora.enabled:  # full fine-tuning: a whole model, loaded on its own
            check_full_model(adapter, artifact=artifact)
            if profile.use_cpu:
                smoke_generate(adapter, None, artifact=artifact)
            return
        check_adapter(adapter, base_model={profile.model, model_label(profile.model)}, r=profile.lora.r,
                      lora_alpha=profile.lora.alpha, target_modules=list(profile.lora.target_modules),
                      artifact=artifact)
        if profile.use_cpu:
            smoke_generate(adapter, profile.model, artifact=artifact)

    return check


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0][:200] if text else type(err).__name__

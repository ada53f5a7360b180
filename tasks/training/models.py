"""Loading a base model and tokenizer for a profile (lazy imports; the 8B model only where CUDA exists)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from tasks.errors import InputError
from tasks.llm.loading import MODEL_LOAD_LOCK

from .profiles import SMOLLM2, TrainProfile


def resolve_model_path(model: str | Path) -> str:
    """A loadable name or folder: the SmolLM2 sentinel becomes its local conversion (converted on first use)."""
    if str(model) == SMOLLM2:
        from tasks.llm.smollm2_weights import convert

        return str(convert())
    return str(model)


def model_label(model: Any) -> str:
    """A stable, machine-independent name for model cards."""
    if isinstance(model, (str, Path)):
        text = str(model)
        if text == SMOLLM2 or Path(text).name.startswith(SMOLLM2):
            return "HuggingFaceTB/SmolLM2-135M-Instruct (embedded GGUF, dequantised to fp32)"
        return Path(text).name if Path(text).exists() else text
    name = getattr(getattr(model, "config", None), "_name_or_path", "") or ""
    if name:
        return model_label(name)
    return f"in-memory {type(model).__name__}"


def _torch_dtype(name: str):
    import torch

    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[name]


_NVIDIA_DRIVER = ("/proc/driver/nvidia/version", "/dev/nvidiactl", "/dev/nvidia0")


def cuda_available() -> bool:
    """Whether torch can use a CUDA device. On Linux without an NVIDIA driver (or with ``CUDA_VISIBLE_DEVICES``
    empty or -1) the answer is "no" without importing torch, so a refusal costs nothing."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return False
    if sys.platform.startswith("linux") and not any(Path(p).exists() for p in _NVIDIA_DRIVER):
        return False
    import torch

    return bool(torch.cuda.is_available())


def inference_dtype(requested: str) -> str:
    """The dtype a policy generates in: ``auto`` is ``bfloat16`` on a CUDA device and ``float32`` on the CPU. On a CPU
    with native bf16, bf16 generates the held-out SWE answers 1.7x faster, but its greedy answers change with torch's
    thread count (28 of 30 the same on 1 and 2 threads) while float32's do not (30 of 30), and the thread count
    follows the machine's load (``tasks.training.threads``): ``benchmarks/policy_dtype.py``. Any other value is
    kept."""
    if requested != "auto":
        return requested
    return "bfloat16" if cuda_available() else "float32"


def check_device(profile: TrainProfile) -> None:
    """Refuse a ``requires_gpu`` profile without CUDA: one InputError, before the model is loaded."""
    if profile.requires_gpu and not cuda_available():
        raise InputError("profile", f"profile {profile.name!r} ({profile.model}) needs a CUDA device; none found",
                         field="requires_gpu")


def load_tokenizer(source: str | Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(resolve_model_path(source))


def prepare_tokenizer(tokenizer: Any) -> Any:
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if not getattr(tokenizer, "chat_template", None):
        raise InputError("tokenizer", "the tokenizer has no chat template", field="chat_template")
    return tokenizer


def align_model(model: Any, tokenizer: Any) -> Any:
    """Make the model's pad/eos ids agree with the tokenizer's, so ``generate`` stops and pads correctly."""
    model.config.pad_token_id = tokenizer.pad_token_id
    gen = getattr(model, "generation_config", None)
    if gen is not None:
        gen.pad_token_id = tokenizer.pad_token_id
        if gen.eos_token_id is None:
            gen.eos_token_id = tokenizer.eos_token_id
    return model


def load_base(model: Any, tokenizer: Any | None, profile: TrainProfile) -> tuple[Any, Any, str]:
    """``(model, tokenizer, label)`` from a name, a folder or an already built model (used as is, not copied)."""
    label = model_label(model)
    if isinstance(model, (str, Path)):
        check_device(profile)
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        from transformers import AutoModelForCausalLM

        path = resolve_model_path(model)
        tokenizer = tokenizer if tokenizer is not None else load_tokenizer(path)
        with MODEL_LOAD_LOCK:
            model = AutoModelForCausalLM.from_pretrained(path, dtype=_torch_dtype(profile.dtype))
    elif tokenizer is None:
        source = getattr(model.config, "_name_or_path", "")
        if not source:
            raise InputError("model", "an in-memory model needs its tokenizer passed explicitly", field="tokenizer")
        tokenizer = load_tokenizer(source)
    tokenizer = prepare_tokenizer(tokenizer)
    return align_model(model, tokenizer), tokenizer, label

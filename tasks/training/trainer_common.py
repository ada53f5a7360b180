"""What the TRL trainers and the reference REINFORCE update share: checking rows, reward names and weights, prompt
truncation, the LoRA config, and saving, describing and publishing a run's output folder."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tasks.errors import InputError
from tasks.store import atomic_write_json, publish_dir

from . import artifacts
from .artifacts import TrainResult
from .launch import is_main_process
from .profiles import SMOLLM2, TrainProfile, get_profile
from .prompts import completion_text

_TEMPLATE_MARGIN = 16
"""Tokens reserved for chat-template markup around a completion."""

RewardFunc = Callable[..., list[float | None]]


# ---------------------------------------------------------------- input checks


def _is_messages(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(
        isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str) for m in value
    )


def _is_text_or_messages(value: Any) -> bool:
    return (isinstance(value, str) and bool(value.strip())) or _is_messages(value)


def check_sft_rows(rows: Sequence[Mapping[str, Any]], source: str = "dataset_rows") -> list[dict[str, Any]]:
    """Rows are all ``{"messages": [...]}`` or all ``{"prompt": ..., "completion": ...}`` (text or messages)."""
    rows = [dict(r) for r in rows]
    if not rows:
        raise InputError(source, "no training rows")
    conversational = "messages" in rows[0]
    for i, row in enumerate(rows):
        if conversational:
            if not _is_messages(row.get("messages")):
                raise InputError(source, "expected a non-empty list of {role, content} messages", record=i,
                                 field="messages")
        else:
            for key in ("prompt", "completion"):
                if not _is_text_or_messages(row.get(key)):
                    raise InputError(source, "expected non-empty text or a list of {role, content} messages",
                                     record=i, field=key)
    return rows


def check_grpo_rows(rows: Sequence[Mapping[str, Any]], source: str = "dataset_rows") -> list[dict[str, Any]]:
    rows = [dict(r) for r in rows]
    if not rows:
        raise InputError(source, "no training rows")
    columns = set(rows[0])
    for i, row in enumerate(rows):
        if not _is_text_or_messages(row.get("prompt")):
            raise InputError(source, "expected non-empty text or a list of {role, content} messages", record=i,
                             field="prompt")
        if set(row) != columns:
            raise InputError(source, f"columns {sorted(row)} differ from the first row's {sorted(columns)}", record=i)
    return rows


def reward_name(func: Callable) -> str:
    """The name TRL logs a reward function under (``rewards/<name>/mean``)."""
    from trl.trainer.utils import get_callable_name

    return get_callable_name(func)


def resolve_reward_weights(
    names: list[str], weights: Mapping[str, float] | Sequence[float] | None, source: str = "reward_weights"
) -> list[float]:
    """Weights in ``names`` order. A mapping must name every function (0 = logged only, not in the advantage)."""
    if len(set(names)) != len(names):
        raise InputError(source, f"reward functions need distinct names, got {names}")
    if weights is None:
        resolved = [1.0] * len(names)
    elif isinstance(weights, Mapping):
        missing, unknown = set(names) - set(weights), set(weights) - set(names)
        if missing or unknown:
            raise InputError(source, f"weights must name exactly the reward functions {names}; "
                                     f"missing {sorted(missing)}, unknown {sorted(unknown)}")
        resolved = [float(weights[n]) for n in names]
    else:
        resolved = [float(w) for w in weights]
        if len(resolved) != len(names):
            raise InputError(source, f"{len(resolved)} weights for {len(names)} reward functions")
    if not any(resolved):
        raise InputError(source, "all reward weights are 0: nothing would drive the advantage")
    return resolved


def truncate_prompt(prompt: Any, tokenizer: Any, max_tokens: int, chat_kwargs: Mapping[str, Any]) -> Any:
    """Cut the last message's text (or the text prompt) so the rendered prompt fits ``max_tokens``."""
    if isinstance(prompt, str):
        ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        return prompt if len(ids) <= max_tokens else tokenizer.decode(ids[:max_tokens])
    excess = _prompt_tokens(prompt, tokenizer, chat_kwargs) - max_tokens
    if excess <= 0:
        return prompt
    content_ids = tokenizer(prompt[-1]["content"], add_special_tokens=False)["input_ids"]
    keep = max(len(content_ids) - excess, 1)
    return [*prompt[:-1], {**prompt[-1], "content": tokenizer.decode(content_ids[:keep])}]


def fit_sft_rows(rows: list[dict[str, Any]], tokenizer: Any, max_length: int,
                 chat_kwargs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Shorten prompts so prompt + completion fit ``max_length``; TRL would otherwise cut the completion away and
    drop the row (completion-only loss), or fail when every row is dropped."""
    if "messages" in rows[0]:
        return rows
    fitted, fits = [], 0
    for row in rows:
        completion = completion_text(row["completion"])
        needed = len(tokenizer(completion, add_special_tokens=False)["input_ids"]) + _TEMPLATE_MARGIN
        budget = max(max_length - needed, _TEMPLATE_MARGIN)
        prompt = truncate_prompt(row["prompt"], tokenizer, budget, chat_kwargs)
        fits += _prompt_tokens(prompt, tokenizer, chat_kwargs) < max_length - 1
        fitted.append({**row, "prompt": prompt})
    if not fits:
        raise InputError("profile", f"max_length {max_length} leaves no room for any completion after its prompt "
                                    "(the system prompt alone may be too long)", field="sft.max_length")
    return fitted


def _prompt_tokens(prompt: Any, tokenizer: Any, chat_kwargs: Mapping[str, Any]) -> int:
    if not isinstance(prompt, str):
        prompt = tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True, **chat_kwargs)
    return len(tokenizer(prompt, add_special_tokens=False)["input_ids"])


# ---------------------------------------------------------------- shared pieces


def _profile(profile: TrainProfile | str | None) -> TrainProfile:
    if profile is None:
        return get_profile("cpu")
    return get_profile(profile) if isinstance(profile, str) else profile


def _lora_config(profile: TrainProfile):
    from peft import LoraConfig

    return LoraConfig(r=profile.lora.r, lora_alpha=profile.lora.alpha, lora_dropout=profile.lora.dropout,
                      target_modules=list(profile.lora.target_modules), bias="none", task_type="CAUSAL_LM")


def _common_args(profile: TrainProfile, output_dir: str) -> dict[str, Any]:
    return {
        "output_dir": output_dir,
        "save_strategy": "no",
        "report_to": "none",
        "use_cpu": profile.use_cpu,
        "bf16": profile.bf16,
        "seed": profile.seed,
        "data_seed": profile.seed,
        # TRL's configs default the deprecated ``gradient_checkpointing`` alias to True; set the new name explicitly.
        "activation_checkpointing": profile.gradient_checkpointing,
        "disable_tqdm": True,
        "dataloader_num_workers": 0,
    }


def _model_source(model: Any) -> str | None:
    """What to record as the adapter's base: the name or sentinel as given, never a machine-local path."""
    if isinstance(model, (str, Path)) and (str(model) == SMOLLM2 or not Path(str(model)).exists()):
        return str(model)
    return None


def _save_adapter(trainer: Any, tokenizer: Any, folder: Path, base_source: str | None, label: str) -> None:
    if not hasattr(trainer.model, "peft_config"):  # full fine-tuning (lora.enabled false): the whole model
        trainer.model.save_pretrained(str(folder))
        tokenizer.save_pretrained(str(folder))
        return
    trainer.model.save_pretrained(str(folder), save_embedding_layers=False)
    tokenizer.save_pretrained(str(folder))
    (folder / "README.md").unlink(missing_ok=True)  # PEFT's generic card; ours sits one level up
    # PEFT keeps target_modules as a set (order varies per process) and records a machine-local base path.
    config_path = folder / "adapter_config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config["base_model_name_or_path"] = base_source or label
    if isinstance(config.get("target_modules"), list):
        config["target_modules"] = sorted(config["target_modules"])
    atomic_write_json(config_path, config)


def _trainable(model: Any) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def _run(trainer: Any) -> float:
    start = time.perf_counter()
    trainer.train()
    return time.perf_counter() - start


def _state(trainer: Any) -> dict[str, Any]:
    state = dataclasses.asdict(trainer.state)
    for key in ("log_history", "stateful_callbacks", "trial_params"):
        state.pop(key, None)
    return json.loads(json.dumps(state, default=str))


def _finish(
    trainer: Any, tokenizer: Any, staging: Path, out_dir: Path, *, kind: str, model: Any, label: str,
    profile: TrainProfile, n_rows: int, seconds: float, reward_names: list[str], weights: list[float],
    records: Mapping[str, Any] | None = None,
) -> TrainResult:
    history = artifacts.clean_log_history(trainer.state.log_history)
    steps = int(trainer.state.global_step)
    main = is_main_process()  # in a multi-process launch only rank 0 writes
    if main:
        _save_adapter(trainer, tokenizer, staging / artifacts.ADAPTER_DIR, _model_source(model), label)
        artifacts.write_logs(staging, _state(trainer), history)
        for name, record in (records or {}).items():  # published with the adapter, never without it
            atomic_write_json(staging / name, record)
    plots = artifacts.write_plots(staging, history, reward_names) if main else []
    final_rewards = {n: v for n in reward_names if (v := artifacts.last(history, f"rewards/{n}/mean")) is not None}
    if reward_names and (total := artifacts.last(history, "reward")) is not None:
        final_rewards["reward"] = total
    result = TrainResult(
        kind=kind, out_dir=out_dir, adapter_dir=out_dir / artifacts.ADAPTER_DIR, base_model=label,
        profile=profile.name, n_rows=n_rows, steps=steps, final_loss=artifacts.last(history, "loss"),
        final_rewards=final_rewards, reward_weights=dict(zip(reward_names, weights, strict=True)),
        trainable_params=_trainable(trainer.model), plots=[out_dir / p.name for p in plots], seconds=seconds,
        seconds_per_step=seconds / max(steps, 1),
    )
    if main:
        artifacts.write_card(staging, result, profile, len(history))
    return result


def _publish(staging: Path, out_dir: Path, check: Callable[[Path], None] | None) -> None:
    """Rank 0 checks the staged run (``check``) and publishes it to ``out_dir``; other ranks publish nothing."""
    if is_main_process():
        if check is not None:
            check(staging)
        publish_dir(staging, out_dir)


# ---------------------------------------------------------------- trainers

"""SFT and GRPO with TRL + PEFT LoRA; each run publishes one output folder atomically.

Output folder (both): ``adapter/`` (LoRA weights, adapter config, tokenizer), ``log_history.json`` (no wall-clock
fields), ``trainer_state.json``, ``timing.json``, ``README.md`` (model card) and ``loss.png``; GRPO adds
``rewards.png`` with every ``rewards/<name>/mean`` over steps.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tasks.errors import InputError
from tasks.store import staged_dir

from .artifacts import TrainResult
from .launch import is_main_process
from .models import load_base
from .profiles import TrainProfile
from .progress import progress_callback
from .threads import step_threads_callback
from .trainer_common import (  # noqa: F401 - re-exported: the trainers' helpers live beside both updates
    _TEMPLATE_MARGIN,
    RewardFunc,
    _common_args,
    _finish,
    _is_messages,
    _is_text_or_messages,
    _lora_config,
    _model_source,
    _profile,
    _prompt_tokens,
    _publish,
    _run,
    _save_adapter,
    _state,
    _trainable,
    check_grpo_rows,
    check_sft_rows,
    fit_sft_rows,
    resolve_reward_weights,
    reward_name,
    truncate_prompt,
)


def train_sft(
    model_path_or_model: Any,
    tokenizer: Any | None,
    dataset_rows: Sequence[Mapping[str, Any]],
    profile: TrainProfile | str | None = None,
    out_dir: Path | str = "sft",
    records: Mapping[str, Any] | None = None,
    check: Callable[[Path], None] | None = None,
) -> TrainResult:
    """LoRA SFT on conversational (``messages``) or prompt/completion rows; publishes ``out_dir`` atomically.

    ``records``: file name -> JSON written into ``out_dir`` with the adapter (e.g. the training source ids).
    ``check``: called with the filled staging folder before it is published (a validation gate); if it raises,
    ``out_dir`` keeps its previous contents.

    ``model_path_or_model``: a hub name, a folder, ``"smollm2-135m-instruct"`` or a built model (wrapped in place).
    """
    profile, out_dir = _profile(profile), Path(out_dir)
    rows = check_sft_rows(dataset_rows)
    if profile.chat_template_kwargs:
        rows = [{**r, "chat_template_kwargs": dict(profile.chat_template_kwargs)} for r in rows]
    from datasets import Dataset
    from transformers import set_seed
    from trl import SFTConfig, SFTTrainer

    model, tokenizer, label = load_base(model_path_or_model, tokenizer, profile)
    s = profile.sft
    rows = fit_sft_rows(rows, tokenizer, s.max_length, profile.chat_template_kwargs)
    with staged_dir(out_dir) as staging, tempfile.TemporaryDirectory(prefix="sft-trainer-") as scratch:
        set_seed(profile.seed)
        args = SFTConfig(
            **_common_args(profile, scratch), max_steps=s.max_steps, per_device_train_batch_size=s.batch_size,
            gradient_accumulation_steps=s.gradient_accumulation_steps, learning_rate=s.learning_rate,
            max_length=s.max_length, warmup_steps=s.warmup_steps, logging_steps=s.logging_steps,
        )
        trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_list(rows),
                             processing_class=tokenizer,
                             peft_config=_lora_config(profile) if profile.lora.enabled else None,
                             callbacks=[progress_callback("sft"), step_threads_callback()])
        seconds = _run(trainer)
        result = _finish(trainer, tokenizer, staging, out_dir, kind="sft", model=model_path_or_model, label=label,
                         profile=profile, n_rows=len(rows), seconds=seconds, reward_names=[], weights=[],
                         records=records)
        _publish(staging, out_dir, check)
    return result


def train_grpo(
    model_path_or_model: Any,
    tokenizer: Any | None,
    dataset_rows: Sequence[Mapping[str, Any]],
    reward_funcs: Sequence[RewardFunc],
    profile: TrainProfile | str | None = None,
    out_dir: Path | str = "grpo",
    reward_weights: Mapping[str, float] | Sequence[float] | None = None,
    records: Mapping[str, Any] | None = None,
    check: Callable[[Path], None] | None = None,
    heldout: Any | None = None,
) -> TrainResult:
    """GRPO (LoRA; every weight with ``lora.enabled`` false); each reward function is logged as
    ``rewards/<__name__>/mean``.

    Rows carry ``prompt`` (text or messages) plus any extra columns, which reach each reward function as keyword
    lists aligned with the completions: ``f(prompts=, completions=, completion_ids=, **columns, trainer_state=,
    log_extra=, log_metric=)`` must return one float (or ``None``) per completion. ``reward_weights`` (else the
    profile's) sets each function's share of the advantage, e.g. 0 for the per-stage rewards and 1 for the gated
    total: zero-weight functions are still computed and logged. ``records`` and ``check`` as for :func:`train_sft`.
    ``heldout``: a :func:`tasks.training.heldout.heldout_callback`; its curve is published with the adapter
    (``heldout_curve.json``, ``heldout.png``). ``grpo.update: reference_reinforce`` trains with CLARITI's update
    (:func:`tasks.training.reinforce.train_reinforce`) instead of TRL's GRPOTrainer, same inputs and output files.
    """
    profile, out_dir = _profile(profile), Path(out_dir)
    rows = check_grpo_rows(dataset_rows)
    funcs = list(reward_funcs)
    if not funcs:
        raise InputError("reward_funcs", "at least one reward function is needed")
    names = [reward_name(f) for f in funcs]
    weights = resolve_reward_weights(
        names, reward_weights if reward_weights is not None else profile.grpo.reward_weights)
    if profile.grpo.update == "reference_reinforce":
        from .reinforce import train_reinforce

        return train_reinforce(model_path_or_model, tokenizer, rows, funcs, profile, out_dir, names=names,
                               weights=weights, records=records, check=check, heldout=heldout)
    from datasets import Dataset
    from transformers import set_seed
    from trl import GRPOConfig, GRPOTrainer

    model, tokenizer, label = load_base(model_path_or_model, tokenizer, profile)
    g = profile.grpo
    if g.max_prompt_tokens is not None:
        rows = [{**r, "prompt": truncate_prompt(r["prompt"], tokenizer, g.max_prompt_tokens,
                                                  profile.chat_template_kwargs)} for r in rows]
    vllm = ({"vllm_mode": g.vllm_mode, "vllm_gpu_memory_utilization": g.vllm_gpu_memory_utilization}
            if g.use_vllm else {})
    with staged_dir(out_dir) as staging, tempfile.TemporaryDirectory(prefix="grpo-trainer-") as scratch:
        set_seed(profile.seed)
        args = GRPOConfig(
            **_common_args(profile, scratch), max_steps=g.max_steps, per_device_train_batch_size=g.batch_size,
            gradient_accumulation_steps=g.gradient_accumulation_steps, num_generations=g.num_generations,
            max_completion_length=g.max_completion_length, temperature=g.temperature, top_p=g.top_p,
            learning_rate=g.learning_rate, beta=g.beta, loss_type=g.loss_type, scale_rewards=g.scale_rewards,
            reward_weights=weights, use_vllm=g.use_vllm, warmup_steps=g.warmup_steps, logging_steps=g.logging_steps,
            chat_template_kwargs=dict(profile.chat_template_kwargs) or None, log_completions=False, **vllm,
        )
        trainer = _sampling_on_free_cores(GRPOTrainer)(
            model=model, reward_funcs=funcs, args=args, train_dataset=Dataset.from_list(rows),
            processing_class=tokenizer, peft_config=_lora_config(profile) if profile.lora.enabled else None,
            callbacks=[progress_callback("grpo"), step_threads_callback(),
                       *([heldout] if heldout is not None else [])])
        seconds = _run(trainer)
        if heldout is not None and is_main_process():
            from .heldout import write_curve

            write_curve(staging, heldout.curve)
        result = _finish(trainer, tokenizer, staging, out_dir, kind="grpo", model=model_path_or_model, label=label,
                         profile=profile, n_rows=len(rows), seconds=seconds, reward_names=names, weights=weights,
                         records=records)
        _publish(staging, out_dir, check)
    return result


def _sampling_on_free_cores(trainer_class: type) -> type:
    """``trainer_class`` (TRL's GRPOTrainer) whose sampling runs as a generation phase of its own, on the cores free
    when it starts (:func:`tasks.training.threads.generation_threads`), while the loss and the update keep the
    training threads. The sampled token ids decide the update, and they do not depend on the thread count (sampling
    draws from the seeded generator; only the last bits of the probabilities move), so the adapter is the same alone
    and beside a competing job; a CPU-bound competitor made a sampling phase on both cores 3x slower than on one
    (benchmarks/results/torch_threads/threads.json)."""
    from .threads import generation_threads, torch_threads

    class SamplingOnFreeCores(trainer_class):  # type: ignore[misc, valid-type]
        def _generate_single_turn(self, *args: Any, **kwargs: Any) -> Any:
            with torch_threads(generation_threads()):
                return super()._generate_single_turn(*args, **kwargs)

    return SamplingOnFreeCores

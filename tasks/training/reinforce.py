"""CLARITI's policy update as its public code runs it (clariti.md §6.3): REINFORCE with a group-mean baseline.

Per prompt, G completions are sampled; each gets the policy's and the frozen reference's sequence-mean token
log-probability (each clipped to [-15, 0]); the KL estimate ``kl_i = lp_policy_i - lp_ref_i`` is folded into the
reward, ``r~_i = r_i - beta * kl_i``; the advantage is ``A_i = r~_i - mean_j r~_j`` (no division by the std; the
reference's optional "max" baseline subtracts the group maximum instead); the loss is ``-mean_i(lp_policy_i * A_i)``
averaged over the prompts of the batch. AdamW (weight decay 0.01, eps 1e-8), a one-cycle schedule (warm-up steps,
div_factor 10, final_div_factor 100; :func:`one_cycle_factor`), gradient clipping at 1.0, gradient accumulation
(§6.4).

Selected by ``grpo.update: reference_reinforce``; ``lora.enabled: false`` trains every parameter, as the reference
does (the frozen reference is then a copy of the starting model; with LoRA it is the model with the adapter off).
As in the public code (``openhands/training/train.py``, read where clariti.md is silent): the advantage is not
detached, so the KL term carries gradient; the model stays in eval mode (no dropout) for sampling and for both
log-probabilities (except the policy's under ``gradient_checkpointing``, which needs train mode); a completion's
log-probability covers its text without the end token, and one without tokens counts ``EMPTY_LOGPROB`` (-8);
top-k is left to the model's generation config (only temperature and top-p are set). Where this departs from the
reference: one process (no Ray workers; the reference log-probabilities come from the adapter switched off, or a
frozen copy under full fine-tuning); prompts are rendered with the tokenizer's chat template and the project's
system prompt; a reward function's ``None`` counts 0 in the weighted sum (as TRL's nansum), where the reference's
judge falls back to neutral values itself.
The output folder has the same files as :func:`tasks.training.trainers.train_grpo`'s.
"""

from __future__ import annotations

import copy
import math
import random
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from tasks.errors import InputError
from tasks.store import staged_dir

from .profiles import TrainProfile

LOGPROB_FLOOR = -15.0
"""Sequence-mean log-probabilities are clipped to [LOGPROB_FLOOR, 0] (§6.3 step 2)."""
WEIGHT_DECAY = 0.01
ADAM_EPS = 1e-8
CLIP_NORM = 1.0
DIV_FACTOR = 10.0
FINAL_DIV_FACTOR = 100.0

Baseline = Literal["mean", "max"]


def group_advantages(rewards: Sequence[float], kl: Sequence[float], *, beta: float, group_size: int,
                     baseline: Baseline = "mean") -> list[float]:
    """``A_i = (r_i - beta*kl_i) - baseline_j(r_j - beta*kl_j)`` within consecutive groups of ``group_size``."""
    if len(rewards) != len(kl) or len(rewards) % group_size:
        raise ValueError(f"{len(rewards)} rewards, {len(kl)} KL values: not whole groups of {group_size}")
    penalised = [r - beta * k for r, k in zip(rewards, kl, strict=True)]
    advantages: list[float] = []
    for start in range(0, len(penalised), group_size):
        group = penalised[start:start + group_size]
        base = max(group) if baseline == "max" else sum(group) / len(group)
        advantages += [v - base for v in group]
    return advantages


def reinforce_loss(policy_logprobs: Any, rewards: Any, ref_logprobs: Any, *, beta: float, group_size: int,
                   baseline: Baseline = "mean") -> Any:
    """The reference's loss: per group ``-mean_i(lp_i * A_i)`` with ``A_i = r~_i - baseline(r~)``, ``r~ = r -
    beta*(lp - lp_ref)``, then the mean over groups. As in the public code the advantage is not detached: through
    its KL term it carries gradient too (the rewards and the reference log-probabilities carry none)."""
    import torch

    losses = []
    for start in range(0, policy_logprobs.shape[0], group_size):
        lp = policy_logprobs[start:start + group_size]
        penalised = rewards[start:start + group_size] - beta * (lp - ref_logprobs[start:start + group_size])
        base = penalised.max() if baseline == "max" else penalised.mean()
        losses.append(-(lp * (penalised - base)).mean())
    return torch.stack(losses).mean()


EMPTY_LOGPROB = -8.0
"""The public code's log-probability of a completion without tokens."""


def sequence_logprobs(model: Any, prompt_ids: Any, prompt_mask: Any, completion_ids: Any, completion_mask: Any) -> Any:
    """Mean token log-probability of each completion given its (left-padded) prompt, clipped to [-15, 0]; a
    completion without tokens gets ``EMPTY_LOGPROB``."""
    import torch

    ids = torch.cat([prompt_ids, completion_ids], dim=1)
    mask = torch.cat([prompt_mask, completion_mask], dim=1)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    logits = model(input_ids=ids, attention_mask=mask, position_ids=positions).logits
    logits = logits[:, prompt_ids.shape[1] - 1:-1].float()
    token_lp = torch.log_softmax(logits, dim=-1).gather(-1, completion_ids.unsqueeze(-1)).squeeze(-1)
    counts = completion_mask.sum(-1)
    mean = (token_lp * completion_mask).sum(-1) / counts.clamp(min=1)
    return torch.where(counts > 0, mean.clamp(LOGPROB_FLOOR, 0.0), torch.full_like(mean, EMPTY_LOGPROB))


def completion_mask(completion_ids: Any, eos_ids: Sequence[int]) -> Any:
    """1 before the first end-of-sequence token, 0 from it on: the reference scores the decoded text, which has no
    end token."""
    import torch

    is_eos = torch.isin(completion_ids, torch.tensor(list(eos_ids), device=completion_ids.device))
    return (is_eos.cumsum(-1) == 0).long()


def one_cycle_factor(step: int, *, steps: int, warmup: int) -> float:
    """The learning rate at optimiser step ``step`` (0-based) as a share of the peak: a cosine rise from 1/10 over
    ``warmup`` steps, then a cosine fall to 1/(10*100) at the last step (OneCycleLR's shape with div_factor 10,
    final_div_factor 100, computed here because torch's OneCycleLR divides by zero on runs of a few steps)."""
    first, last = 1.0 / DIV_FACTOR, 1.0 / (DIV_FACTOR * FINAL_DIV_FACTOR)
    if step < warmup:
        return first + (1.0 - first) * (1.0 - math.cos(math.pi * step / warmup)) / 2.0
    span = max(steps - 1 - warmup, 1)
    done = min(step - warmup, span) / span
    return last + (1.0 - last) * (1.0 + math.cos(math.pi * done)) / 2.0


def _schedule(optimizer: Any, steps: int, warmup: int) -> Any:
    import torch

    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: one_cycle_factor(s, steps=steps, warmup=warmup))


def _weighted(values: Sequence[Sequence[float | None]], weights: Sequence[float]) -> list[float]:
    return [sum(w * (v if v is not None else 0.0) for w, v in zip(weights, column, strict=True))
            for column in zip(*values, strict=True)]


def _mean(values: Sequence[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def train_reinforce(
    model_path_or_model: Any,
    tokenizer: Any | None,
    dataset_rows: Sequence[Mapping[str, Any]],
    reward_funcs: Sequence[Callable[..., list[float | None]]],
    profile: TrainProfile,
    out_dir: Path | str,
    *,
    names: list[str],
    weights: list[float],
    records: Mapping[str, Any] | None = None,
    check: Callable[[Path], None] | None = None,
    heldout: Any | None = None,
    baseline: Baseline = "mean",
) -> Any:
    """The reference update over ``dataset_rows`` (checked GRPO rows); called by ``train_grpo``, which resolves
    ``names`` and ``weights``. Rows are visited in a seeded shuffled order, one group of G per prompt."""
    import torch
    from transformers import TrainerState, set_seed

    from . import trainer_common as trainers
    from .launch import is_main_process
    from .models import load_base
    from .policy import eos_ids
    from .threads import generation_threads, torch_threads

    rows = [dict(r) for r in dataset_rows]
    g, out_dir = profile.grpo, Path(out_dir)
    if g.use_vllm:
        raise InputError("profile", "reference_reinforce samples with transformers' generate; set use_vllm false",
                         field="grpo.use_vllm")
    model, tokenizer, label = load_base(model_path_or_model, tokenizer, profile)
    if g.max_prompt_tokens is not None:
        rows = [{**r, "prompt": trainers.truncate_prompt(r["prompt"], tokenizer, g.max_prompt_tokens,
                                                         profile.chat_template_kwargs)} for r in rows]
    device = "cpu" if profile.use_cpu else "cuda"
    set_seed(profile.seed)
    model = model.to(device)
    reference = None
    if profile.lora.enabled:
        from peft import get_peft_model

        model = get_peft_model(model, trainers._lora_config(profile))
    else:
        model.requires_grad_(True)  # full fine-tuning trains every weight, also of a model loaded frozen for inference
        if g.beta > 0:
            reference = copy.deepcopy(model).eval().requires_grad_(False)
    if profile.gradient_checkpointing:  # recomputes activations; active in train mode only (below)
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.eval()  # no dropout: sampling and both log-probabilities see the same network
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=g.learning_rate, weight_decay=WEIGHT_DECAY, eps=ADAM_EPS)
    scheduler = _schedule(optimizer, g.max_steps, g.warmup_steps)
    stop = eos_ids(tokenizer, model)
    per_micro = g.batch_size // g.num_generations
    if per_micro < 1:
        raise InputError("profile", f"batch_size {g.batch_size} holds no whole group of {g.num_generations}",
                         field="grpo.batch_size")
    order = list(range(len(rows)))
    random.Random(profile.seed).shuffle(order)
    cursor = 0

    def next_rows() -> list[dict[str, Any]]:
        nonlocal cursor
        picked = [rows[order[(cursor + i) % len(order)]] for i in range(per_micro)]
        cursor += per_micro
        return picked

    def render(prompt: Any) -> str:
        if isinstance(prompt, str):
            return prompt
        return tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True,
                                             **profile.chat_template_kwargs)

    def ref_logprobs(*tensors: Any) -> Any:
        with torch.no_grad():
            if reference is not None:
                return sequence_logprobs(reference, *tensors)
            with model.disable_adapter():
                return sequence_logprobs(model, *tensors)

    state = TrainerState(max_steps=g.max_steps, logging_steps=g.logging_steps)
    callback_kwargs = {"model": model, "processing_class": tokenizer}
    with staged_dir(out_dir) as staging:
        start = time.perf_counter()
        if heldout is not None:
            heldout.on_train_begin(None, state, None, **callback_kwargs)
        for step in range(1, g.max_steps + 1):
            optimizer.zero_grad(set_to_none=True)
            logged: dict[str, list[float | None]] = {n: [] for n in names}
            totals, kls, losses, advantages = [], [], [], []
            for _ in range(g.gradient_accumulation_steps):
                batch = next_rows()
                prompts = [r["prompt"] for r in batch for _ in range(g.num_generations)]
                enc = tokenizer([render(p) for p in prompts], return_tensors="pt", padding=True,
                                padding_side="left", add_special_tokens=False).to(device)
                with torch.no_grad(), torch_threads(generation_threads()):  # sampling: the cores free now
                    out = model.generate(**enc, do_sample=True, temperature=g.temperature, top_p=g.top_p,
                                         max_new_tokens=g.max_completion_length,
                                         pad_token_id=tokenizer.pad_token_id)
                completion_ids = out[:, enc["input_ids"].shape[1]:]
                mask = completion_mask(completion_ids, stop)
                texts = tokenizer.batch_decode(completion_ids * mask + tokenizer.pad_token_id * (1 - mask),
                                               skip_special_tokens=True)
                completions = [[{"role": "assistant", "content": t}] if not isinstance(p, str) else t
                               for p, t in zip(prompts, texts, strict=True)]
                columns = {k: [r[k] for r in batch for _ in range(g.num_generations)]
                           for k in batch[0] if k != "prompt"}
                values = [f(prompts=prompts, completions=completions,
                            completion_ids=[ids[m.bool()].tolist() for ids, m in zip(completion_ids, mask,
                                                                                     strict=True)],
                            trainer_state=state, **columns) for f in reward_funcs]
                for n, v in zip(names, values, strict=True):
                    logged[n] += list(v)
                rewards = _weighted(values, weights)
                tensors = (enc["input_ids"], enc["attention_mask"], completion_ids, mask)
                model.train(profile.gradient_checkpointing)  # with checkpointing, LoRA dropout applies here
                policy_lp = sequence_logprobs(model, *tensors)
                model.eval()
                ref_lp = ref_logprobs(*tensors) if g.beta > 0 else policy_lp.detach()
                loss = reinforce_loss(policy_lp, torch.tensor(rewards, device=policy_lp.device, dtype=policy_lp.dtype),
                                      ref_lp, beta=g.beta, group_size=g.num_generations, baseline=baseline)
                kl = (policy_lp.detach() - ref_lp).tolist()
                advantages += group_advantages(rewards, kl, beta=g.beta, group_size=g.num_generations,
                                               baseline=baseline)
                (loss / g.gradient_accumulation_steps).backward()
                totals += rewards
                kls += kl
                losses.append(float(loss))
            grad_norm = float(torch.nn.utils.clip_grad_norm_(params, CLIP_NORM))
            rate = optimizer.param_groups[0]["lr"]  # the rate this step used
            optimizer.step()
            scheduler.step()
            state.global_step = step
            state.epoch = step * per_micro * g.gradient_accumulation_steps / len(rows)
            if step % g.logging_steps == 0 or step == g.max_steps:
                entry = {"step": step, "epoch": state.epoch, "loss": sum(losses) / len(losses),
                         "reward": sum(totals) / len(totals), "kl": sum(kls) / len(kls), "grad_norm": grad_norm,
                         "mean_advantage": sum(advantages) / len(advantages),
                         "learning_rate": rate}
                entry |= {f"rewards/{n}/mean": m for n in names if (m := _mean(logged[n])) is not None}
                state.log_history.append(entry)
            if heldout is not None:
                heldout.on_step_end(None, state, None, **callback_kwargs)
        seconds = time.perf_counter() - start
        if heldout is not None and is_main_process():
            from .heldout import write_curve

            write_curve(staging, heldout.curve)
        shim = _Run(model=model, state=state)
        result = trainers._finish(shim, tokenizer, staging, out_dir, kind="grpo", model=model_path_or_model,
                                  label=label, profile=profile, n_rows=len(rows), seconds=seconds,
                                  reward_names=names, weights=weights, records=records)
        trainers._publish(staging, out_dir, check)
    return result


class _Run:
    """What ``trainers._finish`` reads of a trainer: the model and a ``TrainerState``."""

    def __init__(self, model: Any, state: Any) -> None:
        self.model = model
        self.state = state

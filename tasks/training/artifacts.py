"""What a training run leaves behind: cleaned log history, training curves (PNG), a model card and the result; and
the same curves as flat records for ``dvc plots`` (:func:`write_plot_data`)."""

from __future__ import annotations

import io
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from tasks.store import atomic_write_bytes, atomic_write_json, atomic_write_text, read_text_utf8

from .profiles import TrainProfile

ADAPTER_DIR = "adapter"
LOG_HISTORY = "log_history.json"
TRAINER_STATE = "trainer_state.json"
CARD = "README.md"
LOSS_PNG = "loss.png"
REWARDS_PNG = "rewards.png"
LOSS_DATA = "loss.json"
REWARDS_DATA = "rewards.json"
HELDOUT_DATA = "heldout.json"
WEIGHTED_TOTAL = "reward (weighted total)"


class TrainResult(BaseModel):
    kind: Literal["sft", "grpo"]
    out_dir: Path
    adapter_dir: Path
    base_model: str
    profile: str
    n_rows: int
    steps: int
    final_loss: float | None
    final_rewards: dict[str, float]
    """Last logged ``rewards/<name>/mean`` per reward function plus ``reward`` (the weighted total); GRPO only."""
    reward_weights: dict[str, float]
    trainable_params: int
    plots: list[Path]
    seconds: float
    seconds_per_step: float


def _wall_clock(key: str) -> bool:
    return key.endswith(("_runtime", "_per_second")) or key == "step_time"


def clean_log_history(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Log entries without wall-clock fields, NaN turned into ``None`` so the JSON is strict."""
    cleaned = []
    for entry in history:
        row = {}
        for key, value in entry.items():
            if _wall_clock(key):
                continue
            if isinstance(value, float) and not math.isfinite(value):
                value = None
            row[key] = value
        cleaned.append(row)
    return cleaned


Line = tuple[list[int], list[float]]
"""Steps and values of one logged series."""


def series(history: list[dict[str, Any]], key: str) -> Line:
    steps, values = [], []
    for entry in history:
        value = entry.get(key)
        if isinstance(value, (int, float)) and math.isfinite(value) and "step" in entry:
            steps.append(int(entry["step"]))
            values.append(float(value))
    return steps, values


def last(history: list[dict[str, Any]], key: str) -> float | None:
    values = series(history, key)[1]
    return values[-1] if values else None


def reward_lines(history: list[dict[str, Any]], reward_names: Sequence[str]) -> dict[str, Line]:
    """Each reward function's logged mean (``rewards/<name>/mean``), then the weighted total (``reward``)."""
    lines = {name: series(history, f"rewards/{name}/mean") for name in reward_names}
    lines[WEIGHTED_TOTAL] = series(history, "reward")
    return lines


def _png(lines: dict[str, Line], title: str, ylabel: str) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=100)
    for label, (xs, ys) in lines.items():
        dashed = label.startswith("reward (")
        ax.plot(xs, ys, marker="o", markersize=3, label=label, linestyle="--" if dashed else "-")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("step")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    if len(lines) > 1:
        ax.legend(fontsize=8)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def write_plots(out_dir: Path, history: list[dict[str, Any]], reward_names: Sequence[str]) -> list[Path]:
    written = []
    path = out_dir / LOSS_PNG
    atomic_write_bytes(path, _png({"loss": series(history, "loss")}, "training loss", "loss"))
    written.append(path)
    if reward_names:
        path = out_dir / REWARDS_PNG
        atomic_write_bytes(path, _png(reward_lines(history, reward_names), "mean reward per function", "mean reward"))
        written.append(path)
    return written


def loss_rows(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``[{"step", "loss"}]``: the logged training loss, one record per logged step."""
    return [{"step": step, "loss": value} for step, value in zip(*series(history, "loss"), strict=True)]


def reward_rows(history: list[dict[str, Any]], reward_names: Sequence[str]) -> list[dict[str, Any]]:
    """``[{"step", "series", "reward"}]``: the lines of ``rewards.png`` (:func:`reward_lines`), one ``series`` each."""
    return [{"step": step, "series": name, "reward": value}
            for name, (steps, values) in reward_lines(history, reward_names).items()
            for step, value in zip(steps, values, strict=True)]


def write_plot_data(folder: Path, model_dir: Path, reward_names: Sequence[str] = ()) -> list[Path]:
    """The curves of the run published in ``model_dir`` as flat records for ``dvc plots`` (every record with the same
    keys): ``loss.json``; with ``reward_names`` (GRPO) also ``rewards.json`` and ``heldout.json`` (the held-out curve,
    ``[]`` when the run had none). Written atomically into ``folder``, which is outside the model folder."""
    from .heldout import CURVE_FILE, HeldoutCurve, curve_rows

    history = json.loads(read_text_utf8(model_dir / LOG_HISTORY))
    files = {LOSS_DATA: loss_rows(history)}
    if reward_names:
        files[REWARDS_DATA] = reward_rows(history, reward_names)
        curve_path = model_dir / CURVE_FILE
        files[HELDOUT_DATA] = (curve_rows(HeldoutCurve.model_validate_json(read_text_utf8(curve_path)))
                               if curve_path.is_file() else [])
    for name, rows in files.items():
        atomic_write_json(folder / name, rows)
    return [folder / name for name in files]


def write_logs(out_dir: Path, state: dict[str, Any], history: list[dict[str, Any]]) -> None:
    """The log history and trainer state; no wall-clock field, so an identical rerun writes identical bytes (the
    flow records the run's seconds in ``data/metrics/timings/<stage>.json``, outside the DVC output)."""
    atomic_write_json(out_dir / LOG_HISTORY, history)
    atomic_write_json(out_dir / TRAINER_STATE, {**state, "log_history": history})


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def method_label(kind: str, profile: TrainProfile, *, short: bool = False) -> str:
    """How a stage trains: ``TRL GRPO + LoRA`` (short) / ``TRL GRPOTrainer + PEFT LoRA``, or CLARITI's update
    (``grpo.update: reference_reinforce``) and ``full fine-tuning`` (``lora.enabled`` false) where chosen."""
    if kind == "grpo" and profile.grpo.update == "reference_reinforce":
        trainer = "REINFORCE, group-mean baseline, KL in reward (CLARITI's update)"
    elif short:
        trainer = f"TRL {kind.upper()}"
    else:
        trainer = f"TRL {'SFTTrainer' if kind == 'sft' else 'GRPOTrainer'}"
    tuning = ("LoRA" if short else "PEFT LoRA") if profile.lora.enabled else "full fine-tuning"
    return f"{trainer} + {tuning}"


def model_card(result: TrainResult, profile: TrainProfile, n_logged: int) -> str:
    """A README for the output folder; no dates or timings, so identical reruns give identical text."""
    settings = profile.sft if result.kind == "sft" else profile.grpo
    what = "LoRA adapter" if profile.lora.enabled else "fully fine-tuned model"
    lines = [
        f"# clarifyflow questioner: {result.kind.upper()} {what}",
        "",
        f"A {what} that turns an incomplete software issue into a numbered list of clarifying questions.",
        "",
        "| | |",
        "|---|---|",
        f"| base model | `{result.base_model}` |",
        f"| method | {method_label(result.kind, profile)} |",
        f"| profile | `{result.profile}` |",
        f"| training rows | {result.n_rows} |",
        f"| optimiser steps | {result.steps} |",
        f"| trainable parameters | {result.trainable_params:,} |",
        (f"| LoRA | r={profile.lora.r}, alpha={profile.lora.alpha}, dropout={profile.lora.dropout}, "
         f"targets {', '.join(profile.lora.target_modules)} |") if profile.lora.enabled else "| LoRA | none |",
        f"| dtype | {profile.dtype}{' (bf16 mixed precision)' if profile.bf16 else ''} |",
        f"| seed | {profile.seed} |",
        f"| final loss | {_fmt(result.final_loss)} |",
        "",
    ]
    if result.kind == "grpo":
        lines += ["## Rewards (last logged step)", "",
                  "| reward function | weight in advantage | mean |", "|---|---|---|"]
        for name, weight in result.reward_weights.items():
            lines.append(f"| `{name}` | {weight:g} | {_fmt(result.final_rewards.get(name))} |")
        lines += [f"| weighted total (`reward`) | | {_fmt(result.final_rewards.get('reward'))} |", ""]
    lines += [
        "## Settings",
        "",
        "```json",
        json.dumps(settings.model_dump(mode="json"), indent=2, sort_keys=True),
        "```",
        "",
        "## Files",
        "",
        f"- `{ADAPTER_DIR}/`: the adapter (`adapter_config.json`, `adapter_model.safetensors`) and the tokenizer",
        f"- `{LOG_HISTORY}`: {n_logged} log entries (no wall-clock fields); `{TRAINER_STATE}`: trainer state",
        f"- `{LOSS_PNG}`" + (f", `{REWARDS_PNG}`" if result.kind == "grpo" else "") + ": training curves",
        "",
        "Load it with `tasks.training.policy.LocalPolicy.from_adapter(base, adapter_dir)`.",
        "",
    ]
    return "\n".join(lines)


def write_card(out_dir: Path, result: TrainResult, profile: TrainProfile, n_logged: int) -> None:
    atomic_write_text(out_dir / CARD, model_card(result, profile, n_logged))

"""One line per logged training step on stderr (the trainers run with ``disable_tqdm``): step, loss, reward, the
seconds per step and the time left, so a long CPU run shows where it is. Written with ``sys.stderr.write``, not
``print``: the flows run with ``log_prints`` and ``PREFECT_LOGGING_LEVEL=WARNING``, and Prefect's patched ``print``
turns a print to stdout *or stderr* into an INFO log, which that level drops."""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from typing import Any


def say(line: str) -> None:
    """``line`` on stderr, past Prefect's ``log_prints`` (see the module docstring)."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def progress_line(kind: str, step: int, max_steps: int, logs: Mapping[str, Any], seconds_per_step: float) -> str:
    """``grpo step 3/30: loss 0.0123, reward 0.412 | 104.2 s/step, 47 min left``."""
    shown = [f"{name} {logs[key]:.4g}" for name, key in (("loss", "loss"), ("reward", "reward")) if key in logs]
    left = max(max_steps - step, 0) * seconds_per_step
    return (f"{kind} step {step}/{max_steps}: {', '.join(shown) or 'no loss logged'} | "
            f"{seconds_per_step:.1f} s/step, {left / 60:.0f} min left")


def progress_callback(kind: str):
    """A ``TrainerCallback`` printing :func:`progress_line` at every log."""
    from transformers import TrainerCallback

    class ProgressCallback(TrainerCallback):
        def __init__(self) -> None:
            self.started: float | None = None

        def on_train_begin(self, args, state, control, **kwargs):
            self.started = time.perf_counter()

        def on_log(self, args, state, control, logs=None, **kwargs):
            if not logs or "loss" not in logs or not state.global_step or self.started is None:
                return
            per_step = (time.perf_counter() - self.started) / state.global_step
            say(progress_line(kind, state.global_step, state.max_steps, logs, per_step))

    return ProgressCallback()

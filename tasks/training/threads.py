"""torch's intra-op thread count: every usable core for the process by default, chosen again by each phase.

:func:`configure_torch_threads` is called once where a policy loads and where training starts. The setting is
``cores`` (the default: every core this process may run on), ``auto`` (:func:`free_cores`: the usable cores less the
runnable threads of other processes, sampled once, at the start) or a thread count, from the argument or
``$CLARIFYFLOW_TORCH_THREADS`` (the environment wins, so a benchmark or a user can pin it). The choice is printed once
to stderr.

Why ``cores`` and not ``auto`` for the process: ``auto`` decided once, from one glimpse of the machine, so a stage
that started next to a passing job ran on one thread after that job ended. Phases choose again: each generation phase
(:func:`generation_threads`) and each training step (:func:`step_threads_callback`) takes the cores free when it
starts; a training step's result does not depend on its thread count (the SFT adapter had the same md5 on one thread
and on two, torch 2.13 CPU). ``benchmarks/torch_threads.py`` measures all the cores against fewer, alone and beside
one CPU-bound job (``benchmarks/results/torch_threads/threads.json``).
"""

from __future__ import annotations

import math
import os
import sys
import time

ENV = "CLARIFYFLOW_TORCH_THREADS"

_chosen: int | None = None


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity; ``os.cpu_count()`` where affinity is unknown)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def own_load() -> float:
    """This process's share of the 1-minute load average, estimated from its CPU time: its average CPU use since it
    started, weighted as the kernel's exponential average would weight it (``1 - exp(-age / 60 s)``)."""
    try:
        import psutil
    except ImportError:
        return 0.0
    try:
        proc = psutil.Process()
        age = max(time.time() - proc.create_time(), 1e-3)
    except (psutil.Error, OSError):
        return 0.0
    return (time.process_time() / age) * (1.0 - math.exp(-age / 60.0))


def _running_total() -> int | None:
    """Runnable threads on the machine now (``/proc/loadavg``'s fourth field), None where unknown."""
    try:
        with open("/proc/loadavg", encoding="ascii") as fh:
            return int(fh.read().split()[3].split("/")[0])
    except (OSError, IndexError, ValueError):
        return None


def _running_own() -> int:
    """This process's runnable threads now (``/proc/self/task/*/stat`` in state R; at least the caller)."""
    count = 0
    try:
        for task in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{task}/stat", encoding="ascii", errors="replace") as fh:
                    count += fh.read().rsplit(")", 1)[1].split()[0] == "R"
            except (OSError, IndexError):
                continue
    except OSError:
        return 1
    return max(1, count)


def running_others(samples: int = 5, interval_s: float = 0.02) -> float | None:
    """Runnable threads of other processes, averaged over a few samples (None where ``/proc`` is unavailable).

    The load average lags by about a minute; this sees a competitor that started a moment ago."""
    seen: list[int] = []
    for k in range(samples):
        total = _running_total()
        if total is None:
            return None
        seen.append(max(0, total - _running_own()))
        if k < samples - 1:
            time.sleep(interval_s)
    return sum(seen) / len(seen)


def other_load(samples: int = 10, interval_s: float = 0.05) -> float:
    """CPU demand of other processes: their runnable threads now, averaged over ``samples`` looks.

    Not the load average: it lags by about a minute, so the pipeline stage that has just finished (dvc runs stages
    one after another) would still count as a competitor and halve the next stage's threads."""
    now = running_others(samples, interval_s)
    return now or 0.0


def free_cores(cores: int | None = None, others: float | None = None) -> int:
    """The usable cores less the load of other processes (:func:`other_load`), rounded and clamped to
    ``[1, cores]``. Arguments override the measured values."""
    n = usable_cores() if cores is None else max(1, cores)
    load = other_load() if others is None else max(0.0, others)
    return min(n, max(1, int(n - load + 0.5)))


def parse_setting(setting: str | int | None) -> int | None:
    """``auto``/None/empty -> None (choose from the free cores); ``cores`` -> :func:`usable_cores`; a positive
    integer -> itself; else ValueError."""
    if setting is None or (isinstance(setting, str) and setting.strip().lower() in ("", "auto")):
        return None
    if isinstance(setting, str) and setting.strip().lower() == "cores":
        return usable_cores()
    try:
        value = int(setting)
    except ValueError:
        raise ValueError(f"torch threads: expected 'cores', 'auto' or a positive integer, got {setting!r}") from None
    if value < 1:
        raise ValueError(f"torch threads: expected 'cores', 'auto' or a positive integer, got {setting!r}")
    return value


def configure_torch_threads(setting: str | int | None = "cores", *, force: bool = False) -> int:
    """Set ``torch.set_num_threads`` once per process and return the count (later calls return the first choice
    unless ``force``). ``$CLARIFYFLOW_TORCH_THREADS`` overrides ``setting``."""
    global _chosen
    if _chosen is not None and not force:
        return _chosen
    env = os.environ.get(ENV)
    raw = env if env not in (None, "") else setting
    every_core = isinstance(raw, str) and raw.strip().lower() == "cores"
    fixed = parse_setting(raw)
    import torch

    if every_core:
        threads, why = fixed, "every usable core" + (f" (${ENV}={env})" if env else "")
    elif fixed is not None:
        threads, why = fixed, f"${ENV}={env}" if env else "configured"
    else:
        cores, others = usable_cores(), other_load()
        threads = free_cores(cores, others)
        why = f"auto: {cores} usable cores, load of other processes {others:.2f}"
    torch.set_num_threads(threads)
    _chosen = threads
    sys.stderr.write(f"torch threads: {threads} ({why})\n")  # once per process; not print: see training.progress
    return threads


GENERATE_ENV = "CLARIFYFLOW_GENERATE_THREADS"


def generation_threads() -> int:
    """Threads for a generation phase, chosen when it starts: the usable cores less the load of other processes
    (:func:`free_cores`), or ``$CLARIFYFLOW_GENERATE_THREADS``. On 2 cores (``benchmarks/results/torch_threads/``)
    a generation batch took 6.5 s on one thread against 19.9 s on two beside one CPU-bound job, and alone on the
    default run's ~400-token prompts two threads generated 30 answers in 1 min 26-34 s against 1 min 56 s on one:
    so the phase takes what is free at its start; so does each training step (:func:`step_threads`)."""
    env = os.environ.get(GENERATE_ENV)
    if env not in (None, ""):
        value = parse_setting(env)
        if value is not None:
            return value
    return free_cores()


class torch_threads:
    """``with torch_threads(n):`` runs the block on ``n`` intra-op threads and restores the count after."""

    def __init__(self, n: int):
        self.n = n
        self._before: int | None = None

    def __enter__(self) -> int:
        import torch

        self._before = torch.get_num_threads()
        torch.set_num_threads(self.n)
        return self.n

    def __exit__(self, *exc) -> None:
        import torch

        if self._before is not None:
            torch.set_num_threads(self._before)


def step_threads() -> int:
    """Threads for the next training step: the pinned count (``$CLARIFYFLOW_TORCH_THREADS``: a number or ``cores``)
    or the usable cores less what other processes run now (:func:`free_cores`; a quick look, 5 samples 20 ms apart,
    taken before every step)."""
    value = parse_setting(os.environ.get(ENV))
    return value if value is not None else free_cores(others=other_load(5, 0.02))


def step_threads_callback():
    """A ``TrainerCallback`` that sets torch's threads at the start of every training step (:func:`step_threads`).

    A step's result does not depend on the count: on torch 2.13's CPU build the SFT stage's adapter had the same md5
    trained on one thread and on two (fp32 and bf16 autocast; ``tests/test_generation.py`` checks a small LoRA
    model's weights after two steps), so the count may follow the load from step to step. Beside one CPU-bound job
    a LoRA step on both cores took 17.4 s against 14.2 s on one (benchmarks/results/torch_threads/threads.json)."""
    from transformers import TrainerCallback

    class StepThreads(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            import torch

            torch.set_num_threads(step_threads())

    return StepThreads()

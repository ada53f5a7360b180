"""A stage's metrics and its wall-clock timings, written with the stage's published folder.

``data/metrics/stages/<stage>.json`` (the DVC metric) holds only numbers that two identical runs reproduce: every
wall-clock field (``WALL_CLOCK_KEYS``, at any depth) moves to ``data/metrics/timings/<stage>.json``, a plain
git-ignored file that no stage declares (nothing reruns or diffs on it).

``publish_with_metrics`` stages the metrics with the outputs: the metrics (and timings) are split, serialised and
written to temporary files beside their final paths first, so a metrics write that fails (an unserialisable value,
a full or read-only disk, a folder in the way) fails before anything moves: the old outputs and the old metrics stay,
and the error is one line (``MetricsWriteError``). Then the folder is swapped in and each staged file renamed into
place (a rename in the same folder; nothing left to fail but a hard kill, after which DVC has no lock entry for the
run and reruns the stage, which rewrites both).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from tasks import store
from tasks.errors import ClarifyflowError


class MetricsWriteError(ClarifyflowError):
    """A stage's metrics could not be staged; nothing was published."""

WALL_CLOCK_KEYS = frozenset({"latency_s", "seconds", "seconds_per_step"})
"""Fields that measure elapsed time; never part of a stage's metrics."""


def split_timings(metrics: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(metrics without wall-clock fields, those fields at the same nested path)``."""
    kept: dict[str, Any] = {}
    timings: dict[str, Any] = {}
    for key, value in metrics.items():
        if key in WALL_CLOCK_KEYS:
            timings[key] = value
        elif isinstance(value, dict):
            inner, inner_timings = split_timings(value)
            kept[key] = inner
            if inner_timings:
                timings[key] = inner_timings
        else:
            kept[key] = value
    return kept, timings


def metrics_path(root: Path, stage: str) -> Path:
    """``stage`` is ``shap`` or ``construct/<domain>``."""
    return root / "data" / "metrics" / "stages" / f"{stage}.json"


def timings_path(root: Path, stage: str) -> Path:
    return root / "data" / "metrics" / "timings" / f"{stage}.json"


def _text(obj: Any) -> str:
    return json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_stage_metrics(root: Path, stage: str, metrics: dict[str, Any]) -> None:
    """Write a stage's metrics and (when it has any) its timings, each atomically."""
    kept, timings = split_timings(metrics)
    metric_text, timing_text = _text(kept), _text(timings)
    store.atomic_write_text(metrics_path(root, stage), metric_text)
    if timings:
        store.atomic_write_text(timings_path(root, stage), timing_text)


def _stage_file(path: Path, text: str) -> Path:
    """``text`` in a temporary file beside ``path`` (fsynced), to be renamed onto it; refuses a non-file in the way."""
    if path.exists() and not path.is_file():
        raise OSError(f"{path.name} exists and is not a file")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".staged", dir=path.parent)
    try:
        os.fchmod(fd, store._default_mode())
        with os.fdopen(fd, "wb") as fh:
            fh.write(text.encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return Path(tmp)


def publish_with_metrics(staging: Path, final: Path, root: Path, stage: str, metrics: dict[str, Any]) -> None:
    """Swap ``staging`` in at ``final`` together with the stage's metrics, staged before the swap (see above)."""
    kept, timings = split_timings(metrics)
    targets = [(metrics_path(root, stage), _text(kept))]  # serialising raises before anything is published
    if timings:
        targets.append((timings_path(root, stage), _text(timings)))
    staged: list[tuple[Path, Path]] = []
    try:
        try:
            for path, text in targets:
                staged.append((_stage_file(path, text), path))
        except OSError as err:
            where = path.relative_to(root) if path.is_relative_to(root) else path
            raise MetricsWriteError(f"{where}: could not write the stage's metrics ({err.strerror or err}); "
                                    "nothing was published") from None
        store.publish_dir(staging, final)
        for tmp, path in staged:
            os.replace(tmp, path)
    finally:
        for tmp, _ in staged:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)

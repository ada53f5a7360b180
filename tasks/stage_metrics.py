"""A stage's metrics and its wall-clock timings, written with the stage's published folder.

``data/metrics/stages/<stage>.json`` (the DVC metric) holds only numbers that two identical runs reproduce: every
wall-clock field (``WALL_CLOCK_KEYS``, at any depth) moves to ``data/metrics/timings/<stage>.json``, a plain
git-ignored file that no stage declares (nothing reruns or diffs on it).

``publish_with_metrics`` orders the two writes so that readers never see new outputs next to old metrics from a
failure we can catch: the metrics are split and serialised first (an unserialisable value fails before anything
moves), then the folder is swapped in and the metrics file is renamed into place right after it, in the same
guarded block. Only a hard kill between those two renames can leave the old metrics; DVC then has no lock entry
for the run and reruns the stage, which rewrites both.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tasks import store

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


def publish_with_metrics(staging: Path, final: Path, root: Path, stage: str, metrics: dict[str, Any]) -> None:
    """Swap ``staging`` in at ``final`` and write the stage's metrics right after, prepared before the swap."""
    kept, timings = split_timings(metrics)
    metric_text, timing_text = _text(kept), _text(timings)  # raises before anything is published
    store.publish_dir(staging, final)
    store.atomic_write_text(metrics_path(root, stage), metric_text)
    if timings:
        store.atomic_write_text(timings_path(root, stage), timing_text)

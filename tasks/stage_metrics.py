"""A stage's metrics and its wall-clock timings, written with the stage's published folder.

``data/metrics/stages/<stage>.json`` (every figure, git-tracked) holds only numbers that two identical runs
reproduce: every wall-clock field (``WALL_CLOCK_KEYS``, at any depth) moves to ``data/metrics/timings/<stage>.json``,
a plain git-ignored file that no stage declares (nothing reruns or diffs on it).

``data/metrics/headline/<stage>.json``, what ``dvc.yaml`` declares as the stage's metrics, copies a few of those
figures under six keys shared by all stages (``dvc metrics show`` prints one column per distinct key over all
files): ``cases`` (what the stage made or scored), ``heldout`` (held-out cases), ``hidden`` (hidden slots),
``steps``, ``loss`` and ``score`` (the stage's main figure). Never computed from anything but the full metrics:

- ``construct/<domain>``: ``cases``, ``hidden`` (hidden slots over all cases), ``heldout``;
- ``shap``: ``cases`` (runs in the table), ``score`` = the classifier's cross-validated AUC;
- ``sft_data``: ``cases`` (rows), ``heldout``;
- ``sft``, ``grpo``: ``steps``, ``loss`` (final); GRPO's ``score`` = the held-out total's paired gain over SFT;
- ``evaluate/<domain>``: ``cases``, ``score`` = the best *ranked* method's score (episodes: All-Slot Exact restore
  rate; question lists: weighted information recovery); reference rows never count;
- ``question_analysis``: ``cases`` (questions), ``score`` = the share judged answerable.

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

WALL_CLOCK_KEYS = frozenset({"latency_s", "seconds", "seconds_per_step", "LatencySeconds", "LatencyPerRunSeconds",
                             "LatencyPerCaseSeconds"})
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


def without_wall_clock(value: Any) -> Any:
    """``value`` (JSON: dicts, lists, scalars) without its wall-clock fields at any depth: what a DVC output may hold,
    so that an identical rerun writes identical bytes and ``dvc.lock`` does not change."""
    if isinstance(value, dict):
        return {k: without_wall_clock(v) for k, v in value.items() if k not in WALL_CLOCK_KEYS}
    if isinstance(value, list):
        return [without_wall_clock(v) for v in value]
    return value


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
    metric_text, timing_text, headline = _text(kept), _text(timings), headline_text(stage, kept)
    store.atomic_write_text(metrics_path(root, stage), metric_text)
    store.atomic_write_text(headline_path(root, stage), headline)
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
    targets = [(metrics_path(root, stage), _text(kept)),  # serialising raises before anything is published
               (headline_path(root, stage), headline_text(stage, kept))]
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


EPISODE_SCORE = "AllSlotExactRestoreRate"
QUESTION_SCORE = "weighted_recovery"


def headline_path(root: Path, stage: str) -> Path:
    """``stage`` as for :func:`metrics_path`."""
    return root / "data" / "metrics" / "headline" / f"{stage}.json"


def _get(metrics: dict[str, Any], *path: str) -> Any:
    value: Any = metrics
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def _hidden_slots(metrics: dict[str, Any]) -> Any:
    if isinstance(metrics.get("hidden_slots"), int):
        return metrics["hidden_slots"]
    by_count = metrics.get("cases_by_hidden_count")
    if isinstance(by_count, dict):
        return sum(int(k) * int(v) for k, v in by_count.items())
    return None


def _best(rows: Any) -> float | None:
    """The best score over the ranked rows (episode rows carry ``EPISODE_SCORE``, question rows ``QUESTION_SCORE``)."""
    if not isinstance(rows, dict):
        return None
    scores = [row.get(EPISODE_SCORE, row.get(QUESTION_SCORE)) for row in rows.values() if isinstance(row, dict)]
    scores = [s for s in scores if isinstance(s, int | float)]
    return max(scores) if scores else None


def headline(stage: str, metrics: dict[str, Any]) -> dict[str, Any]:
    """The headline figures of ``stage`` (keys whose value the metrics lack are left out)."""
    kind = stage.split("/")[0]
    if kind == "construct":
        picked = {"cases": metrics.get("cases"), "hidden": _hidden_slots(metrics),
                  "heldout": _get(metrics, "split", "heldout", "cases")}
    elif kind == "shap":
        picked = {"cases": metrics.get("runs"), "score": _get(metrics, "cv", "auc")}
    elif kind == "sft_data":
        picked = {"cases": metrics.get("rows"), "heldout": metrics.get("heldout")}
    elif kind in ("sft", "grpo"):
        picked = {"steps": metrics.get("steps"), "loss": metrics.get("final_loss"),
                  "score": _get(metrics, "heldout", "gain", "total", "mean")}
    elif kind == "evaluate":
        picked = {"cases": metrics.get("cases"), "score": _best(metrics.get("rows"))}
    elif kind == "question_analysis":
        picked = {"cases": metrics.get("questions"), "score": metrics.get("answerable_rate")}
    else:
        picked = {}
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in picked.items()
            if isinstance(v, int | float) and not isinstance(v, bool)}


def headline_text(stage: str, metrics: dict[str, Any]) -> str:
    return _text(headline(stage, metrics))

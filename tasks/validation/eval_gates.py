"""Gates on evaluation artifacts in the staging folder, before it is published: the episodes evaluation's
``recovery.json`` curves and the SWE evaluation's ``bridge/`` exports (SWE-bench-style JSONL + ``manifest.json``)."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from tasks.errors import GateError
from tasks.validation.shap_gates import read_json, validated


class Band(BaseModel):
    mean: list[float | None]
    low: list[float | None]
    high: list[float | None]


class Curve(BaseModel):
    model_config = ConfigDict(extra="allow")

    protocol: str
    method: str
    runs: int = Field(ge=1)
    all_slot: Band
    core: Band | None = None


class RecoveryCurves(BaseModel):
    questions: list[float] = Field(min_length=1)
    curves: dict[str, Curve] = Field(min_length=1)


def recovery_frame(path: Path, artifact: str):
    """One row per point of every curve (``protocol::method`` x all_slot/core x question count)."""
    import pandas as pd

    doc = validated(RecoveryCurves, read_json(path, artifact), artifact)
    xs = doc.questions
    rows = []
    for key, curve in doc.curves.items():
        for series, band in (("all_slot", curve.all_slot), ("core", curve.core)):
            if band is None:
                continue
            lengths_ok = len(band.mean) == len(band.low) == len(band.high) == len(xs)
            for n, x in enumerate(xs):
                rows.append({"key": key, "series": series, "protocol": curve.protocol, "x": x,
                             "x_step": x - xs[n - 1] if n else 0.0, "mean": _at(band.mean, n), "low": _at(band.low, n),
                             "high": _at(band.high, n), "lengths_match_x": lengths_ok})
    return pd.DataFrame(rows, columns=["key", "series", "protocol", "x", "x_step", "mean", "low", "high",
                                       "lengths_match_x"]).astype({"mean": "float64", "low": "float64",
                                                                   "high": "float64"})


def _at(values: list[float | None], n: int) -> float | None:
    return values[n] if n < len(values) else None


def gate_recovery(path: Path, *, artifact: str, results_dir: Path | None = None) -> None:
    from tasks.validation.gate import gate

    gate("recovery_curves", recovery_frame(Path(path), artifact), artifact=artifact, results_dir=results_dir)


class Manifest(BaseModel):
    model_config = ConfigDict(extra="allow")

    format: str
    methods: dict[str, dict[str, list[str]]]
    """Method -> file name -> the case ids written to it, in order."""


def bridge_frame(folder: Path, artifact: str):
    """One row per exported row; the manifest must list exactly the JSONL files in ``folder``, each with the case
    ids it holds."""
    import pandas as pd

    folder = Path(folder)
    manifest = validated(Manifest, read_json(folder / "manifest.json", f"{artifact}/manifest.json"),
                         f"{artifact}/manifest.json")
    listed = {name: ids for files in manifest.methods.values() for name, ids in files.items()}
    written = sorted(p.name for p in folder.glob("*.jsonl"))
    if sorted(listed) != written:
        raise GateError(f"{artifact}/manifest.json", f"lists {sorted(listed)} but the folder holds {written}")
    rows = []
    for name in written:
        lines = [line for line in (folder / name).read_text(encoding="utf-8").splitlines() if line.strip()]
        try:
            records = [json.loads(line) for line in lines]
        except ValueError as err:
            raise GateError(f"{artifact}/{name}", f"not JSONL: {err}") from None
        if [r.get("clarifyflow_case_id") if isinstance(r, dict) else None for r in records] != listed[name]:
            raise GateError(f"{artifact}/{name}", f"rows do not match the {len(listed[name])} case ids the manifest "
                                                  f"lists for it ({len(records)} rows)")
        for record in records:
            rows.append({"key": f"{name}::{record.get('instance_id')}", "file": name,
                         "instance_id": record.get("instance_id"), "repo": record.get("repo"),
                         "base_commit": record.get("base_commit"),
                         "problem_statement_chars": len(str(record.get("problem_statement") or "").strip())})
    return pd.DataFrame(rows, columns=["key", "file", "instance_id", "repo", "base_commit",
                                       "problem_statement_chars"])


def gate_bridge(folder: Path, *, artifact: str, results_dir: Path | None = None) -> None:
    from tasks.validation.gate import gate

    gate("bridge_rows", bridge_frame(Path(folder), artifact), artifact=artifact, results_dir=results_dir)


class EvaluationChecks:
    """The gates an evaluation stage runs before publishing (``tasks.evaluation.stage.Checks``), each result saved
    under ``results_dir``: handed down by the flow, since validation sits a layer above the evaluation."""

    def __init__(self, results_dir: Path | None):
        self.results_dir = results_dir

    def table(self, suite: str, frame, *, artifact: str, **options) -> None:
        from tasks.validation.gate import gate

        gate(suite, frame, artifact=artifact, results_dir=self.results_dir, **options)

    def recovery(self, path: Path, *, artifact: str) -> None:
        gate_recovery(path, artifact=artifact, results_dir=self.results_dir)

    def bridge(self, folder: Path, *, artifact: str) -> None:
        gate_bridge(folder, artifact=artifact, results_dir=self.results_dir)

    def stage_metrics(self, stage: str, metrics: dict, *, counts: dict) -> None:
        from tasks.validation.stage_metrics import check_stage_metrics

        check_stage_metrics(stage, metrics, counts=counts)

"""What the report reads: every stage's metrics, the gates' latest validation results, and stage files by path."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tasks.store import read_json_object

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
GX_RESULTS = Path(".cache") / "gx" / "results"
OWN_GATE = "data_report"
"""The report's own gate runs after the page is written, so its result is never shown (it would lag one run)."""


def load_stage_metrics(metrics_dir: Path) -> dict[str, dict[str, Any]]:
    """``{stage: metrics}`` from every ``*.json`` below ``metrics_dir``
    (``construct/swe.json`` -> ``construct@swe``)."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(metrics_dir.rglob("*.json")):
        rel = path.relative_to(metrics_dir).with_suffix("")
        found["@".join(rel.parts)] = read_json_object(path)
    return found


def flatten(metrics: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per number: ``{"key": "stage.a.b", "value": 3, "backend": ...}``; a nested block names its own
    backend."""
    rows = []

    def walk(prefix: str, value: Any, backend: str) -> None:
        if isinstance(value, dict):
            backend = str(value.get("backend", backend))
            for key, sub in value.items():
                walk(f"{prefix}.{key}", sub, backend)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            rows.append({"key": prefix, "value": value, "backend": backend})

    for stage, data in metrics.items():
        backend = str(data.get("backend", "unspecified"))
        for key, value in data.items():
            if key != "backend":
                walk(f"{stage}.{key}", value, backend)
    return rows


@dataclass(frozen=True)
class GateResult:
    artifact: str
    suite: str
    success: bool | None
    passed: int
    evaluated: int
    failed: list[str] = field(default_factory=list)
    """``expectation(column)`` of each failed expectation."""


def load_gate_results(results_dir: Path, root: Path) -> list[GateResult]:
    """The latest result of each gate (``gate(..., results_dir=...)`` writes ``<artifact with / as _>__<suite>.json``
    and names the artifact in the result's ``meta``; older files are ``<artifact with / as _>.json``)."""
    if not results_dir.is_dir():
        return []
    out = []
    for path in sorted(results_dir.glob("*.json")):
        if path.stem.split("__")[0] == OWN_GATE:
            continue
        artifact = _artifact_path(root, path.stem.split("__")[0])
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            artifact = (raw.get("meta") or {}).get("clarifyflow_artifact") or artifact
            stats = raw.get("statistics") or {}
            failed = []
            for res in raw.get("results") or []:
                if not res.get("success", True):
                    cfg = res.get("expectation_config") or {}
                    kwargs = cfg.get("kwargs") or {}
                    column = kwargs.get("column") or kwargs.get("column_A")
                    failed.append(str(cfg.get("type", "?")) + (f"({column})" if column else ""))
            out.append(GateResult(artifact, str(raw.get("suite_name", "?")), bool(raw.get("success")),
                                  int(stats.get("successful_expectations", 0)),
                                  int(stats.get("evaluated_expectations", 0)), failed))
        except (ValueError, TypeError, AttributeError, UnicodeDecodeError):
            out.append(GateResult(artifact, "?", None, 0, 0, ["unreadable result file"]))
    return sorted(out, key=lambda g: (g.artifact, g.suite))


def _artifact_path(root: Path, stem: str) -> str:
    """Undo ``artifact.replace('/', '_')`` by walking the folders that exist (longest name first); else the stem."""
    tokens = stem.split("_")
    here, parts, i = root, [], 0
    while i < len(tokens):
        for j in range(len(tokens), i, -1):
            name = "_".join(tokens[i:j])
            if (here / name).exists():
                here, i = here / name, j
                parts.append(name)
                break
        else:
            return stem
    return "/".join(parts)


@dataclass
class ReportInputs:
    metrics: dict[str, dict[str, Any]]
    roles: dict[str, dict[str, Any]] = field(default_factory=dict)
    """``describe_roles`` of the params' roles."""
    domains: list[str] = field(default_factory=list)
    gates: list[GateResult] = field(default_factory=list)
    root: Path | None = None
    """The project; None reads no stage files (only ``metrics``)."""

    @classmethod
    def load(cls, root: Path, roles: dict[str, dict[str, Any]], domains: list[str]) -> ReportInputs:
        return cls(metrics=load_stage_metrics(root / "data" / "metrics" / "stages"), roles=roles,
                   domains=list(domains), gates=load_gate_results(root / GX_RESULTS, root), root=root)

    def json(self, rel: str) -> dict[str, Any] | None:
        if self.root is None or not (self.root / rel).is_file():
            return None
        return read_json_object(self.root / rel)

    def exists(self, rel: str) -> bool:
        return self.root is not None and (self.root / rel).exists()

    def png(self, rel: str) -> bytes | None:
        if self.root is None or not (self.root / rel).is_file():
            return None
        data = (self.root / rel).read_bytes()
        return data if data.startswith(PNG_MAGIC) else None

    def pngs(self, rel_dir: str) -> list[tuple[str, bytes]]:
        """``(file name, bytes)`` of every PNG directly in ``rel_dir``, by name."""
        if self.root is None or not (self.root / rel_dir).is_dir():
            return []
        found = [(p.name, self.png(f"{rel_dir}/{p.name}")) for p in sorted((self.root / rel_dir).glob("*.png"))]
        return [(name, data) for name, data in found if data is not None]

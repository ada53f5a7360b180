"""Run a suite over a table; raise :class:`GateError` with a readable summary when it fails.

Each gate's latest result is also saved as JSON under ``.cache/gx/results/`` (:func:`write_result`), so the report and
``make docs`` show every gate's latest result without validating anything again.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tasks.errors import GateError
from tasks.store import atomic_write_json


def _plain(value: Any) -> Any:
    """numpy scalars print as np.int64(3); show them as plain Python values."""
    if isinstance(value, tuple | list):
        return type(value)(_plain(v) for v in value)
    return value.item() if hasattr(value, "item") else value


@dataclass
class Failure:
    expectation: str
    column: str | None
    unexpected_count: int | None
    examples: list[Any] = field(default_factory=list)
    observed: Any = None

    def describe(self) -> str:
        what = self.expectation + (f"({self.column})" if self.column else "")
        parts = [what]
        if self.unexpected_count is not None:
            parts.append(f"{self.unexpected_count} rows")
        if self.examples:
            shown = ", ".join(repr(_plain(e))[:60] for e in self.examples[:3])
            parts.append(f"e.g. {shown}")
        elif self.observed is not None:
            parts.append(f"observed {self.observed!r}")
        return " ".join(parts)


@dataclass
class GateReport:
    suite: str
    success: bool
    evaluated: int
    failures: list[Failure]
    raw: dict

    def summary(self) -> str:
        if self.success:
            return f"{self.suite}: {self.evaluated}/{self.evaluated} expectations passed"
        failed = "; ".join(f.describe() for f in self.failures)
        return f"{self.suite}: {len(self.failures)} of {self.evaluated} expectations failed: {failed}"


def _quiet_context():
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    # GX sets some of its module loggers to INFO at import time.
    for name in ("great_expectations", "great_expectations.data_context.types.base"):
        logging.getLogger(name).setLevel(logging.WARNING)
    ctx = gx.get_context(mode="ephemeral")
    ctx.variables.progress_bars = ProgressBarsConfig(globally=False)
    return ctx


def validate(suite_name: str, frame: Any, **options: Any) -> GateReport:
    from tasks.validation.suites import build_suite

    ctx = _quiet_context()
    suite = build_suite(suite_name, **options)
    source = ctx.data_sources.add_pandas(f"{suite_name}_source")
    asset = source.add_dataframe_asset(f"{suite_name}_asset")
    batch_def = asset.add_batch_definition_whole_dataframe(f"{suite_name}_batch")
    batch = batch_def.get_batch(batch_parameters={"dataframe": frame})
    result = batch.validate(suite, result_format="SUMMARY")
    failures = []
    for res in result.results:
        if res.success:
            continue
        cfg = res.expectation_config
        detail = res.result or {}
        examples = detail.get("partial_unexpected_list") or []
        failures.append(
            Failure(
                expectation=cfg.type,
                column=cfg.kwargs.get("column") or cfg.kwargs.get("column_A"),
                unexpected_count=detail.get("unexpected_count"),
                examples=list(examples),
                observed=detail.get("observed_value"),
            )
        )
    return GateReport(
        suite=suite_name,
        success=bool(result.success),
        evaluated=int(result.statistics["evaluated_expectations"]),
        failures=failures,
        raw=result.to_json_dict(),
    )


ARTIFACT_KEY = "clarifyflow_artifact"
"""Where a saved result names its artifact (in GX's ``meta``)."""


def write_result(results_dir: Path, artifact: str, suite_name: str, raw: dict) -> Path:
    """Save a gate's latest result as ``<artifact with / as _>__<suite>.json``, one file per (artifact, suite), so two
    gates on one artifact (a domain's suite and ``case_splits``) both keep theirs; the file written before results
    were kept per suite (``<artifact>.json``) is removed."""
    slug = artifact.replace("/", "_")
    path = results_dir / f"{slug}__{suite_name}.json"
    atomic_write_json(path, {**raw, "meta": {**(raw.get("meta") or {}), ARTIFACT_KEY: artifact}})
    (results_dir / f"{slug}.json").unlink(missing_ok=True)
    return path


def gate(suite_name: str, frame: Any, *, artifact: str, results_dir: Path | None = None, **options: Any) -> GateReport:
    """Validate and raise on failure; the caller publishes only after this returns. ``options`` reach the suite."""
    report = validate(suite_name, frame, **options)
    if results_dir is not None:
        write_result(Path(results_dir), artifact, suite_name, report.raw)
    if not report.success:
        raise GateError(artifact, report.summary())
    return report

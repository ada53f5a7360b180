"""Render GX Data Docs of every gate's latest result, as the pipeline wrote it, into a static HTML site (offline).

Each gate saves its latest result under ``.cache/gx/results/`` (``tasks.validation.gate.write_result``); this puts
every one of them into a file-backed GX context's validation store and builds the site from that, so the pages show
what the stages found when they ran: nothing is validated again, and an artifact changed by hand since is not
re-checked here (rerun its stage). One line per result is printed as well.

GX's page templates (great_expectations 1.24) inline GX's stylesheet but take Bootstrap, bootstrap-table, the
datepicker, Font Awesome, jQuery, Popper and Vega from CDNs; ``make setup`` vendors those files from npm
(:mod:`tasks.validation.docs_assets`) and the site gets a copy of them with every page pointing at it, so the
pages render styled offline (without the vendored files the CDN links stay). The image GX ships but links
remotely, the navbar logo (an S3 URL tagged with the data context id and a timestamp), is pointed at the site's own
copy (:func:`localise_images`); the dark logo GX's inlined stylesheet takes from GX's S3 bucket stays remote (the
package does not ship it).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

INDEX = Path("gx") / "uncommitted" / "data_docs" / "local_site" / "index.html"
REMOTE_IMAGES = re.compile(r'https://great-expectations-web-assets\.s3\.us-east-2\.amazonaws\.com/([\w.-]+)(\?[^"\']*)?')
"""GX's remote copy of the images its package ships under ``static/images`` (top_navbar.j2: the logo)."""


@dataclass
class Outcome:
    artifact: str
    suite: str
    success: bool
    passed: int
    evaluated: int

    def line(self) -> str:
        verdict = "passed" if self.success else "FAILED"
        return f"  {self.artifact}: suite {self.suite} {verdict} ({self.passed}/{self.evaluated} expectations passed)"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tasks.validation.docs", description=__doc__.splitlines()[0])
    return parser.parse_args(argv)


def file_context(root: Path) -> Any:
    os.environ["GX_ANALYTICS_ENABLED"] = "false"
    logging.getLogger("great_expectations").setLevel(logging.WARNING)
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    logging.getLogger("great_expectations").setLevel(logging.WARNING)
    ctx = gx.get_context(mode="file", project_root_dir=str(root))
    ctx.variables.progress_bars = ProgressBarsConfig(globally=False)
    ctx.variables.analytics_enabled = False
    ctx.variables.save()
    return ctx


RESULTS = Path(".cache") / "gx" / "results"


def stored_results(root: Path) -> list[tuple[Path, dict]]:
    """Every saved gate result (``.cache/gx/results/*.json``), sorted by file name; unreadable files are skipped with a
    line on stderr."""
    folder = root / RESULTS
    found = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(raw, dict) or "suite_name" not in raw:
                raise ValueError("not a GX validation result")
        except (ValueError, UnicodeDecodeError) as exc:
            print(f"skipped {path.relative_to(root).as_posix()}: {exc}", file=sys.stderr)
            continue
        found.append((path, raw))
    return found


def _outcome(path: Path, raw: dict) -> Outcome:
    from tasks.validation.gate import ARTIFACT_KEY

    artifact = (raw.get("meta") or {}).get(ARTIFACT_KEY) or path.stem.split("__")[0]
    stats = raw.get("statistics") or {}
    return Outcome(artifact, str(raw["suite_name"]), bool(raw.get("success")),
                   int(stats.get("successful_expectations", 0)), int(stats.get("evaluated_expectations", 0)))


def docs_from_results(ctx: Any, results: list[tuple[Path, dict]]) -> list[Outcome]:
    """Store each saved result in the context's validation store (run time = when the stage wrote it) and build
    the site; nothing is validated again."""
    from datetime import UTC, datetime

    from great_expectations.core import ExpectationSuiteValidationResult
    from great_expectations.core.run_identifier import RunIdentifier
    from great_expectations.data_context.types.resource_identifiers import (
        ExpectationSuiteIdentifier,
        ValidationResultIdentifier,
    )

    outcomes = []
    for path, raw in results:
        outcome = _outcome(path, raw)
        result = ExpectationSuiteValidationResult(
            success=bool(raw.get("success")), results=raw.get("results") or [], suite_name=outcome.suite,
            statistics=raw.get("statistics") or {}, meta=raw.get("meta") or {},
            suite_parameters=raw.get("suite_parameters") or {})
        written = datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)
        key = ValidationResultIdentifier(expectation_suite_identifier=ExpectationSuiteIdentifier(name=outcome.suite),
                                         run_id=RunIdentifier(run_name=path.stem, run_time=written),
                                         batch_identifier=outcome.artifact.replace("/", "_"))
        ctx.validation_results_store.set(key, result)
        outcomes.append(outcome)
    ctx.build_data_docs()
    return outcomes


def localise_images(site: Path) -> int:
    """Point every page's remote GX image at the site's ``static/images`` copy (a relative link); returns how many
    links changed. Images the site has no copy of keep their remote link."""
    from tasks.store import atomic_write_text

    images = site / "static" / "images"
    local = {p.name for p in images.iterdir() if p.is_file()} if images.is_dir() else set()
    changed = 0
    for page in sorted(site.rglob("*.html")):
        text = page.read_text(encoding="utf-8")
        prefix = os.path.relpath(images, page.parent).replace(os.sep, "/")
        found = [m for m in REMOTE_IMAGES.finditer(text) if m[1] in local]
        for match in reversed(found):
            text = f"{text[: match.start()]}{prefix}/{match[1]}{text[match.end():]}"
        if found:
            atomic_write_text(page, text)
            changed += len(found)
    return changed


def main(argv: list[str] | None = None) -> int:
    parse_args(argv)
    from tasks.store import repo_root
    from tasks.validation.docs_assets import VENDOR, localise_assets

    root = repo_root()
    results = stored_results(root)
    if not results:
        print(f"nothing to document: no gate results in {RESULTS.as_posix()}/ (run `make run` first)")
        return 1
    outcomes = docs_from_results(file_context(root), results)
    localise_images(root / INDEX.parent)
    changed, left = localise_assets(root / INDEX.parent, root / VENDOR)
    print(f"data docs: {INDEX.as_posix()} ({len(outcomes)} gate results, each the latest the pipeline wrote)")
    if left:
        print(f"  {left} stylesheet/script links stay on CDNs ({changed} served from the site): "
              "`python -m tasks.validation.docs_assets` vendors them")
    for outcome in outcomes:
        print(outcome.line())
    failed = [f"{o.artifact} ({o.suite})" for o in outcomes if not o.success]
    if failed:
        print(f"validation failed for {', '.join(failed)}; the docs show the failures")
    return 0


if __name__ == "__main__":
    sys.exit(main())

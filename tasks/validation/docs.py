"""Render GX Data Docs for the published artifacts: re-validate each one and build the static HTML site (offline).

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
DATASOURCE = "published"
REMOTE_IMAGES = re.compile(r'https://great-expectations-web-assets\.s3\.us-east-2\.amazonaws\.com/([\w.-]+)(\?[^"\']*)?')
"""GX's remote copy of the images its package ships under ``static/images`` (top_navbar.j2: the logo)."""


@dataclass
class Artifact:
    name: str
    suite: str
    frame: Any

    @property
    def slug(self) -> str:
        return self.name.replace("/", "_")


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


def published_artifacts(root: Path) -> list[Artifact]:
    import pandas as pd

    from tasks.domains import ConstructResult, domain_names, get_domain
    from tasks.records import Case
    from tasks.store import read_jsonl

    found = []
    for name in domain_names():
        path = root / "data" / "cases" / name / "cases.jsonl"
        if path.is_file():
            result = ConstructResult(cases=read_jsonl(path, Case), metrics={})
            suite, frame = get_domain(name).validation_table(result)
            found.append(Artifact(f"data/cases/{name}", suite, frame))
    metrics = root / "data" / "report" / "metrics.json"
    if metrics.is_file():
        values = json.loads(metrics.read_text(encoding="utf-8"))
        backends = _backends(root / "data" / "metrics" / "stages")
        rows = [{"key": k, "value": v, "backend": backends.get(k, "unspecified")} for k, v in values.items()]
        found.append(Artifact("data/report", "report_metrics", pd.DataFrame(rows, columns=["key", "value", "backend"])))
    return found


def _backends(stages: Path) -> dict[str, str]:
    from tasks.errors import InputError
    from tasks.reports import flatten, load_stage_metrics

    if not stages.is_dir():
        return {}
    try:
        return {row["key"]: row["backend"] for row in flatten(load_stage_metrics(stages))}
    except InputError:
        return {}


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


def validate_with_docs(ctx: Any, artifacts: list[Artifact]) -> list[Outcome]:
    import great_expectations as gx
    from great_expectations.checkpoint import UpdateDataDocsAction

    from tasks.validation.suites import build_suite

    source = ctx.data_sources.add_or_update_pandas(DATASOURCE)
    outcomes = []
    for art in artifacts:
        suite = ctx.suites.add_or_update(build_suite(art.suite))
        asset = source.add_dataframe_asset(art.slug)
        batch = asset.add_batch_definition_whole_dataframe(f"{art.slug}_whole")
        vdef = ctx.validation_definitions.add_or_update(gx.ValidationDefinition(name=art.slug, data=batch, suite=suite))
        checkpoint = ctx.checkpoints.add_or_update(
            gx.Checkpoint(
                name=f"docs_{art.slug}",
                validation_definitions=[vdef],
                actions=[UpdateDataDocsAction(name="update_docs")],
                result_format="SUMMARY",
            )
        )
        result = checkpoint.run(batch_parameters={"dataframe": art.frame})
        for res in result.run_results.values():
            stats = res.statistics
            outcomes.append(
                Outcome(art.name, art.suite, bool(res.success), int(stats["successful_expectations"]),
                        int(stats["evaluated_expectations"]))
            )
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
    artifacts = published_artifacts(root)
    if not artifacts:
        print("nothing to document: run `make run` first")
        return 1
    outcomes = validate_with_docs(file_context(root), artifacts)
    localise_images(root / INDEX.parent)
    changed, left = localise_assets(root / INDEX.parent, root / VENDOR)
    print(f"data docs: {INDEX.as_posix()}")
    if left:
        print(f"  {left} stylesheet/script links stay on CDNs ({changed} served from the site): "
              "`python -m tasks.validation.docs_assets` vendors them")
    for outcome in outcomes:
        print(outcome.line())
    failed = [o.artifact for o in outcomes if not o.success]
    if failed:
        print(f"validation failed for {', '.join(failed)}; the docs show the failures")
    return 0


if __name__ == "__main__":
    sys.exit(main())

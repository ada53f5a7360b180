"""report: every stage's outputs in one report under data/report/ (report.md, report.html, metrics.json, figures)."""

from __future__ import annotations

import argparse
import sys

from flows import cli


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    return cli.params_args("python -m flows.report", __doc__.splitlines()[0], argv)


def report(params: str = "params.yaml") -> dict:
    import pandas as pd

    from tasks.params import load_params
    from tasks.reporting import ReportInputs, flatten, write_report
    from tasks.roles.config import describe_roles
    from tasks.store import atomic_write_json, publish_dir, repo_root, staged_dir
    from tasks.validation import gate
    from tasks.validation.report_gate import gate_report

    root = repo_root()
    cfg = load_params(root / params)
    inputs = ReportInputs.load(root, describe_roles(cfg.roles), cfg.domains)
    rows = flatten(inputs.metrics)
    out_dir = root / "data" / "report"
    with staged_dir(out_dir) as staging:
        page = write_report(cfg.report.title, inputs, staging)
        gate("report_metrics", pd.DataFrame(rows or flatten({})), artifact="data/report",
             results_dir=root / ".cache" / "gx" / "results")
        gate_report(staging, page)
        not_run = sorted(s.stage or s.key for s in page.walk() if s.missing)
        summary = {"stages": len(inputs.metrics), "metrics": len(rows), "figures": len(page.figures()),
                   "sections_not_run": len(not_run)}
        # the metrics are ready before the swap and written right after it, in the same guarded block
        publish_dir(staging, out_dir)
        atomic_write_json(root / "data" / "metrics" / "report.json", summary)
    return {**summary, "not_run": not_run}


def describe(summary: dict) -> str:
    missing = f"; not run yet: {', '.join(summary['not_run'])}" if summary.get("not_run") else ""
    return (f"report: {summary['metrics']} metrics from {summary['stages']} stage(s), {summary['figures']} figure(s)"
            f"{missing} -> data/report/report.md, report.html")


def build_flow():
    from prefect import flow

    return flow(name="report", flow_run_name="report", log_prints=True)(report)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    return cli.run_stage(lambda: build_flow()(params=args.params), describe)


if __name__ == "__main__":
    sys.exit(main())

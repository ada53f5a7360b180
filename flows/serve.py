"""serve: serve the pipeline flow as a deployment on the cron schedule from params.yaml (schedule.cron).

Needs a persistent Prefect server (``make ui``); schedules cannot live on an ephemeral one. Runs until stopped.
"""

from __future__ import annotations

import argparse
import sys

from flows import cli
from flows.cli import run_main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = cli.ArgumentParser(prog="python -m flows.serve", description=__doc__.splitlines()[0])
    parser.add_argument("--params", default="params.yaml", help="params file (default: params.yaml)")
    parser.add_argument("--name", help="deployment name (default: schedule.deployment from params)")
    parser.add_argument("--cron", help="override schedule.cron")
    return parser.parse_args(argv)


def serve(params: str, name: str | None, cron: str | None) -> None:
    import os

    from flows.pipeline import build_flow
    from tasks.params import load_params
    from tasks.store import repo_root

    if not os.environ.get("PREFECT_API_URL"):
        from tasks.errors import ClarifyflowError

        raise ClarifyflowError("no Prefect server: run `make ui` first (schedules need a persistent server)")
    cfg = load_params(repo_root() / params).schedule
    from prefect.client.schemas.schedules import CronSchedule

    schedule = CronSchedule(cron=cron or cfg.cron, timezone=cfg.timezone)
    print(f"serving pipeline as '{name or cfg.deployment}' on cron '{schedule.cron}' ({cfg.timezone})")
    build_flow().serve(name=name or cfg.deployment, schedules=[schedule], pause_on_shutdown=False)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from flows import _env

    _env.configure()
    return run_main(lambda: serve(args.params, args.name, args.cron))


if __name__ == "__main__":
    sys.exit(main())

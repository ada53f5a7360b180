"""pipeline: run the DVC DAG stage by stage as Prefect tasks, so each stage shows in the Prefect UI.

``dvc.yaml`` stays the only DAG: the stage graph is read from it and each stage runs as
``dvc repro --single-item <stage>`` in topological order, serially (DVC holds a repo-wide lock).
A stage that fails stops the run; later stages are not started.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from flows import cli
from flows.cli import run_main


def stage_order(root: Path) -> list[str]:
    """Stage names (``construct@swe``, ``report``) in a deterministic topological order."""
    import networkx as nx
    from dvc.repo import Repo

    with Repo(str(root)) as repo:
        graph = repo.index.graph  # edges point from a stage to the stages it depends on
        names = {stage: stage.addressing for stage in graph.nodes}
        order = nx.lexicographical_topological_sort(graph.reverse(copy=True), key=lambda s: names[s])
        return [names[stage] for stage in order]


def dvc_command() -> list[str]:
    return [sys.executable, "-m", "dvc"]


def repro_stage(stage: str, root: str, force: bool = False) -> str:
    """Run one stage through DVC; DVC decides whether it is up to date. Returns DVC's output."""
    cmd = [*dvc_command(), "repro", "--single-item", stage]
    if force:
        cmd.append("--force")
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    output = (proc.stdout + proc.stderr).strip()
    print(output)
    if proc.returncode != 0:
        raise RuntimeError(f"dvc repro {stage} failed with exit code {proc.returncode}:\n{output[-2000:]}")
    return output


def pipeline(stages: list[str] | None = None, force: bool = False) -> dict:
    from prefect import task

    from tasks.store import repo_root

    root = repo_root()
    order = stage_order(root)
    if stages:
        unknown = sorted(set(stages) - set(order))
        if unknown:
            raise ValueError(f"unknown stage(s) {unknown}; dvc.yaml has {order}")
        order = [s for s in order if s in stages]
    results = {}
    for stage in order:
        stage_task = task(name=f"dvc repro {stage}", task_run_name=stage, cache_policy=None, retries=0)(repro_stage)
        output = stage_task(stage, str(root), force)
        results[stage] = "skipped (up to date)" if "didn't change" in output or "is cached" in output else "ran"
    return results


def describe(results: dict) -> str:
    return "\n".join(f"{stage}: {outcome}" for stage, outcome in results.items())


def build_flow():
    from prefect import flow

    return flow(name="pipeline", flow_run_name="pipeline", log_prints=True)(pipeline)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = cli.ArgumentParser(prog="python -m flows.pipeline", description=__doc__.splitlines()[0])
    parser.add_argument("stages", nargs="*", help="only these stages (default: the whole DAG)")
    parser.add_argument("--force", action="store_true", help="pass --force to dvc repro")
    parser.add_argument("--list", action="store_true", help="print the stage order and exit")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from flows import _env

    root = _env.configure()
    from tasks.params import load_params

    # params.yaml's domains feed dvc.yaml's matrices: a bad entry is one line here, not a crash inside DVC
    if run_main(lambda: load_params(root / "params.yaml")):
        return cli.EXIT_INPUT
    if args.list:
        print("\n".join(stage_order(root)))
        return 0
    return run_main(lambda: print(describe(build_flow()(stages=args.stages or None, force=args.force))))


if __name__ == "__main__":
    sys.exit(main())

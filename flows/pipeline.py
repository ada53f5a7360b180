"""pipeline: run the DVC DAG as Prefect tasks, each stage a ``dvc repro --single-item <stage>``, two at a time where
the DAG allows, so each stage shows in the Prefect UI.

``dvc.yaml`` stays the only DAG: the stage graph is read from it. DVC holds its repo lock only while it checks and
records a stage, not while the stage's command runs (``dvc --wait-for-lock`` waits for the other's turn), so two
stages with no path between them run side by side: the three constructions, and the three evaluations with the
question analysis. A stage whose ``meta`` in dvc.yaml says ``runs_alone: true`` (SFT and GRPO: training uses every
core, and a job beside it halves its speed without changing its result) starts only when nothing else runs, and
nothing starts beside it. Among the ready stages the one heading the longest chain of work starts first (each
stage's seconds from its last run, ``data/metrics/timings/stages/``, or on the reference machine before its first
run here). A stage that fails stops the run: no stage starts after it, the running ones finish. ``--jobs 1`` runs
the stages one after another.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flows import cli
from flows.cli import run_main

DEFAULT_JOBS = 2
"""Stages at once: two cores' worth (the project's reference machine); ``--jobs`` sets it."""


@dataclass(frozen=True)
class StageGraph:
    order: list[str]
    """Stage names (``construct@swe``, ``report``) in a deterministic topological order."""
    upstream: dict[str, frozenset[str]]
    """Each stage's direct dependencies (stages whose outputs it reads)."""
    alone: frozenset[str]
    """Stages that run with nothing beside them (``meta: {runs_alone: true}``)."""


def stage_graph(root: Path) -> StageGraph:
    import networkx as nx
    from dvc.repo import Repo

    with Repo(str(root)) as repo:
        graph = repo.index.graph  # edges point from a stage to the stages it depends on
        names = {stage: stage.addressing for stage in graph.nodes}
        order = nx.lexicographical_topological_sort(graph.reverse(copy=True), key=lambda s: names[s])
        return StageGraph(
            order=[names[stage] for stage in order],
            upstream={names[s]: frozenset(names[d] for d in graph.successors(s)) for s in graph.nodes},
            alone=frozenset(names[s] for s in graph.nodes if (getattr(s, "meta", None) or {}).get("runs_alone")))


def stage_order(root: Path) -> list[str]:
    """Stage names in a deterministic topological order."""
    return stage_graph(root).order


REFERENCE_SECONDS = Path("benchmarks") / "results" / "fresh_clone" / "alone.json"
"""Each stage's seconds in a fresh clone's ``make run`` on the project's 2-core machine (``benchmarks/fresh_clone.py``,
committed): the scheduling hint for a stage that has not run here yet."""


def last_seconds(root: Path) -> dict[str, float]:
    """Each stage's wall time in its last run here (``data/metrics/timings/stages/<stage>.json``), else on the
    reference machine (:data:`REFERENCE_SECONDS`); a stage in neither counts 1 s."""
    import json

    from tasks.stage_times import read

    try:
        seconds = {k: float(v) for k, v in json.loads((root / REFERENCE_SECONDS).read_text())["stages"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        seconds = {}
    seconds.update({row["stage"]: float(row["seconds"]) for row in read(root)})
    return seconds


def chain_seconds(graph: StageGraph, seconds: Mapping[str, float]) -> dict[str, float]:
    """For each stage, the seconds of the longest chain of stages that starts with it (itself included)."""
    downstream: dict[str, list[str]] = {s: [] for s in graph.order}
    for stage, ups in graph.upstream.items():
        for up in ups:
            downstream[up].append(stage)
    chain: dict[str, float] = {}
    for stage in reversed(graph.order):
        chain[stage] = seconds.get(stage, 1.0) + max((chain[d] for d in downstream[stage]), default=0.0)
    return chain


def run_graph(graph: StageGraph, start: Callable[[str], Any], first_done: Callable[[list[Any]], Any], *,
              jobs: int, seconds: Mapping[str, float] | None = None) -> dict[str, Any]:
    """Start every stage of ``graph`` (``start(stage)`` -> a future with ``.result()``; ``first_done(futures)`` -> one
    that has finished), at most ``jobs`` at once, each after its upstream stages, a ``runs_alone`` stage with nothing
    beside it; ready stages start longest chain first (``seconds``: each stage's last wall time). Returns each
    stage's result in ``graph.order``. The first stage that raises stops the run: nothing starts after it, the
    running stages finish, then its exception is raised."""
    jobs = max(1, jobs)
    rank = chain_seconds(graph, seconds or {})
    position = {s: k for k, s in enumerate(graph.order)}
    done: dict[str, Any] = {}
    running: dict[Any, str] = {}
    failure: BaseException | None = None
    while True:
        if failure is None:
            ready = sorted((s for s in graph.order if s not in done and s not in running.values()
                            and graph.upstream.get(s, frozenset()) <= done.keys()),
                           key=lambda s: (-rank[s], position[s]))
            for stage in ready:
                if len(running) >= jobs or any(r in graph.alone for r in running.values()):
                    break
                if stage in graph.alone and running:
                    break  # it waits for the running stages, and nothing else starts before it
                running[start(stage)] = stage
        if not running:
            break
        future = first_done(list(running))
        stage = running.pop(future)
        try:
            done[stage] = future.result()
        except BaseException as err:  # noqa: BLE001 - raised once the running stages have finished
            failure = failure or err
            done[stage] = None
    if failure is not None:
        raise failure
    return {s: done[s] for s in graph.order}


def dvc_command() -> list[str]:
    return [sys.executable, "-m", "dvc", "--wait-for-lock"]


THREAD_VARIABLES = ("CLARIFYFLOW_TORCH_THREADS", "OMP_NUM_THREADS")
"""Set for a stage that may run beside another (unless the user set them): torch's and the math libraries' thread
count, the stage's share of the cores. Two stages each on every core would oversubscribe them (a generation batch on
two threads beside a busy core took 3x as long as on one, docs/setup.md); a generation phase still takes the cores
free when it starts (``tasks.training.threads.generation_threads``)."""


def stage_threads(stage: str, graph: StageGraph, jobs: int) -> int | None:
    """The thread count of a stage that may run beside another (its share of the cores); None for one that runs
    alone or when one stage runs at a time."""
    if jobs <= 1 or stage in graph.alone:
        return None
    from tasks.training.threads import usable_cores

    return max(1, usable_cores() // jobs)


_OUTPUT = threading.Lock()
"""One stage's output line at a time on stdout."""


def repro_stage(stage: str, root: str, force: bool = False, threads: int | None = None) -> str:
    """Run one stage through DVC; DVC decides whether it is up to date. Its output is shown as it comes, each line
    led by the stage's name (two stages may run at once), and returned. ``threads``: set the thread variables
    (those the user has not set) for the stage's process. (Not an environment parameter: a task's parameters
    reach the Prefect server, and the environment may hold keys.)"""
    cmd = [*dvc_command(), "repro", "--single-item", stage]
    if force:
        cmd.append("--force")
    env = dict(os.environ)
    if threads is not None:
        for name in THREAD_VARIABLES:
            env.setdefault(name, str(threads))
    lines = []
    with subprocess.Popen(cmd, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          errors="replace", env=env) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            with _OUTPUT:
                sys.stdout.write(f"{stage} | {line.rstrip()}\n")
                sys.stdout.flush()
    output = "".join(lines).strip()
    if proc.returncode != 0:
        raise RuntimeError(f"dvc repro {stage} failed with exit code {proc.returncode}:\n{output[-2000:]}")
    return output


def pipeline(stages: list[str] | None = None, force: bool = False, jobs: int = DEFAULT_JOBS) -> dict:
    from prefect import task
    from prefect.futures import as_completed

    from tasks.store import repo_root

    root = repo_root()
    graph = stage_graph(root)
    if stages:
        unknown = sorted(set(stages) - set(graph.order))
        if unknown:
            raise ValueError(f"unknown stage(s) {unknown}; dvc.yaml has {graph.order}")
        chosen = [s for s in graph.order if s in stages]
        graph = StageGraph(order=chosen, upstream={s: graph.upstream[s] & set(chosen) for s in chosen},
                           alone=graph.alone & set(chosen))

    def start(stage: str) -> Any:
        stage_task = task(name=f"dvc repro {stage}", task_run_name=stage, cache_policy=None, retries=0)(repro_stage)
        return stage_task.submit(stage, str(root), force, stage_threads(stage, graph, jobs))

    outputs = run_graph(graph, start, lambda futures: next(as_completed(futures)), jobs=jobs,
                        seconds=last_seconds(root))
    return {stage: "skipped (up to date)" if "didn't change" in output or "is cached" in output else "ran"
            for stage, output in outputs.items()}


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
    parser.add_argument("--jobs", type=int, default=DEFAULT_JOBS,
                        help=f"stages run at once where the DAG allows (default {DEFAULT_JOBS}; 1: one after another)")
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
    return run_main(lambda: print(describe(build_flow()(stages=args.stages or None, force=args.force,
                                                                    jobs=args.jobs))))


if __name__ == "__main__":
    sys.exit(main())

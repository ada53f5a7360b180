"""params.yaml: cluster -> the task runner of a fan-out (the multi-process runs are in tests/test_evaluate.py)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tasks.cluster import ClusterParams, cluster_kwargs, task_runner


def test_the_default_cluster_is_two_worker_processes_without_a_dashboard():
    kwargs = cluster_kwargs(ClusterParams())
    assert kwargs["processes"] is True and kwargs["n_workers"] == 2 and kwargs["threads_per_worker"] == 4
    assert kwargs["dashboard_address"] is None
    inproc = cluster_kwargs(ClusterParams(processes=False, workers=3, threads_per_worker=2))
    assert inproc["processes"] is False and inproc["n_workers"] == 1 and inproc["threads_per_worker"] == 6


def test_runners_follow_the_params(prefect_api):  # imports prefect: the server fixture comes first
    from prefect.task_runners import ThreadPoolTaskRunner
    from prefect_dask import DaskTaskRunner

    threads = task_runner("threads", concurrency=3)
    assert isinstance(threads, ThreadPoolTaskRunner) and threads._max_workers == 3
    local = task_runner("dask", concurrency=3, cluster=ClusterParams(workers=4))
    assert isinstance(local, DaskTaskRunner) and local.cluster_kwargs["n_workers"] == 4
    remote = task_runner("dask", concurrency=3, cluster=ClusterParams(address="tcp://127.0.0.1:8786"))
    assert remote.address == "tcp://127.0.0.1:8786"
    with pytest.raises(ValueError):
        task_runner("serial", concurrency=1)


def test_the_old_per_evaluation_dask_address_says_where_it_moved():
    from tasks.evaluation.runs import EvalSettings

    with pytest.raises(ValidationError, match=r"moved to cluster\.address"):
        EvalSettings(methods=[{"name": "freeqa"}], dask_address="tcp://127.0.0.1:8786")
    assert "dask_address" not in EvalSettings(methods=[{"name": "freeqa"}], dask_address=None).model_dump()


def test_params_yaml_has_a_cluster_block():
    from tasks.params import load_params
    from tests.conftest import ROOT

    assert load_params(ROOT / "params.yaml").cluster == ClusterParams()


def test_the_readme_dask_address_example_gives_the_serial_metrics(tmp_path, prefect_api):
    """README *Running on a cluster*, as written: ``dask scheduler`` and ``dask worker --nworkers 2 --nthreads 1``
    as separate processes on a free loopback port, then an evaluation with ``cluster.address`` set; the metrics
    equal the serial run's, and both worker processes played units."""
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    from distributed import Client
    from prefect import flow

    from tasks import prefect_server
    from tasks.clarifiers.base import OPTIMIZATION_CONTEXT
    from tasks.evaluation.evaluate import play
    from tasks.evaluation.metrics import summarise
    from tasks.evaluation.runs import EvalSettings, episode_store, load_cases
    from tasks.roles.config import RolesParams
    from tests.conftest import ROOT

    port = prefect_server.free_port()
    address = f"tcp://127.0.0.1:{port}"
    dask = str(Path(sys.executable).parent / "dask")
    env = {**os.environ, "PREFECT_API_URL": prefect_api}
    cases = load_cases(ROOT / "tests" / "data" / "or_cases.jsonl", limit=2)
    settings = EvalSettings(methods=[{"name": "freeqa", "protocols": ["open"]}], repeats=2, bootstrap=200)

    def run(runner: str, store: str, cluster=None) -> dict:
        results, stats = play(cases, settings, RolesParams(), episode_store(tmp_path / store),
                              domain=OPTIMIZATION_CONTEXT, runner=runner, cluster=cluster)
        assert stats.computed == len(results) == 4
        summary = summarise([r.episode for r in results], [r.judge for r in results], n_resamples=200)
        wall = {"LatencySeconds", "LatencyPerRunSeconds"}  # wall time is never reproduced
        return {row: {k: v for k, v in m.items() if k not in wall} for row, m in summary.items()}

    procs = []
    try:
        procs.append(subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", str(port)], cwd=ROOT,
                                      env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        procs.append(subprocess.Popen([dask, "worker", address, "--nworkers", "2", "--nthreads", "1"], cwd=ROOT,
                                      env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        with Client(address, timeout=60) as client:
            client.wait_for_workers(2, timeout=60)
        from tasks.cluster import ClusterParams

        cluster = ClusterParams(address=address)
        on_dask = flow(name="eval-readme-dask-address")(lambda: run("dask", "dask", cluster))()
        with Client(address, timeout=60) as client:
            executed = client.run(lambda dask_worker: len(dask_worker.state.log))
    finally:
        for proc in reversed(procs):  # the worker (and its nannies' children) first, then the scheduler
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
    assert on_dask == run("serial", "serial")
    assert len(executed) == 2 and all(n > 0 for n in executed.values()), executed

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


def test_runners_follow_the_params():
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

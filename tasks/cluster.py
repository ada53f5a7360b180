"""Where a fan-out runs: Prefect's thread pool, or a Dask cluster of worker processes (``params.yaml: cluster``).

Every fan-out (episode evaluation in each domain, SWE question evaluation, construction chunks, the annotator) takes
its Prefect task runner from :func:`task_runner`. ``dask`` starts a ``distributed.LocalCluster`` of ``workers``
processes with ``threads_per_worker`` threads each, or connects to the scheduler at ``address``. A worker that dies
mid-task (SIGKILL, out of memory) is replaced by its nanny and the scheduler runs its tasks again elsewhere; the
stores the tasks write (one file per entry, renamed into place; SQLite in WAL mode) keep what finished.

A remote cluster needs, on every worker: this project installed at the same commit (``pip install -e .``), the
repository folder at the same path (the stores live under ``.cache/`` and ``data/``: put them on a shared
filesystem), the same ``PREFECT_API_URL`` as the flow, and the environment variables the roles' backends read.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Runner = Literal["threads", "dask", "serial"]


class ClusterParams(BaseModel):
    """``params.yaml: cluster``: the Dask cluster the stages whose ``task_runner`` is ``dask`` run on."""

    model_config = ConfigDict(extra="forbid")

    address: str | None = None
    """An existing scheduler (``tcp://host:8786``); None starts a local cluster for the stage."""
    workers: int = Field(default=2, ge=1)
    """Worker processes of the local cluster."""
    threads_per_worker: int = Field(default=4, ge=1)
    """Threads in each worker process (the work is mostly waiting on LLM calls)."""
    processes: bool = True
    """False: one worker of threads inside the flow's process (debugging; nothing is pickled)."""


def cluster_kwargs(cluster: ClusterParams) -> dict[str, Any]:
    """``distributed.LocalCluster`` arguments: no dashboard (no port to collide on), Dask's own logs at WARNING."""
    if not cluster.processes:
        return {"n_workers": 1, "threads_per_worker": cluster.workers * cluster.threads_per_worker,
                "processes": False, "dashboard_address": None, "silence_logs": logging.WARNING}
    return {"n_workers": cluster.workers, "threads_per_worker": cluster.threads_per_worker, "processes": True,
            "dashboard_address": None, "silence_logs": logging.WARNING}


def task_runner(runner: Runner, *, concurrency: int, cluster: ClusterParams | None = None) -> Any:
    """The Prefect task runner of a fan-out: ``threads`` -> ``ThreadPoolTaskRunner(concurrency)``; ``dask`` ->
    ``DaskTaskRunner`` on ``cluster`` (``serial`` has none: the caller runs the work in its own thread)."""
    if runner == "threads":
        from prefect.task_runners import ThreadPoolTaskRunner

        return ThreadPoolTaskRunner(max_workers=concurrency)
    if runner == "dask":
        from prefect_dask import DaskTaskRunner

        cluster = cluster or ClusterParams()
        if cluster.address:
            return DaskTaskRunner(address=cluster.address)
        return DaskTaskRunner(cluster_kwargs=cluster_kwargs(cluster))
    raise ValueError(f"no task runner for {runner!r}")

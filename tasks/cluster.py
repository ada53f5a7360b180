"""Where a fan-out runs: Prefect's thread pool, or a Dask cluster of worker processes (``params.yaml: cluster``).

Every fan-out runs its units through :func:`fan_out` on the Prefect task runner its params key names
(:func:`task_runner`): episode evaluation (``evaluate.<domain>.task_runner``), SWE question batches
(``evaluate.swe.task_runner``), construction chunks (``construct.<domain>.task_runner``) and the annotator's chunks
(``construct.swe.annotate_runner``). ``dask`` starts a ``distributed.LocalCluster`` of ``workers``
processes with ``threads_per_worker`` threads each, or connects to the scheduler at ``address``. A worker that dies
mid-task (SIGKILL, out of memory) is replaced by its nanny and the scheduler runs its tasks again elsewhere; the
stores the tasks write (one file per entry, renamed into place; SQLite in WAL mode) keep what finished.

A remote cluster needs, on every worker: this project installed at the same commit (``pip install -e .``), the
repository folder at the same path (the stores live under ``.cache/`` and ``data/``: put them on a shared
filesystem), the same ``PREFECT_API_URL`` as the flow, and the environment variables the roles' backends read.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tasks.errors import ClarifyflowError

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

    @field_validator("address")
    @classmethod
    def _address(cls, value: str | None) -> str | None:
        """A Dask scheduler address (``tcp://``, ``tls://``, ``ucx://``, ``ws(s)://``), without credentials."""
        if value is None:
            return None
        from tasks.llm.redact import url_credentials

        scheme, sep, rest = value.partition("://")
        if not sep or scheme not in SCHEDULER_SCHEMES or not rest.strip("/"):
            raise ValueError(f"a Dask scheduler address such as tcp://host:8786 (scheme one of "
                             f"{', '.join(SCHEDULER_SCHEMES)})")
        found = url_credentials(value)
        if found:
            raise ValueError(f"the scheduler address must not carry credentials ({found})")
        return value


SCHEDULER_SCHEMES = ("tcp", "tls", "ucx", "ws", "wss")


class ClusterUnreachable(ClarifyflowError):
    """The scheduler at ``cluster.address`` did not answer (or the local cluster did not start)."""


def cluster_kwargs(cluster: ClusterParams) -> dict[str, Any]:
    """``distributed.LocalCluster`` arguments: no dashboard (no port to collide on), Dask's own logs at WARNING."""
    if not cluster.processes:
        return {"n_workers": 1, "threads_per_worker": cluster.workers * cluster.threads_per_worker,
                "processes": False, "dashboard_address": None, "silence_logs": logging.WARNING}
    return {"n_workers": cluster.workers, "threads_per_worker": cluster.threads_per_worker, "processes": True,
            "dashboard_address": None, "silence_logs": logging.WARNING}


def task_runner(runner: Runner, *, concurrency: int | None, cluster: ClusterParams | None = None) -> Any:
    """The Prefect task runner of a fan-out: ``threads`` -> ``ThreadPoolTaskRunner(concurrency)`` (None: Prefect's
    default, ``PREFECT_TASK_RUNNER_THREAD_POOL_MAX_WORKERS`` or unbounded); ``dask`` -> ``DaskTaskRunner`` on
    ``cluster`` (``serial`` has none: the caller runs the work in its own thread)."""
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


def fan_out(task: Any, calls: Sequence[dict[str, Any]], *, runner: Runner, concurrency: int | None = None,
            cluster: ClusterParams | None = None) -> Iterator[tuple[Any, Any]]:
    """Run the Prefect ``task`` once per parameter dict of ``calls`` (inside a flow): yields each call's result and
    final state (``Completed``, ``Cached``) in call order, whatever order they finish in; a failed call raises.

    ``threads`` and ``dask`` submit every call at once to :func:`task_runner`; ``serial`` runs them one after another
    in this thread. The task and its parameters travel to the worker processes under ``dask``: a module-level
    function of picklable arguments (pydantic records, JSON)."""
    if runner == "serial":
        for parameters in calls:
            state = task(**parameters, return_state=True)
            yield state.result(), state
        return
    with _entered(task_runner(runner, concurrency=concurrency, cluster=cluster), runner, cluster) as pool:
        futures = [pool.submit(task, parameters=parameters) for parameters in calls]
        for future in futures:
            result = future.result()  # the final state is set once the result is in
            yield result, future.state


def _entered(pool: Any, runner: Runner, cluster: ClusterParams | None):
    """``pool`` as a context manager whose start-up failure (a scheduler that does not answer) is one line."""
    import contextlib

    @contextlib.contextmanager
    def entered():
        try:
            started = pool.__enter__()
        except (OSError, TimeoutError) as err:
            from tasks.llm.redact import redact

            where = f"cluster.address {cluster.address}" if cluster and cluster.address else "the local Dask cluster"
            reason = redact(str(err).splitlines()[0] if str(err) else type(err).__name__)
            raise ClusterUnreachable(f"task_runner {runner}: could not reach {where}: {reason[:200]}") from None
        try:
            yield started
        except BaseException as err:
            if not pool.__exit__(type(err), err, err.__traceback__):
                raise
        else:
            pool.__exit__(None, None, None)

    return entered()

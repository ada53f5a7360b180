"""params.yaml: cluster -> the task runner of a fan-out; SWE question batches, construction chunks and the annotator
on a real multi-process cluster equal their serial runs (the episode evaluation's are in tests/test_evaluate.py)."""

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
    assert task_runner("threads", concurrency=None)._max_workers > 1_000_000  # Prefect's default: unbounded
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


def test_params_yaml_runs_every_fan_out_where_it_ran_before_it_had_a_key():
    """Construction (chunks and the annotator) on Prefect's thread pool, evaluate@swe's batches in the flow's
    thread."""
    from tasks.domains import get_domain
    from tasks.evaluation.question_inputs import QuestionSettings
    from tasks.params import load_params
    from tests.conftest import ROOT

    params = load_params(ROOT / "params.yaml")
    for name in params.domains:
        cfg = get_domain(name).parse_params(ROOT / "params.yaml", params.construct_[name])
        assert (cfg.task_runner, cfg.concurrency) == ("threads", None), name
    assert get_domain("swe").parse_params(ROOT / "params.yaml", params.construct_["swe"]).annotate_runner == "threads"
    assert QuestionSettings.model_validate(params.evaluate["swe"]).task_runner == "serial"


def test_the_readme_dask_address_example_gives_the_serial_metrics(tmp_path, prefect_api):
    """docs/cluster.md, as written: ``dask scheduler`` and ``dask worker --nworkers 2 --nthreads 1``
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
    from tasks.domains.optimization.context import OPTIMIZATION_CONTEXT
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


# ---- every fan-out on a real multi-process cluster equals its serial run -----------------------------------------


@pytest.fixture(scope="module")
def two_workers(prefect_api):
    """Two single-threaded worker processes of a real LocalCluster, reached by address (the flow pickles no cluster
    object); yields ``(ClusterParams, tasks run so far)``."""
    from distributed import Client, LocalCluster

    def executed() -> int:  # through a client of its own: one left open would become the one prefect-dask uses
        with Client(local.scheduler_address) as client:
            return sum(client.run(lambda dask_worker: dask_worker.state.executed_count).values())

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as local:
        yield ClusterParams(address=local.scheduler_address), executed


def _no_wall_time(value):
    """``value`` without its wall-time figures (``latency_s``, ``seconds``), which no run reproduces."""
    if isinstance(value, dict):
        return {k: _no_wall_time(v) for k, v in value.items() if k not in ("latency_s", "seconds")}
    if isinstance(value, list):
        return [_no_wall_time(v) for v in value]
    return value


def test_swe_question_batches_on_the_cluster_equal_the_serial_run(tmp_path, two_workers):
    import shutil

    from prefect import flow

    from tasks.evaluation.question_inputs import load_question_inputs
    from tasks.evaluation.question_lists import evaluate_questions
    from tasks.roles.config import RolesParams
    from tests.test_swe_eval import METHODS, project, without_latency

    cluster, executed = two_workers
    methods = [m for m in METHODS if m.get("method") != "policy"]  # a policy loads a model: tests/test_swe_eval.py
    root, serial = project(tmp_path, methods, batch_size=2)  # 4 cases: two batches per method

    def run(settings, out: str) -> dict:
        shutil.rmtree(root / ".cache", ignore_errors=True)  # no stored units: every batch is computed
        inputs = load_question_inputs(root, settings, domain="swe")
        return evaluate_questions(inputs.cases, settings, RolesParams(), tmp_path / out, root=root, inputs=inputs,
                            cluster=cluster)

    before = executed()
    on_dask = flow(name="swe-batches-on-dask")(
        lambda: run(serial.model_copy(update={"task_runner": "dask"}), "dask"))()
    assert executed() - before == 2 * len(methods)  # one task per batch, all on the workers
    on_threads = flow(name="swe-batches-on-threads")(
        lambda: run(serial.model_copy(update={"task_runner": "threads"}), "threads"))()
    plain = run(serial, "serial")
    assert on_dask["run"]["computed"] == on_threads["run"]["computed"] == plain["run"]["computed"] == 16
    for name in ("summary.json", "rows.jsonl", "report.md"):
        expected = without_latency(tmp_path / "serial" / name)
        assert without_latency(tmp_path / "dask" / name) == expected, name
        assert without_latency(tmp_path / "threads" / name) == expected, name


def _construct(domain: str, cfg, runner: str, cluster) -> tuple[list[dict], dict, dict]:
    """``construct@<domain>`` on ``runner`` (every cached task recomputed), in a flow: cases, metrics, task counts."""
    from prefect import flow

    from tasks.domains import get_domain
    from tasks.roles.config import RolesParams
    from tests.conftest import ROOT

    cfg = cfg.model_copy(update={"task_runner": runner} | ({"annotate_runner": runner} if domain == "swe" else {}))

    def body():
        return get_domain(domain).construct(cfg, ROOT, roles=RolesParams(), refresh_cache=True, cluster=cluster)

    result = flow(name=f"construct-{domain}-{runner}")(body)()
    return [c.model_dump(mode="json") for c in result.cases], _no_wall_time(result.metrics), result.stats.model_dump()


def test_construction_chunks_on_the_cluster_equal_the_serial_run(two_workers):
    from tasks.domains.optimization.domain import OptimizationConstructParams

    cluster, executed = two_workers
    cfg = OptimizationConstructParams(limit=4, chunk_size=2)
    before = executed()
    on_dask = _construct("optimization", cfg, "dask", cluster)
    assert executed() - before == 2  # both chunks ran on the workers
    assert on_dask[2]["executed"] == 3  # the load task (in the flow) and the two chunks
    assert on_dask == _construct("optimization", cfg, "serial", cluster) == _construct("optimization", cfg,
                                                                                          "threads", cluster)


def test_the_annotator_and_masking_chunks_on_the_cluster_equal_the_serial_run(tmp_path, two_workers):
    """construct@swe over raw issues: the annotator tags them in chunks, then the masker's chunks make the cases."""
    import json

    from tasks.params import SweConstructParams
    from tests.conftest import SAMPLES

    cluster, executed = two_workers
    raw = tmp_path / "raw.jsonl"
    rows = [json.loads(line) for line in SAMPLES.read_text().splitlines()[:4]]
    raw.write_text("".join(json.dumps({k: v for k, v in r.items() if k not in ("spans", "present")}) + "\n"
                           for r in rows))
    cfg = SweConstructParams(samples_path=str(raw), on_unannotated="annotate", chunk_size=2)
    before = executed()
    on_dask = _construct("swe", cfg, "dask", cluster)
    assert executed() - before == 4  # two annotator chunks, then two masking chunks
    assert on_dask[1]["annotated_issues"] == 4 and on_dask[0]
    assert on_dask == _construct("swe", cfg, "serial", cluster)

"""evaluate@optimization: the loop's information boundary, resume after a real kill, the flow, the published cases."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tasks.domains.optimization.context import OPTIMIZATION_CONTEXT
from tests.conftest import ROOT, RUN_TIMEOUT_S, SHARED, python, tiny_params, write_params


def opt_ctx(**kw):
    """A method context in the optimisation domain (given explicitly: a MethodContext has no default domain)."""
    from tasks.clarifiers.base import MethodContext

    return MethodContext(domain=OPTIMIZATION_CONTEXT, **kw)

DRIVER = ROOT / "tests" / "eval_driver.py"
OR_CASES = SHARED / "data" / "or-clarify"
HEADLINE = ("AllSlotExactRestoreRate", "CoreExactRestoreRate", "WeightedSlotScore_macro", "AtomicQuestionsPerRun",
            "AverageTurns", "SilentAssumptionsPerRun", "PrematureStopRate", "ReadyRate")


def _case(**overrides):
    from tasks.records import Brief, Case, CaseMetadata, HiddenSlot, Unit

    units = [
        Unit(id="U1", kind="context", content="We roast coffee in two roasters and plan next week's batches."),
        Unit(id="U2", kind="data", content="Roaster R1 takes 20 minutes per batch; roaster R2 takes 30 minutes."),
        Unit(id="U3", kind="constraint", content="Each roaster runs at most 8 hours per day."),
        Unit(id="U4", kind="objective", content="Minimise the total roasting cost for the week."),
    ]
    slots = [
        HiddenSlot(slot_id="H1", name="roaster_daily_hour_limit", severity="P1", unit_ids=["U3"],
                   simulator_answer="Each roaster can run for at most 8 hours a day.",
                   reference_questions=["How many hours per day can each roaster run at most?"],
                   semantic_hit_rule="Asks about a daily running-time limit of the roasters."),
        HiddenSlot(slot_id="H2", name="minimise_total_roasting_cost", severity="P0", unit_ids=["U4"],
                   simulator_answer="We want the cheapest plan: minimise total roasting cost.",
                   reference_questions=["Should the plan minimise the total roasting cost?"],
                   semantic_hit_rule="Asks what the plan should optimise."),
    ]
    brief = Brief(content="We roast coffee in two roasters and plan next week's batches. Roaster R1 takes 20 minutes "
                          "per batch; roaster R2 takes 30 minutes.", visible_unit_ids=["U1", "U2"])
    data = {"metadata": CaseMetadata(benchmark="test", case_id="coffee_001", domain="optimization",
                                      source_id="coffee"),
                "units": units, "hidden_slots": slots, "brief": brief, "full_text": " ".join(u.content for u in units)}
    data.update(overrides)
    return Case(**data)


def _headline(summary: dict) -> dict:
    return {row: {k: v for k, v in metrics.items() if k in HEADLINE} for row, metrics in summary.items()}


def test_the_agent_never_sees_hidden_information():
    """Every view an agent gets carries only the brief and the public transcript."""
    from tasks.clarifiers.base import BaseAgent
    from tasks.episodes.records import AgentAction
    from tasks.evaluation.episode_loop import run_episode

    seen = []

    class Spy(BaseAgent):
        def act(self, view):
            seen.append(view)
            if view.turn == 1:
                return AgentAction(kind="ask", question="What should the weekly plan optimise?")
            return AgentAction(kind="ready", summary="Plan batches.")

    class SpyMethod:
        name, protocols, uses_detector, privileged = "spy", ("open",), True, False

        def new_agent(self, case_id, brief, protocol, *, seed, ctx):
            return Spy()

    case = _case()
    episode = run_episode(case, SpyMethod(), "open", repeat=1, seed=0, max_turns=5, ctx=opt_ctx())
    assert episode.ready and episode.turn_count == 2 and episode.atomic_questions == 1
    hidden_texts = [s.simulator_answer for s in case.hidden_slots] + [u.content for u in case.units[2:]]
    first = seen[0].model_dump_json()
    assert all(text not in first for text in hidden_texts)
    # the user's answer (a hidden fact, asked for) is public once given; audit fields are not
    second = seen[1]
    assert [r.speaker for r in second.transcript] == ["agent", "user"]
    assert "disclosed" not in second.model_dump_json() and "match_status" not in second.model_dump_json()
    assert episode.question_turns[0].disclosed_slot_ids == ["H2"]


def test_choice_questions_without_three_distinct_options_are_protocol_failures():
    from tasks.clarifiers.base import BaseAgent
    from tasks.episodes.records import AgentAction
    from tasks.evaluation.episode_loop import run_episode

    class Two(BaseAgent):
        def act(self, view):
            return AgentAction(kind="ask", question="Which objective?", options={"A": "Cost", "B": "Profit"})

    class TwoMethod:
        name, protocols, uses_detector, privileged = "two", ("mc_d",), True, False

        def new_agent(self, case_id, brief, protocol, *, seed, ctx):
            return Two()

    episode = run_episode(_case(), TwoMethod(), "mc_d", repeat=1, seed=0, max_turns=5, ctx=opt_ctx())
    assert episode.protocol_failure is not None and episode.protocol_failure.type == "agent_format_invalid"
    assert not episode.ready and episode.transcript == []


def test_bad_evaluate_params_give_one_line_and_exit_2(project):
    params = tiny_params()
    params["evaluate"]["optimization"]["methods"] = [{"name": "freeqa", "protocols": ["mc"]}]
    write_params(project, params)
    proc = python(project, "-m", "flows.evaluate", "--domain", "optimization", check=False)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "evaluate.optimization.methods.0.protocols" in lines[0], proc.stderr
    params["evaluate"]["optimization"]["methods"] = [{"name": "nonsense"}]
    write_params(project, params)
    proc = python(project, "-m", "flows.evaluate", "--domain", "optimization", check=False)
    assert proc.returncode == 2 and "unknown method 'nonsense'" in proc.stderr
    assert not (project / "data" / "eval").exists()


def _driver(tmp: Path, name: str, cases: Path) -> tuple[list[str], dict]:
    cache = tmp / f"{name}-cache"
    env = dict(os.environ, CLARIFYFLOW_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT))
    cmd = [sys.executable, str(DRIVER), "--cases", str(cases), "--store", str(tmp / f"{name}-store"),
           "--out", str(tmp / f"{name}.json"), "--call-log", str(tmp / f"{name}.calls"), "--latency", "0.02"]
    return cmd, env


def _calls(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


@pytest.mark.slow  # 50-100 s of subprocess episodes; the flow test covers resuming too
def test_a_killed_evaluation_resumes_without_repeating_episodes_or_calls(tmp_path):
    cases = ROOT / "tests" / "data" / "or_cases.jsonl"
    cmd, env = _driver(tmp_path, "straight", cases)
    subprocess.run(cmd, env=env, check=True, timeout=RUN_TIMEOUT_S)
    straight = json.loads((tmp_path / "straight.json").read_text())
    total = _calls(tmp_path / "straight.calls")
    assert total > 20 and straight["played"] > 0

    cmd, env = _driver(tmp_path, "killed", cases)
    proc = subprocess.Popen(cmd, env=env)
    log = tmp_path / "killed.calls"
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while _calls(log) < total // 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "the run finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = _calls(log)
    assert 0 < before < total
    subprocess.run(cmd, env=env, check=True, timeout=RUN_TIMEOUT_S)
    resumed = json.loads((tmp_path / "killed.json").read_text())
    assert resumed["reused"] > 0, "finished units must come from the store"
    assert _headline(resumed["summary"]) == _headline(straight["summary"])
    # serial runner: at most the one call in flight at the kill is sent again
    assert total <= _calls(log) <= total + 1, (total, before, _calls(log))


def check_optimization_outputs(project, output: str, rows: set[str], interopt_runs: int) -> None:
    """What evaluate@optimization publishes (``output``: the run's stdout), and that a rerun plays nothing and writes
    the same summary. Called by the whole-DAG test (tests/test_pipeline.py) after `make run`'s path, with its
    methods and case count."""
    assert "played" in output, output
    out = project / "data" / "eval" / "optimization"
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["rows"]) == rows
    assert summary["reference_rows"] == {}
    # the episodes packed: one JSONL and one Inspect log, no run folders unless run_folders: true
    assert not (out / "runs").exists()
    from tasks.evaluation.episodes_jsonl import read_episodes

    records = read_episodes(out / "episodes.jsonl")
    assert len(records) == sum(v["RunCount"] for v in summary["rows"].values())
    interopt = [r for r in records if r.unit.startswith("runs/mc_d/interopt/run_01/")]
    assert len(interopt) == interopt_runs and "ledger_events" in interopt[0].episode.method_events
    assert (out / "episodes.eval").stat().st_size > 1000 or not importlib.util.find_spec("inspect_ai")
    report = (out / "report.md").read_text()
    assert "mc_d::interopt" in report and "local" in report
    assert (out / "recovery.png").stat().st_size > 1000
    # the curves as `dvc plots` records (dvc.yaml: the stage's plots), one series per protocol::method
    records = json.loads((project / "data" / "plots" / "evaluate" / "optimization" / "recovery.json").read_text())
    assert {r["series"] for r in records} == set(summary["rows"])
    curves = json.loads((out / "recovery.json").read_text())
    assert len(records) == len(curves["questions"]) * len(curves["curves"])
    metrics = json.loads((project / "data" / "metrics" / "stages" / "evaluate" / "optimization.json").read_text())
    assert metrics["episodes"] == sum(v["RunCount"] for v in summary["rows"].values())
    assert set(metrics["rows"]) == set(summary["rows"]) and metrics["reference_rows"] == {}
    again = python(project, "-m", "flows.evaluate", "--domain", "optimization")
    assert "(0 played" in again.stdout, again.stdout
    assert json.loads((out / "summary.json").read_text()) == summary


# ---- the 100 published cases (realdata) --------------------------------------------------------------------------


def _published(method: str, protocol: str, *, repeats: int = 1, store: Path, limit: int | None = None):
    from tasks.evaluation.evaluate import play
    from tasks.evaluation.metrics import summarise
    from tasks.evaluation.runs import EvalSettings, episode_store, load_cases
    from tasks.roles.config import RolesParams

    cases = load_cases(OR_CASES, limit=limit)
    settings = EvalSettings(methods=[{"name": method, "protocols": [protocol]}], repeats=repeats, bootstrap=200,
                            task_runner="serial")
    results, _ = play(cases, settings, RolesParams(), episode_store(store), domain=OPTIMIZATION_CONTEXT,
                      runner="serial")
    return summarise([r.episode for r in results], [r.judge for r in results], {c.case_id: c for c in cases},
                     n_resamples=200, seed=0)[f"{protocol}::{method}"]


@pytest.mark.realdata
@pytest.mark.slow  # 100 cases twice, about 28 s; the ladder's floor on the same cases stays in the default suite
def test_oracle_recovers_the_published_slots(tmp_path):
    row = _published("oracle", "open", store=tmp_path / "s")
    assert row["RunCount"] == 100 and row["CoreEligibleRunCount"] == 94
    assert row["AllSlotExactRestoreRate"] >= 0.95
    again = _published("oracle", "open", store=tmp_path / "fresh")
    wall = {"LatencySeconds", "LatencyPerRunSeconds"}  # wall time, never reproduced by a fresh store
    assert {k: v for k, v in again.items() if k not in wall} == {k: v for k, v in row.items() if k not in wall}


@pytest.mark.realdata
def test_ready_at_once_scores_zero_and_always_stops_prematurely(tmp_path):
    # the first 25 published cases: a cold judge's embeddings of all 100 took 74 s of a CI run
    row = _published("ready_now", "mc_d", store=tmp_path / "s", limit=25)
    assert row["RunCount"] == 25
    assert row["AllSlotExactRestoreRate"] == 0.0 and row["CoreExactRestoreRate"] == 0.0
    assert row["PrematureStopRate"] == 1.0 and row["AtomicQuestionsPerRun"] == 0.0


def _dask_comparison(tmp_path, repeats: int = 1, killed: bool = False):
    from tasks.evaluation.evaluate import play
    from tasks.evaluation.metrics import summarise
    from tasks.evaluation.runs import EvalSettings, episode_store, load_cases
    from tasks.roles.config import RolesParams

    cases = load_cases(ROOT / "tests" / "data" / "or_cases.jsonl", limit=2)
    settings = EvalSettings(methods=[{"name": "freeqa"}, {"name": "interopt", "protocols": ["mc_d"]}],
                            repeats=repeats, bootstrap=200, concurrency=2)

    def run(runner: str, store: str, cluster=None) -> dict:
        results, stats = play(cases, settings, RolesParams(), episode_store(tmp_path / store),
                              domain=OPTIMIZATION_CONTEXT, runner=runner, cluster=cluster)
        assert stats.computed + stats.reused == len(results) == 4 * repeats
        if not killed:  # a killed worker may have stored a unit whose completion it never reported: reused on retry
            assert stats.reused == 0
        return summarise([r.episode for r in results], [r.judge for r in results], n_resamples=200)

    return run


def _worker_pids(address: str) -> dict[str, int]:
    """Worker address -> process id, through a client of its own (a client left open in the flow's process would
    become the one prefect-dask submits through)."""
    from distributed import Client

    with Client(address) as client:
        return client.run(os.getpid)


def test_the_same_units_on_a_multi_process_dask_cluster_give_the_same_metrics(tmp_path, prefect_api):
    """Two worker processes (a real LocalCluster on loopback, reached by address as a remote one would be) play
    the units; the metrics equal the serial run's, and both workers did some of the work."""
    from distributed import Client, LocalCluster
    from prefect import flow

    from tasks.cluster import ClusterParams

    run = _dask_comparison(tmp_path)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as local:
        pids = _worker_pids(local.scheduler_address)
        assert len(set(pids.values())) == 2 and os.getpid() not in pids.values()
        cluster = ClusterParams(address=local.scheduler_address)  # the flow captures no cluster object (pickled)
        on_dask = flow(name="eval-on-dask")(lambda: run("dask", "dask", cluster))()
        with Client(local.scheduler_address) as client:
            executed = client.run(lambda dask_worker: len(dask_worker.state.log))
    assert _headline(on_dask) == _headline(run("serial", "serial"))
    assert len(executed) == 2 and all(n > 0 for n in executed.values()), executed


@pytest.mark.slow  # about 50 s on 2 cores
def test_a_worker_killed_mid_run_is_replaced_and_the_metrics_equal_an_uninterrupted_run(tmp_path, prefect_api):
    """SIGKILL one of two worker processes once the first units are stored: its nanny starts a new worker, the
    scheduler runs its lost units again, and the metrics equal the serial run's."""
    import threading

    from distributed import LocalCluster
    from prefect import flow

    from tasks.cluster import ClusterParams

    run = _dask_comparison(tmp_path, repeats=3, killed=True)
    stored = tmp_path / "dask"
    out: dict = {}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as local:
        before = _worker_pids(local.scheduler_address)
        cluster = ClusterParams(address=local.scheduler_address)

        def evaluate_on_the_cluster() -> None:  # the flow's exception is kept: a thread would swallow it
            try:
                out["summary"] = flow(name="eval-killed-worker")(lambda: run("dask", "dask", cluster))()
            except BaseException as err:  # noqa: BLE001 - reported by the assertion below
                out["error"] = err

        worker = threading.Thread(target=evaluate_on_the_cluster)
        worker.start()
        deadline = time.monotonic() + RUN_TIMEOUT_S
        while not list(stored.rglob("*.json")) and time.monotonic() < deadline:
            time.sleep(0.05)
        done_at_kill = len(list(stored.rglob("*.json")))
        os.kill(next(iter(before.values())), signal.SIGKILL)
        worker.join(timeout=RUN_TIMEOUT_S)
        assert not worker.is_alive()
        local.wait_for_workers(2, timeout=60)
        after = _worker_pids(local.scheduler_address)
    assert 0 < done_at_kill < 12, done_at_kill  # the kill fell mid-run
    assert set(after.values()) != set(before.values())  # a new worker process took the dead one's place
    assert "summary" in out, f"the run on the cluster raised {out.get('error')!r}"
    assert _headline(out["summary"]) == _headline(run("serial", "serial"))


def test_reference_rows_stay_apart_in_the_summary_the_metrics_and_the_report(tmp_path):
    """The oracle (privileged) and the ready-now floor (a bound, here under another display name) are reported
    apart: never in the ranked rows of summary.json, the stage metrics or the report's methods table."""
    from tasks.evaluation import metrics as M
    from tasks.evaluation.episode_kind import headline as _episode_headline
    from tasks.evaluation.evaluate import play, write_outputs
    from tasks.evaluation.runs import EvalSettings, episode_store
    from tasks.evaluation.stage import metric_rows
    from tasks.roles.config import RolesParams
    from tasks.validation import gate

    case = _case()
    methods = [{"name": "freeqa", "protocols": ["open"]}, {"name": "oracle", "protocols": ["open"]},
               {"name": "floor", "method": "ready_now", "protocols": ["open"]}]
    settings = EvalSettings(methods=methods, repeats=1, bootstrap=100, task_runner="serial")
    results, _ = play([case], settings, RolesParams(), episode_store(tmp_path / "store"), domain=OPTIMIZATION_CONTEXT,
                      runner="serial")
    summary = write_outputs(tmp_path / "out", results, [case], settings, RolesParams(), domain=OPTIMIZATION_CONTEXT,
                            source="test")
    from tasks.stage_metrics import without_wall_clock

    # summary.json, a DVC output, holds no wall time; the returned summary does
    assert json.loads((tmp_path / "out" / "summary.json").read_text()) == without_wall_clock(summary)
    assert set(summary["rows"]) == {"open::freeqa"}
    reference = summary["reference_rows"]
    assert {k: v["reference"]["kind"] for k, v in reference.items()} == {"open::oracle": "privileged",
                                                                          "open::floor": "bound"}
    assert reference["open::oracle"]["AllSlotExactRestoreRate"] == 1.0  # it read the hidden slots
    assert reference["open::floor"]["AtomicQuestionsPerRun"] == 0.0

    metrics = metric_rows(summary["rows"], summary["reference_rows"], _episode_headline)
    assert set(metrics["rows"]) == {"open::freeqa"} and set(metrics["reference_rows"]) == set(reference)
    assert metrics["reference_rows"]["open::oracle"]["reference"]["reads"].startswith("the hidden slots")

    report = (tmp_path / "out" / "report.md").read_text()
    ranked, rest = report.split("## Results", 1)[1].split("### Reference rows (not ranked)", 1)
    assert "| `open::freeqa` |" in ranked and "oracle" not in ranked and "floor" not in ranked
    block = rest.split("## Slot judgements", 1)[0]
    assert "| `open::oracle` | privileged | the hidden slots" in block and "| `open::floor` | bound | nothing" in block
    gate("or_summary", M.summary_frame(summary), artifact="summary")  # the gate reads the new layout


def test_units_computed_again_write_the_same_bytes_as_the_first_run(tmp_path):
    """Issue 43's probe: two runs of evaluate@optimization differed in 244 files by latency fields only. The
    episodes are played twice from empty stores (so their wall times differ) and the outputs must be the same bytes:
    wall time goes to the returned summary and data/metrics/timings, never to a DVC output."""
    from tasks.evaluation.evaluate import play, write_outputs
    from tasks.evaluation.runs import EvalSettings, episode_store
    from tasks.roles.config import RolesParams

    case = _case()
    settings = EvalSettings(methods=[{"name": "freeqa", "protocols": ["open"]}], repeats=1, bootstrap=100,
                            task_runner="serial")
    files, latencies = [], []
    for k in range(2):
        results, _ = play([case], settings, RolesParams(), episode_store(tmp_path / f"store{k}"),
                          domain=OPTIMIZATION_CONTEXT, runner="serial")
        summary = write_outputs(tmp_path / f"out{k}", results, [case], settings, RolesParams(),
                                domain=OPTIMIZATION_CONTEXT, source="test")
        latencies.append(summary["rows"]["open::freeqa"]["LatencySeconds"])
        files.append({p.relative_to(tmp_path / f"out{k}").as_posix(): p.read_bytes()
                      for p in sorted((tmp_path / f"out{k}").rglob("*")) if p.is_file() and p.suffix != ".eval"})
    assert latencies[0] > 0 and latencies[1] > 0  # measured each time (and the returned summaries carry it)
    assert set(files[0]) >= {"summary.json", "episodes.jsonl", "report.md"}
    assert files[0] == files[1]

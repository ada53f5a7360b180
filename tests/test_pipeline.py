"""Orchestration against a real Prefect server: the pipeline flow, DVC incrementality, task caching, the gate,
and the served deployment's cron schedule."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time

import pytest
import yaml

from tests.conftest import dvc, python, run, tiny_params, write_params
from tests.test_evaluate import check_optimization_outputs
from tests.test_shap_stage import check_shap_outputs
from tests.test_stage_deps import (
    TRACE_ENV,
    install_trace,
    stage_deps,
    traced_stage_files,
    uncovered,
)

pytestmark = pytest.mark.prefect


def _cases(repo):
    return (repo / "data" / "cases" / "swe" / "cases.jsonl").read_text().splitlines()


HEAVY = ("prefect", "torch", "transformers", "litellm", "great_expectations", "dvc")


def test_flow_help_answers_without_importing_anything_heavy(project):
    """``--help`` must stay instant: it answers before Prefect, torch or litellm load (checked by what the process
    imported, not by a clock, so a busy machine cannot fail it)."""
    probe = ("import sys, runpy\nsys.argv = [sys.argv[1], '--help']\n"
             "try:\n    runpy.run_module(sys.argv[0], run_name='__main__')\nexcept SystemExit:\n    pass\n"
             f"print('HEAVY', sorted(m for m in {HEAVY!r} if m in sys.modules))")
    for module in ("construct", "evaluate", "train", "report", "pipeline", "serve", "new_domain", "shap_stage",
                   "sft_data", "question_analysis"):
        proc = python(project, "-c", probe, f"flows.{module}")
        assert "usage:" in proc.stdout, module
        assert "HEAVY []" in proc.stdout, (module, proc.stdout.splitlines()[-1])


def test_an_exited_server_child_is_not_alive():
    """stop() waits until the server is gone; a child that exited but was not reaped yet must count as gone."""
    from tasks.prefect_server import _pid_alive

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with open(f"/proc/{proc.pid}/stat") as stat:
            if stat.read().split(")")[-1].split()[0] == "Z":
                break  # exited, not reaped: kill(pid, 0) still succeeds here
        time.sleep(0.05)
    assert not _pid_alive(proc.pid)
    assert not _pid_alive(proc.pid)  # already reaped: still gone


def dag_params() -> dict:
    """``tiny_params`` cut to the fewest cases, turns, tokens and methods that still load every stage's code: the DAG
    test checks that every stage runs, loads only its declared deps and is a DVC no-op afterwards, not the
    evaluations' numbers (tests/test_evaluate.py, test_analytics.py and test_swe_eval.py do). InterOPT (the widest
    agent) and the trained policy stay in, and GRPO's held-out curve on one case (the flow's wiring of it)."""
    params = tiny_params()
    params["training"]["overrides"]["sft"]["max_length"] = 128
    params["training"]["overrides"]["grpo"]["max_completion_length"] = 8
    params["training"]["heldout"] = {"every": 1, "max_new_tokens": 8, "limit": 1}
    params["evaluate"]["optimization"].update({"limit": 1, "max_turns": 3, "methods": [
        {"name": "interopt", "protocols": ["mc_d"]}]})
    params["evaluate"]["analytics"].update({"limit": 1, "max_turns": 3,
                                            "methods": [{"name": "freeqa", "protocols": ["open"]}]})
    params["evaluate"]["swe"].update({"limit": 1, "methods": [
        {"name": "no_questions"}, {"name": "oracle_template"},
        {"name": "grpo_policy", "method": "policy",
         "options": {"adapter": "data/models/grpo/adapter", "max_new_tokens": 8}}]})
    return params


@pytest.mark.long
def test_pipeline_flow_runs_the_dag_then_dvc_is_a_noop(project, prefect_api, tmp_path, monkeypatch):
    write_params(project, dag_params())
    order = python(project, "-m", "flows.pipeline", "--list").stdout.split()
    assert order == ["construct@analytics", "construct@optimization", "construct@swe", "shap", "sft_data", "sft",
                     "grpo", "evaluate@analytics", "evaluate@optimization", "evaluate@swe", "question_analysis",
                     "report"]
    traces = tmp_path / "import-traces"
    install_trace(project, traces)
    monkeypatch.setenv(TRACE_ENV, str(traces))
    proc = python(project, "-m", "flows.pipeline")
    monkeypatch.delenv(TRACE_ENV)
    assert "construct@swe: ran" in proc.stdout and "report: ran" in proc.stdout
    assert "construct@optimization: ran" in proc.stdout and "shap: ran" in proc.stdout
    assert "sft_data: ran" in proc.stdout and "sft: ran" in proc.stdout and "grpo: ran" in proc.stdout
    assert "evaluate@optimization: ran" in proc.stdout and "evaluate@swe: ran" in proc.stdout
    assert "question_analysis: ran" in proc.stdout
    assert "construct@analytics: ran" in proc.stdout and "evaluate@analytics: ran" in proc.stdout
    check_shap_outputs(project, proc.stdout)
    # the analytics stages, as a user's `make run` would run them (their CLIs have no test of their own)
    assert re.search(r"construct@analytics: \d+ cases", proc.stdout), proc.stdout
    analytics = json.loads((project / "data" / "eval" / "analytics" / "summary.json").read_text())
    assert set(analytics["rows"]) == {"open::freeqa"} and analytics["reference_rows"] == {}
    metrics = json.loads((project / "data" / "metrics" / "stages" / "evaluate" / "analytics.json").read_text())
    assert metrics["episodes"] == analytics["rows"]["open::freeqa"]["RunCount"] >= 1
    assert "local backends" in metrics["backend"]
    swe_summary = json.loads((project / "data" / "eval" / "swe" / "summary.json").read_text())
    assert "grpo_policy" in swe_summary["methods"]  # the trained adapter, evaluated as a clarifier
    assert (project / "data" / "eval" / "optimization" / "report.md").is_file()
    assert "evaluate@swe" in (project / "data" / "report" / "report.md").read_text()
    assert (project / "data" / "models" / "grpo" / "adapter" / "adapter_config.json").is_file()
    assert json.loads((project / "data" / "metrics" / "stages" / "grpo.json").read_text())["steps"] == 1
    curve = json.loads((project / "data" / "models" / "grpo" / "heldout_curve.json").read_text())
    assert [p["step"] for p in curve["points"]] == [0, 1]  # step 0 is SFT
    assert (project / "data" / "plots" / "grpo" / "heldout.json").is_file()
    assert len(list((project / "data" / "cases" / "optimization" / "toml").glob("*.toml"))) == 4
    cases = [json.loads(line) for line in _cases(project)]
    assert len(cases) == 8  # limit 4 issues x 2 variants
    assert (project / "data" / "report" / "report.md").read_text().startswith("# clarifyflow report")
    assert (project / "data" / "report" / "hidden_categories.png").stat().st_size > 1000
    # every stage's processes were traced, and each stage's deps cover every project file it loaded
    loaded = traced_stage_files(project, traces)
    assert set(loaded) == set(order), sorted(loaded)
    deps = stage_deps(project)
    missing = {stage: uncovered(files, deps[stage][1]) for stage, files in loaded.items()}
    assert missing == {stage: [] for stage in order}, missing
    (project / "sitecustomize.py").unlink()
    # evaluate@optimization's outputs, then its flow again by hand: every unit from the store, the same bytes (the
    # `dvc status` below sees no change)
    check_optimization_outputs(project, proc.stdout, rows={"mc_d::interopt"}, interopt_runs=1)
    status = dvc(project, "status").stdout
    assert "up to date" in status, status
    again = dvc(project, "repro").stdout
    assert "Data and pipelines are up to date" in again
    assert "Running stage" not in again

    # the flow runs are visible to the server
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs()
        names = {client.read_flow(r.flow_id).name for r in runs}
    assert {"pipeline", "construct", "report"} <= names

    # one param of one stage: DVC sees that stage changed and nothing else; rerunning it runs it alone
    run(project, "git", "add", "-A")
    run(project, "git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "first run")
    params = yaml.safe_load((project / "params.yaml").read_text())
    params["report"]["title"] = "another title"
    write_params(project, params)
    diff = dvc(project, "params", "diff").stdout
    assert re.search(r"report\.title\s+clarifyflow report\s+another title", diff), diff
    assert set(json.loads(dvc(project, "status", "--json").stdout)) == {"report"}
    out = dvc(project, "repro").stdout
    assert "Stage 'construct@swe' didn't change, skipping" in out
    assert "Running stage 'report'" in out and len(re.findall(r"Running stage", out)) == 1, out
    assert (project / "data" / "report" / "report.md").read_text().startswith("# another title")

    # a construction param: DVC sees that domain's construction changed and nothing else (its evaluation and the
    # report follow once its outputs change, as the report-title rerun above shows for one stage)
    params["construct"]["optimization"]["seed"] = 99
    write_params(project, params)
    changed = json.loads(dvc(project, "status", "--json").stdout)
    assert set(changed) == {"construct@optimization"}, changed

    metrics = dvc(project, "metrics", "show", "--json").stdout
    assert '"cases": 8' in metrics


def test_rerunning_a_stage_flow_executes_no_task_bodies(project, prefect_api):
    first = python(project, "-m", "flows.construct", "--domain", "swe").stdout
    assert re.search(r"8 cases .*\((\d+) task\(s\) executed, 0 from cache", first), first
    second = python(project, "-m", "flows.construct", "--domain", "swe").stdout
    assert "(0 task(s) executed, 3 from cache" in second, second

    # editing one issue's text re-runs only the load and the chunk holding it
    samples = project / "data" / "samples" / "swe" / "issues.jsonl"
    rows = samples.read_text().splitlines()
    first_issue = json.loads(rows[0])
    first_issue["text"] += "\n\nThanks for looking into this."
    rows[0] = json.dumps(first_issue)
    samples.write_text("\n".join(rows) + "\n")
    third = python(project, "-m", "flows.construct", "--domain", "swe").stdout
    assert "(2 task(s) executed, 1 from cache" in third, third


def test_failing_gate_keeps_previous_output(project, prefect_api, monkeypatch):
    python(project, "-m", "flows.construct", "--domain", "swe")
    before = _cases(project)
    metrics_before = (project / "data" / "metrics" / "stages" / "construct" / "swe.json").read_text()

    import pandas as pd

    from flows.construct import build_flow
    from tasks.domains.swe import SweDomain
    from tasks.errors import GateError

    original = SweDomain.validation_table

    def corrupted(self, result):
        name, table = original(self, result)
        table = pd.concat([table, table.head(1)], ignore_index=True)  # a duplicate case id
        table.loc[0, "leak_free"] = False
        return name, table

    monkeypatch.setattr(SweDomain, "validation_table", corrupted)
    monkeypatch.chdir(project)
    with pytest.raises(GateError) as err:
        build_flow()(domain="swe", refresh_cache=True)
    message = str(err.value)
    assert "expect_column_values_to_be_unique(case_id) 2 rows" in message
    assert "expect_column_values_to_be_in_set(leak_free) 1 rows" in message
    assert _cases(project) == before
    assert (project / "data" / "metrics" / "stages" / "construct" / "swe.json").read_text() == metrics_before
    assert not list((project / "data" / "cases").glob(".*staging*"))


def test_served_deployment_has_the_params_cron(project, prefect_api):
    params = yaml.safe_load((project / "params.yaml").read_text())
    params["schedule"]["cron"] = "15 4 * * 1"
    write_params(project, params)
    env_python = [sys.executable, "-m", "flows.serve", "--name", "nightly-test"]
    import os

    env = dict(os.environ, PYTHONPATH=str(project))
    env.pop("PREFECT_HOME", None)
    proc = subprocess.Popen(env_python, cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    try:
        from prefect.client.orchestration import get_client

        deadline = time.monotonic() + 120
        deployment = None
        with get_client(sync_client=True) as client:
            while time.monotonic() < deadline and deployment is None:
                try:
                    deployment = client.read_deployment_by_name("pipeline/nightly-test")
                except Exception:  # noqa: BLE001 - any failure means the deployment is not registered yet
                    assert proc.poll() is None, proc.stdout.read()
                    time.sleep(1)
        assert deployment is not None, "deployment never appeared"
        crons = [s.schedule.cron for s in deployment.schedules]
        assert crons == ["15 4 * * 1"]
        assert all(s.active for s in deployment.schedules)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_construct_annotates_raw_swebench_issues(project, prefect_api):
    """A local SWE-bench-format file with no annotations: the annotator role tags it, then it is masked."""
    samples = [json.loads(line)
               for line in (project / "data" / "samples" / "swe" / "issues.jsonl").read_text().splitlines()]
    raw = [{"instance_id": s["instance_id"], "repo": s.get("repo", ""), "problem_statement": s["text"],
            "hints_text": ""}
           for s in samples[:4]]
    (project / "raw.jsonl").write_text("".join(json.dumps(r) + "\n" for r in raw))
    params = yaml.safe_load((project / "params.yaml").read_text())
    params["construct"]["swe"].update({"source": "swebench", "swebench": {"path": "raw.jsonl", "split": "test"},
                                       "on_unannotated": "annotate"})
    write_params(project, params)
    out = python(project, "-m", "flows.construct", "--domain", "swe").stdout
    cases = [json.loads(line) for line in _cases(project)]
    assert len(cases) >= 6, out
    assert {c["metadata"]["source_id"] for c in cases} <= {r["instance_id"] for r in raw}
    metrics = json.loads((project / "data" / "metrics" / "stages" / "construct" / "swe.json").read_text())
    assert metrics["annotated_issues"] == 4 and metrics["annotation_failures"] == 0
    assert metrics["roles"]["annotator"]["backend"] == "local" and metrics["roles"]["annotator"]["requests"] == 4
    # (a second run from the task cache: test_rerunning_a_stage_flow_executes_no_task_bodies)

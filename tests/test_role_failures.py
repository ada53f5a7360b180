"""A role whose LLM backend fails too often stops its stage (roles.max_failure_rate); fallbacks are counted; stage
metrics hold no wall-clock fields (those go to data/metrics/timings/) and are byte-identical between runs."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.conftest import ROOT, python, tiny_params, write_params

FAILING = {"backend": "llm", "model": "mock/always-fails", "max_retries": 0, "max_regenerations": 0}
"""No mock script has this name: every call is a non-retryable provider error, i.e. a RoleFailure (100%)."""


def _construct_params(**roles) -> dict:
    params = tiny_params()
    params["construct"]["optimization"].update({"limit": 2, "chunk_size": 2})
    params["roles"].update(roles)
    return params


def _metrics(project, stage: str) -> bytes:
    return (project / "data" / "metrics" / "stages" / f"{stage}.json").read_bytes()


@pytest.mark.prefect
def test_a_rewriter_failing_every_call_stops_construct_and_keeps_the_earlier_outputs(project, prefect_api):
    write_params(project, _construct_params())
    python(project, "-m", "flows.construct", "--domain", "optimization")
    cases = project / "data" / "cases" / "optimization" / "cases.jsonl"
    before_cases, before_metrics = cases.read_bytes(), _metrics(project, "construct/optimization")

    write_params(project, _construct_params(rewriter=FAILING))
    proc = python(project, "-m", "flows.construct", "--domain", "optimization", check=False)
    assert proc.returncode == 3, proc.stderr
    [line] = [x for x in proc.stderr.splitlines() if x.startswith("error:")]
    assert "role rewriter failed 2 of 2 requests" in line and "rate 1.00" in line, line
    assert cases.read_bytes() == before_cases
    assert _metrics(project, "construct/optimization") == before_metrics

    # at or below the threshold the run publishes, counting every brief that fell back to the local join
    params = _construct_params(rewriter=FAILING)
    params["roles"]["max_failure_rate"] = 1.0
    write_params(project, params)
    python(project, "-m", "flows.construct", "--domain", "optimization")
    metrics = json.loads(_metrics(project, "construct/optimization"))
    assert metrics["fallbacks"] == {"rewriter": 2}
    rewriter = metrics["roles"]["rewriter"]
    assert rewriter["backend"] == "llm" and rewriter["failures"] == 2 and rewriter["fallbacks"] == 2

    from tasks.reporting.sections import _role_backend

    assert _role_backend(rewriter) == "llm mock/always-fails, temperature 0.0 (2 of 2 fell back to local)"


def _evaluate_params(project, **roles) -> dict:
    params = tiny_params()
    shutil.copy(ROOT / "tests" / "data" / "or_cases.jsonl", project / "or_cases.jsonl")
    params["evaluate"]["optimization"].update({
        "cases": "or_cases.jsonl", "limit": 1, "repeats": 1, "max_turns": 4, "bootstrap": 100, "concurrency": 1,
        "task_runner": "serial", "methods": [{"name": "freeqa", "protocols": ["open"]}],
    })
    params["roles"].update(roles)
    return params


@pytest.mark.prefect
def test_a_judge_failing_every_call_stops_evaluate_below_the_threshold_it_publishes(project, prefect_api):
    write_params(project, _evaluate_params(project, or_session_judge=FAILING))
    proc = python(project, "-m", "flows.evaluate", "--domain", "optimization", check=False)
    assert proc.returncode == 3, proc.stderr
    [line] = [x for x in proc.stderr.splitlines() if x.startswith("error:")]
    assert "role or_session_judge failed 1 of 1 requests" in line and "rate 1.00" in line, proc.stderr
    assert not (project / "data" / "eval" / "optimization").exists()
    assert not (project / "data" / "metrics" / "stages" / "evaluate" / "optimization.json").exists()

    params = _evaluate_params(project, or_session_judge=FAILING)
    params["roles"]["max_failure_rate"] = 1.0
    write_params(project, params)
    python(project, "-m", "flows.evaluate", "--domain", "optimization")
    metrics = json.loads(_metrics(project, "evaluate/optimization"))
    assert metrics["role_failures"] == {"or_session_judge": 1}
    assert metrics["fallbacks"] == {"or_question_selector": 0}
    assert "or_session_judge=mock/always-fails" in metrics["backend"]


def test_agent_failures_and_selector_fallbacks_are_counted_from_the_episodes():
    from types import SimpleNamespace

    from tasks.episodes.records import RoleUsage
    from tasks.evaluation.episode_kind import EVAL_ROLES
    from tasks.evaluation.stage import backend_line
    from tasks.llm.records import RoleConfig
    from tasks.roles.config import RolesParams
    from tasks.roles.failures import (
        RoleFailureRateError,
        check_failure_rates,
        episode_failure_counts,
        episode_fallbacks,
    )

    roles = RolesParams(or_question_selector=RoleConfig(backend="llm", model="mock/x"))
    results = [SimpleNamespace(
        episode=SimpleNamespace(usage={"or_question_selector": RoleUsage(requests=3, failures=3),
                                       "or_open_user": RoleUsage(requests=5)},  # local: never counted
                                counters={"selector_calls": 3.0, "selector_fallbacks": 1.0}),
        judge=SimpleNamespace(judge_failed=False, summary="")) for _ in range(2)]
    counts = episode_failure_counts(results, roles)
    assert [(c.role, c.failures, c.total) for c in counts] == [("or_question_selector", 6, 6)]
    with pytest.raises(RoleFailureRateError, match="role or_question_selector failed 6 of 6 requests"):
        check_failure_rates(counts, roles.max_failure_rate, stage="evaluate@optimization")
    check_failure_rates(counts, 1.0, stage="evaluate@optimization")  # 1.0: never fails
    fallbacks = episode_fallbacks(results)
    assert fallbacks == {"or_question_selector": 2}
    assert "or_question_selector=mock/x (2 selections fell back to Q1)" in backend_line(roles, EVAL_ROLES, fallbacks)


def test_metrics_that_cannot_be_written_stop_the_publish(tmp_path):
    from tasks.stage_metrics import metrics_path, publish_with_metrics, split_timings

    assert split_timings({"a": 1, "seconds": 2.5, "roles": {"r": {"requests": 3, "latency_s": 0.1}}}) == (
        {"a": 1, "roles": {"r": {"requests": 3}}}, {"seconds": 2.5, "roles": {"r": {"latency_s": 0.1}}})
    old = metrics_path(tmp_path, "construct/x")
    old.parent.mkdir(parents=True)
    old.write_text('{"cases": 1}\n')
    staging = tmp_path / "staging"
    staging.mkdir()
    (staging / "cases.jsonl").write_text("{}\n")
    with pytest.raises(TypeError):
        publish_with_metrics(staging, tmp_path / "cases", tmp_path, "construct/x", {"cases": object()})
    assert not (tmp_path / "cases").exists() and old.read_text() == '{"cases": 1}\n'

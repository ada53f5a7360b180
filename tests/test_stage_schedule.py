"""flows.pipeline's scheduler: two stages at once where the DAG allows, a runs_alone stage with nothing beside it,
the longest chain first, and a failing stage that stops the run after the running ones finish."""

from __future__ import annotations

import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path

import pytest

from flows.pipeline import StageGraph, chain_seconds, run_graph, stage_graph

ROOT = Path(__file__).resolve().parents[1]

# the shape of dvc.yaml's DAG, three domains
UPSTREAM = {
    "construct@a": set(), "construct@b": set(), "construct@swe": set(),
    "shap": {"construct@swe"}, "sft_data": {"construct@swe", "shap"}, "sft": {"sft_data"},
    "grpo": {"sft", "sft_data", "shap"},
    "evaluate@a": {"construct@a", "grpo"}, "evaluate@b": {"construct@b", "grpo"},
    "evaluate@swe": {"construct@swe", "grpo"}, "question_analysis": {"evaluate@swe"},
    "report": {"evaluate@a", "evaluate@b", "question_analysis"},
}
GRAPH = StageGraph(order=list(UPSTREAM), upstream={k: frozenset(v) for k, v in UPSTREAM.items()},
                   alone=frozenset({"sft", "grpo"}))


class Recorder:
    """Runs each stage as a short sleep on a thread pool and records which stages ran at the same time."""

    def __init__(self, fail: str | None = None):
        self.pool = ThreadPoolExecutor(max_workers=4)
        self.lock = threading.Lock()
        self.running: set[str] = set()
        self.together: list[frozenset[str]] = []
        self.started: list[str] = []
        self.fail = fail

    def run(self, stage: str) -> str:
        with self.lock:
            self.running.add(stage)
            self.started.append(stage)
            self.together.append(frozenset(self.running))
        time.sleep(0.03)
        with self.lock:
            self.running.discard(stage)
        if stage == self.fail:
            raise RuntimeError(f"{stage} failed")
        return f"{stage} done"

    def start(self, stage: str):
        return self.pool.submit(self.run, stage)

    @staticmethod
    def first_done(futures):
        return next(iter(wait(futures, return_when=FIRST_COMPLETED).done))


def test_two_at_once_where_the_dag_allows_and_training_alone():
    rec = Recorder()
    results = run_graph(GRAPH, rec.start, rec.first_done, jobs=2)
    assert results == {s: f"{s} done" for s in GRAPH.order}
    for k, stage in enumerate(rec.started):  # every stage started after all of its upstream stages
        assert UPSTREAM[stage] <= set(rec.started[:k])
    assert max(len(t) for t in rec.together) == 2
    assert all(len(t) == 1 for t in rec.together if t & GRAPH.alone), rec.together
    overlapped = set().union(*(t for t in rec.together if len(t) == 2))
    assert {"evaluate@a", "evaluate@b", "evaluate@swe"} & overlapped


def test_one_job_runs_the_stages_one_after_another():
    rec = Recorder()
    run_graph(GRAPH, rec.start, rec.first_done, jobs=1)
    assert all(len(t) == 1 for t in rec.together) and len(rec.started) == len(GRAPH.order)


def test_the_longest_chain_starts_first():
    seconds = {"construct@swe": 6, "shap": 8, "sft_data": 4, "sft": 130, "grpo": 65, "construct@b": 13,
               "construct@a": 5, "evaluate@b": 140, "evaluate@swe": 90, "question_analysis": 45, "evaluate@a": 65,
               "report": 5}
    chain = chain_seconds(GRAPH, seconds)
    assert chain["report"] == 5 and chain["evaluate@swe"] == 90 + 45 + 5 and chain["evaluate@b"] == 145
    rec = Recorder()
    run_graph(GRAPH, rec.start, rec.first_done, jobs=2, seconds=seconds)
    assert rec.started[0] == "construct@swe"  # heads sft and grpo
    after_grpo = rec.started[rec.started.index("grpo") + 1:]
    assert after_grpo[:2] == ["evaluate@b", "evaluate@swe"]  # 145 s, then 140 s with the question analysis
    assert after_grpo[2] == "evaluate@a"  # ready with question_analysis once evaluate@swe ends; the longer first


def test_a_failing_stage_stops_the_run_after_the_running_ones_finish():
    rec = Recorder(fail="construct@b")
    with pytest.raises(RuntimeError, match="construct@b failed"):
        run_graph(GRAPH, rec.start, rec.first_done, jobs=2)
    assert "sft" not in rec.started and "report" not in rec.started
    assert not rec.running  # nothing left running when the error is raised


def test_dvc_yaml_marks_the_training_stages_to_run_alone():
    graph = stage_graph(ROOT)
    assert graph.alone == {"sft", "grpo"}
    assert graph.upstream["question_analysis"] == {"evaluate@swe"}
    assert graph.upstream["evaluate@optimization"] >= {"grpo", "construct@optimization"}


def test_a_stage_beside_another_gets_its_share_of_the_cores(monkeypatch):
    from flows.pipeline import stage_threads
    from tasks.training import threads

    monkeypatch.setattr(threads, "usable_cores", lambda: 2)
    assert stage_threads("evaluate@b", GRAPH, jobs=2) == 1
    assert stage_threads("sft", GRAPH, jobs=2) is None  # alone: every core, as in a serial run
    assert stage_threads("evaluate@b", GRAPH, jobs=1) is None


def test_before_its_first_run_a_stage_is_ranked_by_the_reference_machine_seconds(tmp_path):
    """A fresh clone has no timings of its own: the committed fresh-clone figures rank the stages, and a stage's own
    last run wins once it has one."""
    import json

    from flows.pipeline import REFERENCE_SECONDS, last_seconds

    reference = tmp_path / REFERENCE_SECONDS
    reference.parent.mkdir(parents=True)
    reference.write_text(json.dumps({"stages": {"evaluate@b": 150.0, "evaluate@a": 70.0}}))
    assert last_seconds(tmp_path) == {"evaluate@b": 150.0, "evaluate@a": 70.0}
    own = tmp_path / "data" / "metrics" / "timings" / "stages"
    own.mkdir(parents=True)
    (own / "evaluate@a.json").write_text(json.dumps({"stage": "evaluate@a", "started": 1.0, "seconds": 200.0}))
    assert last_seconds(tmp_path) == {"evaluate@b": 150.0, "evaluate@a": 200.0}
    assert json.loads((ROOT / REFERENCE_SECONDS).read_text())["stages"]["sft"] > 0  # the committed figures

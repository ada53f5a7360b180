"""The evaluations' Inspect AI logs (tasks/evaluation/inspect_log.py), read back with Inspect's own reader, and the
per-method cost and efficiency figures (tokens, USD, latency, score per dollar / per question) of the summary."""

from __future__ import annotations

import json

import pytest

from tasks.domains.optimization.context import OPTIMIZATION_CONTEXT

pytest.importorskip("inspect_ai")

PRICE_IN, PRICE_OUT = 1e-6, 3e-6
"""USD per prompt / completion token of the priced mock model (litellm's cost map, via ``register_model``)."""
ROLES = ("or_generic_agent", "or_choice_agent", "or_gap_search", "or_candidate_agent", "or_question_selector",
         "or_open_gap_search", "or_open_candidate_agent", "or_open_user", "or_choice_user", "question_detector",
         "slot_hit_judge", "or_session_judge")


@pytest.fixture(scope="module")
def evaluation(tmp_path_factory):
    """One small evaluation on the scripted mock provider: every role on a priced model that answers with the
    role's local output after 2 ms; two methods x one case x two repeats."""
    import litellm

    from tasks.evaluation.evaluate import play, write_outputs
    from tasks.evaluation.runs import EvalSettings, episode_store
    from tasks.llm.client import LLMClient
    from tasks.llm.providers import ensure_registered
    from tasks.llm.providers.mock import replay_local
    from tasks.llm.records import RoleConfig
    from tasks.roles.config import RolesParams
    from tests.test_evaluate import _case

    ensure_registered()
    model = replay_local("priced-replay", latency_s=0.002)
    litellm.register_model({model: {"input_cost_per_token": PRICE_IN, "output_cost_per_token": PRICE_OUT,
                                    "litellm_provider": "mock", "mode": "chat", "max_tokens": 4096}})
    roles = RolesParams(**{r: RoleConfig(backend="llm", model=model, max_retries=0) for r in ROLES})
    tmp = tmp_path_factory.mktemp("inspect")
    case = _case()
    settings = EvalSettings(methods=[{"name": "freeqa", "protocols": ["open"]},
                                     {"name": "interopt", "protocols": ["mc_d"]}],
                            repeats=2, max_turns=6, bootstrap=100, task_runner="serial")
    store = episode_store(tmp / "store")
    client = LLMClient(use_cache=False)
    results, _ = play([case], settings, roles, store, domain=OPTIMIZATION_CONTEXT, client=client, runner="serial")
    out = tmp / "out"
    summary = write_outputs(out, results, [case], settings, roles, domain=OPTIMIZATION_CONTEXT, source="test")
    return {"out": out, "summary": summary, "results": results, "store": store, "client": client, "case": case}


def test_the_episode_log_reads_back_with_the_stores_messages_scores_and_ids(evaluation):
    from inspect_ai.log import read_eval_log

    from tasks.episodes.records import FIRST_MESSAGE
    from tasks.evaluation.episodes_jsonl import read_episodes

    out = evaluation["out"]
    assert not (out / "runs").exists()  # run folders only on request
    records = read_episodes(out / "episodes.jsonl")
    stored = {r.key: evaluation["store"].get(r.key) for r in records}
    assert all(stored.values()) and len(records) == len(evaluation["results"]) == 4

    log = read_eval_log(str(out / "episodes.eval"))
    assert log.status == "success" and log.eval.task == "evaluate@optimization"
    assert len(log.samples) == len(records)
    by_id = {(s.id, s.epoch): s for s in log.samples}
    for record in records:
        episode, judge = stored[record.key].episode, stored[record.key].judge
        # the JSONL is the store's record, less the wall time a DVC output never holds
        assert record.episode == _no_latency(episode) and record.judge == judge
        sample = by_id[(f"{episode.protocol}::{episode.method}::{episode.case_id}", episode.repeat)]
        assert len(sample.messages) == 1 + len(episode.transcript)
        assert sample.messages[0].text == FIRST_MESSAGE.format(brief=episode.brief)
        assert [m.role for m in sample.messages[1:]] == [
            "assistant" if r.speaker == "agent" else "user" for r in episode.transcript]
        assert [m.text for m in sample.messages[1:]] == [r.content for r in episode.transcript]
        assert sample.scores["weighted_slot_score"].value == judge.weighted_slot_score
        assert sample.scores["all_slot_exact"].value == float(judge.all_slot_exact)
        assert sample.scores["slots"].value == {s.slot_id: s.hit for s in judge.slot_scores}
        assert sample.scores["stopping"].value == judge.rule_based_status
        assert sample.metadata["key"] == record.key and sample.metadata["unit"] == record.unit
        assert set(sample.metadata["method_events"]) == set(episode.method_events)
        assert {e.source for e in sample.events} >= {*episode.method_events, "judge_input"}
        # per-role usage in Inspect's own records, the same tokens and cost as the episode's
        assert {r: (u.input_tokens, u.output_tokens) for r, u in sample.role_usage.items()} == {
            r: (u.prompt_tokens, u.completion_tokens) for r, u in episode.usage.items()}
        assert sum(u.total_cost for u in sample.role_usage.values()) == pytest.approx(
            sum(u.cost_usd for u in episode.usage.values()))
    # the results: one score group per protocol::method row with the summary's figures
    rows = evaluation["summary"]["rows"]
    groups = {s.name: s.metrics for s in log.results.scores}
    assert set(groups) == set(rows)
    for key, metrics in groups.items():
        for name in ("AllSlotExactRestoreRate", "WeightedSlotScore_macro", "TotalTokens", "EstimatedCostUSD",
                     "LatencySeconds", "ScorePerDollar"):
            assert metrics[name].value == rows[key][name], (key, name)
    from tasks.stage_metrics import without_wall_clock

    # the log (outside the outputs' hashes) keeps the wall time that summary.json, a DVC output, leaves out
    assert without_wall_clock(log.eval.metadata["summary"]) == json.loads((out / "summary.json").read_text())


def test_cost_tokens_and_latency_per_method_add_up(evaluation):
    """Each row's tokens, USD and latency are the sums over its episodes' role usage; USD is litellm's price of
    those tokens; score per dollar and per question follow from the row's own figures."""
    summary, results, client = evaluation["summary"], evaluation["results"], evaluation["client"]
    spent = {"calls": 0}
    for key, row in summary["rows"].items():
        protocol, method = key.split("::")
        usage = [u for r in results if (r.episode.protocol, r.episode.method) == (protocol, method)
                 for u in r.episode.usage.values()]
        prompt, completion = sum(u.prompt_tokens for u in usage), sum(u.completion_tokens for u in usage)
        assert prompt > 0 and completion > 0
        assert row["PromptTokens"] == prompt and row["CompletionTokens"] == completion
        assert row["TotalTokens"] == prompt + completion
        assert row["EstimatedCostUSD"] == pytest.approx(prompt * PRICE_IN + completion * PRICE_OUT, abs=1e-6)
        assert row["CostPerRunUSD"] == pytest.approx(row["EstimatedCostUSD"] / row["RunCount"], abs=1e-6)
        calls = sum(u.calls for u in usage)
        assert row["LatencySeconds"] == pytest.approx(sum(u.latency_s for u in usage), abs=1e-3)
        assert row["LatencySeconds"] >= 0.002 * calls  # every provider call slept 2 ms
        assert row["LatencyPerRunSeconds"] == pytest.approx(row["LatencySeconds"] / row["RunCount"], abs=1e-4)
        assert row["ScorePerDollar"] == pytest.approx(row["WeightedSlotScore_macro"] / row["CostPerRunUSD"],
                                                      rel=1e-3)
        if row["AtomicQuestionsPerRun"]:
            assert row["ScorePerQuestion"] == pytest.approx(
                row["WeightedSlotScore_macro"] / row["AtomicQuestionsPerRun"], rel=1e-5)
        spent["calls"] += calls
        assert row["ProviderCallsPerRun"] == pytest.approx(calls / row["RunCount"], abs=1e-6)
    # every call the mock provider answered is an episode's (a method's cost) or the judge's (the client's own
    # accounting; never part of a method's cost)
    from tasks.llm.providers.mock import MOCK

    judge = client.accounting.snapshot()
    assert set(judge) == {"slot_hit_judge", "or_session_judge"}
    assert spent["calls"] + sum(u["provider_calls"] for u in judge.values()) == MOCK.scripts.get("priced-replay").calls
    report = (evaluation["out"] / "report.md").read_text()
    assert "## Cost and efficiency" in report and "score / $" in report


def test_run_folders_on_request_hold_the_same_records(evaluation, tmp_path):
    from tasks.evaluation.episodes_jsonl import read_episodes, write_run_folders

    records = read_episodes(evaluation["out"] / "episodes.jsonl")
    write_run_folders(tmp_path, records)
    first = tmp_path / records[0].unit
    assert json.loads((first / "judge_result.json").read_text()) == records[0].judge.model_dump(mode="json")
    assert (first / "judge_prompt_user_message.md").read_text() == records[0].judge_input.rstrip() + "\n"
    assert len(list((tmp_path / "runs").rglob("transcript.json"))) == len(records)


def test_no_inspect_ai_skips_the_log_with_one_warning(evaluation, tmp_path, monkeypatch, capsys):
    from tasks.evaluation import inspect_log
    from tasks.evaluation.episodes_jsonl import read_episodes

    monkeypatch.setattr(inspect_log, "available", lambda: False)
    records = read_episodes(evaluation["out"] / "episodes.jsonl")
    assert inspect_log.write_episode_log(tmp_path / "e.eval", records, evaluation["summary"], {}, task="t") is None
    assert not (tmp_path / "e.eval").exists()
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and lines[0].startswith("warning: inspect_ai is not installed, e.eval not written")


def test_the_pipeline_report_shows_the_cost_table(evaluation, tmp_path):
    from tasks.reporting.inputs import ReportInputs
    from tasks.reporting.sections import eval_section

    folder = tmp_path / "data" / "eval" / "optimization"
    folder.mkdir(parents=True)
    (folder / "summary.json").write_text(json.dumps(evaluation["summary"]))
    section = eval_section(ReportInputs(metrics={}, root=tmp_path), set(), "optimization")
    [table] = [b for b in section.blocks if getattr(b, "caption", "") == "Cost and efficiency"]
    assert table.header[0] == "protocol::method" and "score / $" in table.header
    assert {row[0] for row in table.rows} == set(evaluation["summary"]["rows"])
    usd = table.header.index("est. cost (USD)")
    for row in table.rows:
        assert float(row[usd]) == pytest.approx(evaluation["summary"]["rows"][row[0]]["EstimatedCostUSD"],
                                                abs=1e-4)


def _no_latency(episode):
    """``episode`` with its role usage's wall time at the default, as ``episodes.jsonl`` writes it."""
    return episode.model_copy(update={"usage": {role: u.model_copy(update={"latency_s": 0.0})
                                                for role, u in episode.usage.items()}})

"""evaluate@swe cost and efficiency: each unit records the usage of the role calls made while computing it, and each
method row sums its units' usage into tokens, USD, latency, score per dollar and per question (summary, report,
rows and ``questions.eval``)."""

from __future__ import annotations

import json
import time

import pytest

from tasks.evaluation.question_inputs import load_question_inputs
from tasks.evaluation.question_lists import evaluate_questions
from tasks.evaluation.question_report import report_markdown
from tasks.evaluation.question_units import UNIT_ROLES, share_usage, usage_delta
from tasks.roles.config import RoleConfig, RolesParams
from tests.test_swe_eval import project

METHODS = [{"name": "no_questions"}, {"name": "ask_everything"}]


def _units(root):
    from tasks.evaluation.question_lists import unit_store
    from tasks.evaluation.question_units import QuestionUnit

    return [QuestionUnit.model_validate_json(p.read_text()) for p in unit_store(root, "swe").rglob("*.json")]


def test_share_usage_sums_to_the_chunk_and_weights_unit_roles_by_questions():
    delta = usage_delta({"swe_user": {"requests": 1, "prompt_tokens": 5}},
                        {"swe_user": {"requests": 5, "provider_calls": 4, "prompt_tokens": 105,
                                      "completion_tokens": 7, "cost_usd": 0.3, "latency_s": 2.0},
                         "llm_questioner": {"requests": 3, "provider_calls": 3, "prompt_tokens": 10},
                         "idle": {"requests": 0}})
    assert set(delta) == {"swe_user", "llm_questioner"} and delta["swe_user"]["prompt_tokens"] == 100
    shares = share_usage(delta, [3, 0, 1])
    assert sum(s["swe_user"].prompt_tokens for s in shares if "swe_user" in s) == 100
    assert sum(s["swe_user"].completion_tokens for s in shares if "swe_user" in s) == 7
    assert "swe_user" not in shares[1]  # no questions, no unit-role calls
    assert sum(s["swe_user"].cost_usd for s in shares if "swe_user" in s) == pytest.approx(0.3)
    assert [s["llm_questioner"].prompt_tokens for s in shares] == [4, 3, 3]  # evenly, largest remainder


def _check_rows_sum(summary, units):
    for name, m in {**summary["methods"], **summary["reference_methods"]}.items():
        own = [u for u in units if u.method == name]
        eff = m["efficiency"]
        rows = [r for u in own for r in u.usage.values()]
        assert eff["Cases"] == len(own)
        assert eff["PromptTokens"] == sum(r.prompt_tokens for r in rows)
        assert eff["CompletionTokens"] == sum(r.completion_tokens for r in rows)
        assert eff["TotalTokens"] == eff["PromptTokens"] + eff["CompletionTokens"]
        assert eff["EstimatedCostUSD"] == pytest.approx(sum(r.cost_usd for r in rows), abs=1e-6)
        assert eff["LatencySeconds"] == pytest.approx(sum(r.latency_s for r in rows), abs=1e-3)
        score = m.get("weighted_recovery")
        assert eff["Score"] == score
        if m.get("questions_per_issue"):
            assert eff["ScorePerQuestion"] == pytest.approx(score / m["questions_per_issue"], rel=1e-5)
        else:
            assert eff["ScorePerQuestion"] is None


def test_local_backends_cost_nothing_but_take_time(tmp_path):
    root, settings = project(tmp_path, METHODS)
    inputs = load_question_inputs(root, settings, domain="swe")
    summary = evaluate_questions(inputs.cases, settings, RolesParams(), tmp_path / "out", root=root, inputs=inputs)
    units = _units(root)
    asking = [u for u in units if u.method == "ask_everything"]
    assert all(set(u.usage) >= set(UNIT_ROLES) for u in asking)
    assert all(r.prompt_tokens == 0 and r.cost_usd == 0 for u in units for r in u.usage.values())
    _check_rows_sum(summary, units)
    eff = summary["methods"]["ask_everything"]["efficiency"]
    assert eff["TotalTokens"] == 0 and eff["EstimatedCostUSD"] == 0 and eff["LatencySeconds"] > 0
    assert eff["ScorePerDollar"] is None and eff["ScorePerQuestion"] is not None
    report = report_markdown(summary)
    assert "Cost and efficiency:" in report and "| ask_everything | 4 | 0 | 0 | 0.0000 |" in report
    from tasks.evaluation.cost_table import swe_summary_cost_rows

    table = swe_summary_cost_rows(summary)
    assert [r[0] for r in table] == ["ask_everything", "no_questions (reference)"]
    assert table[0][9] == "–"  # score / $ at zero cost
    from tasks.reporting.inputs import ReportInputs
    from tasks.reporting.sections import eval_section

    folder = tmp_path / "site" / "data" / "eval" / "swe"
    folder.mkdir(parents=True)
    (folder / "summary.json").write_text((tmp_path / "out" / "summary.json").read_text())
    section = eval_section(ReportInputs(metrics={}, root=tmp_path / "site"), set(), "swe")
    [block] = [b for b in section.blocks if getattr(b, "caption", "") == "Cost and efficiency"]
    # the published summary holds no wall time (identical reruns write identical bytes): latency cells are blank
    assert block.header[0] == "method" and block.rows == [[*r[:6], "–", "–", *r[8:]] for r in table]
    rows = [json.loads(line) for line in (tmp_path / "out" / "rows.jsonl").read_text().splitlines()]
    assert all(r["cost_usd"] == 0 and r["tokens"] == 0 and "usage" in r for r in rows)
    assert not any("latency_s" in r or "latency_s" in json.dumps(r["usage"]) for r in rows)


def test_llm_roles_record_tokens_per_unit_and_the_rows_sum_them(tmp_path):
    from tasks.llm.client import LLMClient
    from tasks.llm.providers import ensure_registered
    from tasks.llm.providers.mock import MockScript, register

    ensure_registered()
    model = register(f"swe-cost-{time.time_ns()}", MockScript(replay={}))
    llm = RoleConfig(backend="llm", model=model, max_retries=0)
    roles = RolesParams(**dict.fromkeys(UNIT_ROLES, llm))
    root, settings = project(tmp_path, METHODS)
    inputs = load_question_inputs(root, settings, domain="swe")
    client = LLMClient(use_cache=False)
    summary = evaluate_questions(inputs.cases, settings, roles, tmp_path / "out", root=root, inputs=inputs,
                                 client=client)
    units = _units(root)
    asking = [u for u in units if u.method == "ask_everything"]
    assert asking and all(u.usage[r].prompt_tokens > 0 and u.usage[r].completion_tokens > 0
                          for u in asking for r in UNIT_ROLES)
    assert all(not u.usage for u in units if u.method == "no_questions")
    _check_rows_sum(summary, units)
    eff = summary["methods"]["ask_everything"]["efficiency"]
    total = sum(client.accounting.snapshot()[r]["prompt_tokens"] + client.accounting.snapshot()[r]["completion_tokens"]
                for r in UNIT_ROLES)
    assert eff["TotalTokens"] == total > 0
    assert eff["EstimatedCostUSD"] == 0 and eff["ScorePerDollar"] is None  # the mock provider is unpriced
    from tasks.evaluation.inspect_log import SWE_LOG, available

    if available():
        from inspect_ai.log import read_eval_log

        log = read_eval_log(str(tmp_path / "out" / SWE_LOG))
        by_key = {f"{u.method}::{u.case_id}": u for u in units}
        for sample in log.samples:
            unit = by_key[sample.id]
            assert sample.metadata["tokens"] == sum(r.prompt_tokens + r.completion_tokens for r in unit.usage.values())
            assert set(sample.metadata["usage"]) == set(unit.usage)
        (score,) = [s for s in log.results.scores if s.name == "ask_everything"]
        assert score.metrics["TotalTokens"].value == total
        assert log.eval.metadata["summary"]["methods"]["ask_everything"]["efficiency"]["TotalTokens"] == total


def test_score_per_dollar_is_score_over_cost_per_case():
    from tasks.episodes.records import RoleUsage
    from tasks.evaluation.question_lists import efficiency
    from tasks.evaluation.question_units import QuestionUnit

    units = [QuestionUnit(key=str(k), method="m", case_id=str(k), source_id="s",
                     usage={"swe_user": RoleUsage(prompt_tokens=10, completion_tokens=2, cost_usd=0.01, latency_s=1)})
             for k in range(2)]
    eff = efficiency(units, {"weighted_recovery": 0.5, "questions_per_issue": 2.0})
    assert eff["CostPerCaseUSD"] == pytest.approx(0.01) and eff["ScorePerDollar"] == pytest.approx(50.0)
    assert eff["ScorePerQuestion"] == pytest.approx(0.25) and eff["TokensPerCase"] == 12
    assert efficiency(units, {"weighted_recovery": None})["ScorePerDollar"] is None

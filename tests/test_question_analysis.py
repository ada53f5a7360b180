"""question_analysis (CLARITI RQ2): the strategy tagger on hand-checked questions, the syntactic features, the
Wilson interval, the stage's question table, findings, gates and report blocks on a small invented rows.jsonl,
and (realdata) the workbook's published lists.

Every question here is written for these tests; none is taken from the CLARITI workbook.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tasks.analysis.features import features
from tasks.roles.strategy_tagger import tag

# question -> (evidence_based, specific, scoped, actionable), each checked by hand against the definitions in
# tasks/roles/strategy_tagger.py
TAGGED = {
    "Could you paste the full traceback you get when calling `load_config()`?": (True, True, True, True),
    "Can you share a minimal script that reproduces the crash?": (True, False, True, True),
    "What do you see when you run `widget --check` on the broken file?": (True, True, True, True),
    "Which version of widgetlib are you running (e.g. 2.4.1)?": (False, True, True, True),
    "What operating system do you use?": (False, True, True, True),
    "Which file defines the default timeout?": (False, True, True, False),
    "Does it still fail with the cache disabled?": (False, False, True, True),
    "Can you provide more details about the problem?": (False, False, False, False),
    "Is there anything else you can tell me about your setup?": (False, False, False, False),
    "Should we deprecate the old keyword or keep both spellings?": (False, False, True, False),
    "What approach would you prefer for the fix?": (False, False, True, False),
    "What is the expected result, and what should happen to existing users, and how should the docs change?":
        (False, False, False, False),
}


@pytest.mark.parametrize("question", list(TAGGED))
def test_the_strategy_tagger_on_hand_checked_questions(question):
    got = tag(question)
    assert (got.evidence_based, got.specific, got.scoped, got.actionable) == TAGGED[question], got


def test_the_tagger_runs_as_a_role_and_never_raises():
    from tasks.llm.records import RoleConfig, RoleFailure
    from tasks.roles.base import QuestionInput, run_role
    from tasks.roles.registry import get_spec

    spec = get_spec("strategy_tagger")
    [out] = run_role(spec, [QuestionInput(question="Please paste the error log.")], RoleConfig())
    assert not isinstance(out, RoleFailure) and out.evidence_based and out.actionable
    messages = spec.messages(QuestionInput(question="Which Python version?", issue_text="It breaks on import."))
    assert "evidence_based" in messages[0]["content"] and "It breaks on import." in messages[1]["content"]


def test_syntactic_features_on_hand_checked_questions():
    f = features("Does read_frame() fail on data/input.csv with pandas 2.1.0?")
    assert f.interrogative and not f.imperative and f.code_identifier and f.file_name and f.version_pattern
    assert not f.hedge and f.n_words == 8
    f = features("Please share the output of the failing command.")
    assert f.imperative and not f.interrogative and not f.code_identifier and not f.version_pattern
    f = features("Maybe you could tell us which build you use?")
    assert f.hedge and f.interrogative and not f.file_name


def test_wilson_interval():
    from tasks.analysis.findings import wilson

    low, high = wilson(5, 10)
    assert round(low, 4) == 0.2366 and round(high, 4) == 0.7634
    low, high = wilson(0, 10)
    assert low == 0.0 and round(high, 4) == 0.2775
    assert wilson(0, 0) == (0.0, 1.0)


GOOD = ["Could you paste the full traceback you get?", "Which version of widgetlib are you using (e.g. 2.4.1)?",
        "What do you see when you run `tool --check`?", "Can you share a minimal script that reproduces the crash?"]
VAGUE = ["Can you provide more details?", "Is there anything else you can tell me?",
         "What approach would you prefer?", "Should we deprecate the old keyword?"]


def write_rows(path: Path, cases: int = 24) -> Path:
    """Invented evaluate@swe rows: concrete questions are answerable, vague ones are not, in alternating order."""
    rows = []
    for method in ("sft_policy", "grpo_policy"):
        for c in range(cases):
            asked = [GOOD[c % 4], VAGUE[c % 4]] if c % 2 else [VAGUE[c % 4], GOOD[(c + 1) % 4], VAGUE[(c + 2) % 4]]
            rows.append({"method": method, "case_id": f"case{c}", "source_id": f"issue{c}", "skipped": None,
                         "questions": [{"question": q, "label": "error_info", "answerable": q in GOOD, "intent": k}
                                       for k, q in enumerate(asked)]})
    rows.append({"method": "no_questions", "case_id": "case0", "source_id": "issue0", "skipped": None,
                 "questions": []})
    rows.append({"method": "grpo_policy", "case_id": "train9", "source_id": "issue9", "skipped": "training issue",
                 "questions": []})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def analysed(tmp_path_factory):
    from tasks.analysis import stage
    from tasks.params import QuestionAnalysisParams
    from tasks.roles.config import RolesParams

    folder = tmp_path_factory.mktemp("qa")
    rows = write_rows(folder / "rows.jsonl")
    cfg = QuestionAnalysisParams(eval_rows=str(rows), use_workbook="never", max_position=3)
    out = folder / "out"
    out.mkdir()
    metrics = stage.run(cfg, RolesParams(), folder, out, progress=False, results_dir=folder / "gx")
    return metrics, json.loads((out / "findings.json").read_text()), out


def test_the_stage_tables_every_question_with_its_position_and_tags(analysed):
    import pandas as pd

    metrics, _, out = analysed
    table = pd.read_csv(out / "questions.csv")
    assert len(table) == metrics["questions"] == 24 * 5 * 2 // 2  # 12 lists of 2 and 12 of 3, for two methods
    assert set(table["question_set"]) == {"sft_policy", "grpo_policy"}  # asked-nothing and skipped rows add none
    assert table["position"].min() == 1 and (table["position"] <= table["list_length"]).all()
    assert {"evidence_based", "specific", "scoped", "actionable", "hedge", "version_pattern"} <= set(table.columns)
    for name in ("by_position.png", "by_strategy.png", "shap.png"):
        assert (out / name).read_bytes().startswith(b"\x89PNG")
    assert "strategy_tagger local" in metrics["backend"]


def test_the_findings_recover_the_planted_answerability(analysed):
    metrics, findings, _ = analysed
    evidence = {r["value"]: r for r in findings["by_property"] if r["property"] == "evidence_based"}
    assert evidence[True]["rate"] == 1.0 and evidence[False]["rate"] < 0.5
    assert evidence[True]["ci_low"] < 1.0  # a Wilson interval, not a point
    model = findings["model"]["evaluate@swe"]
    assert model["auc_mean"] > 0.9 and model["folds"] == 5
    assert metrics["verdicts"]["evaluate@swe:evidence_based"] == "agrees"
    positions = {r["position"] for r in findings["by_position"]}
    assert positions == {"1", "2", "3+"}


def test_the_gates_stop_a_broken_table(analysed):
    import pandas as pd

    from tasks.errors import GateError
    from tasks.validation import gate

    _, _, out = analysed
    table = pd.read_csv(out / "questions.csv")
    broken = table.assign(position=table["list_length"] + 1)
    with pytest.raises(GateError, match="list_length"):
        gate("question_rows", broken, artifact="data/analysis/questions/questions.csv")
    rates = pd.DataFrame([{"n": 4, "answerable": 2, "rate": 0.5, "ci_low": 0.6, "ci_high": 0.9}])
    with pytest.raises(GateError, match=r"greater_than_b\(rate\)"):
        gate("question_rates", rates, artifact="data/analysis/questions/findings.json")


def test_a_malformed_rows_file_names_the_file_and_line(tmp_path):
    from tasks.analysis.questions import eval_questions
    from tasks.errors import InputError

    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps({"method": "m", "case_id": "c", "source_id": "s", "questions": []}) + "\n"
                    + json.dumps({"method": "m", "case_id": "c2"}) + "\n")
    with pytest.raises(InputError, match=r"rows.jsonl.*line 2"):
        eval_questions(path)
    with pytest.raises(InputError, match="not found"):
        eval_questions(tmp_path / "absent.jsonl")


def test_the_report_sets_the_paper_beside_the_local_figures(analysed):
    from tasks.reporting.model import Figure, Table, Text
    from tasks.reporting.question_section import question_blocks

    _, findings, out = analysed
    blocks = question_blocks(findings, {"by_position.png": (out / "by_position.png").read_bytes()})
    tables = [b for b in blocks if isinstance(b, Table)]
    comparison = tables[0]
    assert comparison.header[-1] == "backend" and all("strategy_tagger local" in r[-1] for r in comparison.rows)
    assert {r[4] for r in comparison.rows} <= {"agrees", "disagrees", "inconclusive (intervals overlap)", "no data"}
    assert {r[2] for r in comparison.rows} == {"all", "sft_policy", "grpo_policy"}  # position: per set too
    assert all(t.header[-1] == "backend" for t in tables)
    assert [b.name for b in blocks if isinstance(b, Figure)] == ["figures/question-analysis-by_position.png"]
    assert findings["inputs"]["workbook_rows"] is None  # no workbook read
    noted = question_blocks({**findings, "inputs": {"workbook_rows": 100}}, {})
    assert any("the first 100 rows" in b.text for b in noted if isinstance(b, Text))


def test_the_stage_metrics_pass_their_schema(analysed):
    from tasks.validation.stage_metrics import check_stage_metrics

    metrics, _, _ = analysed
    check_stage_metrics("question_analysis", metrics, counts={"questions": metrics["questions"]})


@pytest.mark.realdata
def test_the_workbook_lists_are_judged_and_positioned():
    from tasks.analysis.questions import workbook_questions
    from tasks.params import QuestionAnalysisParams
    from tasks.roles.config import RolesParams
    from tests.conftest import SHARED

    cfg = QuestionAnalysisParams()
    listed = workbook_questions(SHARED / "data" / "clariti" / "data.xlsx", cfg.published, RolesParams(), limit=3,
                                progress=False)
    assert {q.question_set for q in listed} == set(cfg.published)
    for q in listed:
        assert 1 <= q.position <= q.list_length and q.source == "clariti_workbook"
        assert q.answerable is not None and q.category is not None


def test_a_failing_tagger_backend_is_counted_and_stops_the_stage_above_the_limit(tmp_path):
    from tasks.analysis import stage
    from tasks.llm.cache import CallCache
    from tasks.llm.client import LLMClient
    from tasks.llm.providers import ensure_registered
    from tasks.llm.providers.mock import MockScript, register
    from tasks.llm.records import RoleConfig
    from tasks.params import QuestionAnalysisParams
    from tasks.roles.config import RolesParams
    from tasks.roles.failures import RoleFailureRateError

    ensure_registered()
    model = register(f"broken-tagger-{tmp_path.name}", MockScript(rule=lambda messages: "not json"))
    broken = RoleConfig(backend="llm", model=model, max_retries=0, max_regenerations=0)
    cfg = QuestionAnalysisParams(eval_rows=str(write_rows(tmp_path / "rows.jsonl", cases=4)), use_workbook="never")
    client = LLMClient(CallCache(tmp_path / "calls.sqlite"))
    (tmp_path / "a").mkdir()
    with pytest.raises(RoleFailureRateError, match="strategy_tagger"):
        stage.run(cfg, RolesParams(strategy_tagger=broken), tmp_path, tmp_path / "a", client=client, progress=False)
    (tmp_path / "b").mkdir()
    metrics = stage.run(cfg, RolesParams(strategy_tagger=broken, max_failure_rate=1.0), tmp_path, tmp_path / "b",
                        client=client, progress=False)
    assert metrics["tagger_failures"] == metrics["questions"] == 20
    assert "llm mock/" in metrics["backend"]


def test_findings_record_input_paths_that_are_not_machine_specific(tmp_path):
    from tasks.analysis.stage import shown_path

    root = tmp_path / "repo"
    assert shown_path(root / "data" / "eval" / "swe" / "rows.jsonl", root) == "data/eval/swe/rows.jsonl"
    assert shown_path(tmp_path / "shared" / "data" / "book.xlsx", root) == "../shared/data/book.xlsx"
    assert shown_path(Path("/elsewhere/tmp/rows.jsonl"), root) == "rows.jsonl"

"""SFT rows: targets name the hidden categories in weight order; the split is by issue; bad weights fail clearly."""

from __future__ import annotations

import json

import pytest

from tasks.domains.swe import load_samples, mask_issue
from tasks.errors import InputError
from tasks.params import SweConstructParams
from tasks.roles.config import RoleConfig
from tasks.roles.question_writer import QuestionWriterInput, entities, local
from tasks.rewards.weights import CLARITI_WEIGHTS as PAPER_WEIGHTS
from tasks.sftdata import build_rows, load_weights, split_of
from tests.conftest import ROOT, python


@pytest.fixture(scope="module")
def cases():
    issues = load_samples(ROOT / "data" / "samples" / "swe" / "issues.jsonl")[:8]
    return [c for issue in issues for c in mask_issue(issue, SweConstructParams(variants_per_issue=2))[0]]


def test_targets_follow_the_weights_and_the_hidden_categories(cases):
    rows, failed = build_rows(cases, PAPER_WEIGHTS, RoleConfig(), heldout_fraction=0.3, seed=0)
    assert failed == 0 and len(rows) == len(cases)
    for row, case in zip(rows, cases):
        assert row.prompt[-1]["content"] == case.brief.content and row.messages == row.prompt + row.completion
        weights = [PAPER_WEIGHTS[k] for k in row.hidden_categories]
        assert weights == sorted(weights, reverse=True)
        assert set(row.hidden_categories) == {c.key for c in case.hidden_categories}
        lines = row.completion[0]["content"].splitlines()
        assert [line.split(".", 1)[0] for line in lines] == [str(n) for n in range(1, row.n_questions + 1)]
        assert all(line.rstrip().endswith("?") for line in lines)
    reversed_weights = {k: -v for k, v in PAPER_WEIGHTS.items()}
    flipped, _ = build_rows(cases, reversed_weights, RoleConfig(), heldout_fraction=0.3, seed=0)
    multi = [(a, b) for a, b in zip(rows, flipped) if len(a.hidden_categories) > 1]
    assert multi and all(a.hidden_categories == b.hidden_categories[::-1] for a, b in multi)


def test_split_is_by_issue_and_deterministic(cases):
    rows, _ = build_rows(cases, PAPER_WEIGHTS, RoleConfig(), heldout_fraction=0.5, seed=3)
    by_issue: dict[str, set[str]] = {}
    for row in rows:
        by_issue.setdefault(row.instance_id, set()).add(row.split)
    assert all(len(splits) == 1 for splits in by_issue.values())
    assert {s for splits in by_issue.values() for s in splits} == {"train", "heldout"}
    assert split_of("x", 0.5, 3) == split_of("x", 0.5, 3)


def test_question_writer_uses_the_issues_names():
    issue = "Calling `parse_date()` in `parsers/dates.py` raises ValueError for offsets."
    ent = entities(issue, "acme/parsers")
    assert ent["path"] == "parsers/dates.py" and ent["exception"] == "ValueError" and ent["library"] == "parsers"
    out = local(QuestionWriterInput(incomplete_issue=issue, hidden_categories=["Error Information",
                                                                          "Version/Environment Information"],
                                    repo="acme/parsers"))
    assert "ValueError" in out.questions[0] and "parsers" in out.questions[1]


def test_weights_come_from_the_shap_stage_or_the_paper(tmp_path):
    assert load_weights(tmp_path / "absent.json") == (PAPER_WEIGHTS, "CLARITI published weights")
    path = tmp_path / "weights.json"
    path.write_text(json.dumps({"source": "simulated outcomes", "weights": {k: 0.5 for k in PAPER_WEIGHTS}}))
    weights, source = load_weights(path)
    assert set(weights.values()) == {0.5} and "simulated outcomes" in source
    path.write_text(json.dumps({"weights": {"error_info": 1.0}}))
    with pytest.raises(InputError, match="no weight for"):  # the file names its missing categories
        load_weights(path)


def test_missing_cases_fail_with_one_line(project):
    proc = python(project, "-m", "flows.sft_data", check=False)
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0
    assert "cases.jsonl" in proc.stderr and "construct@swe" in proc.stderr
    assert not (project / "data" / "sft").exists()

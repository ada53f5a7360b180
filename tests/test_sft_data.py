"""SFT rows: targets name the hidden categories in weight order; each row keeps its case's split (by issue, made by
construct@swe); bad weights and cases without a split fail clearly."""

from __future__ import annotations

import json

import pytest

from tasks.domains.swe import mask_issue
from tasks.errors import InputError
from tasks.llm.records import RoleConfig
from tasks.params import SweConstructParams
from tasks.rewards.weights import CLARITI_WEIGHTS as PAPER_WEIGHTS
from tasks.roles.question_writer import QuestionWriterInput, entities, local
from tasks.sftdata import build_rows, load_weights
from tasks.splits import assign_splits
from tasks.swe_samples import load_samples
from tests.conftest import ROOT, python


@pytest.fixture(scope="module")
def cases():
    issues = load_samples(ROOT / "data" / "samples" / "swe" / "issues.jsonl")[:8]
    cfg = SweConstructParams(variants_per_issue=2)
    return assign_splits([c for issue in issues for c in mask_issue(issue, cfg)[0]], cfg.heldout_fraction,
                         cfg.split_seed)


def test_targets_follow_the_weights_and_the_hidden_categories(cases):
    rows, failed = build_rows(cases, PAPER_WEIGHTS, RoleConfig())
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
    flipped, _ = build_rows(cases, reversed_weights, RoleConfig())
    multi = [(a, b) for a, b in zip(rows, flipped) if len(a.hidden_categories) > 1]
    assert multi and all(a.hidden_categories == b.hidden_categories[::-1] for a, b in multi)


def test_rows_follow_the_case_split_by_issue(cases):
    from tasks.sftdata import validation_frame

    rows, _ = build_rows(cases, PAPER_WEIGHTS, RoleConfig())
    assert [r.split for r in rows] == [c.metadata.split for c in cases]
    by_issue: dict[str, set[str]] = {}
    for row in rows:
        by_issue.setdefault(row.instance_id, set()).add(row.split)
    assert all(len(splits) == 1 for splits in by_issue.values())
    assert {s for splits in by_issue.values() for s in splits} == {"train", "heldout"}
    assert validation_frame(rows)["split_by_instance"].all()
    # another split of the same cases moves the rows with it: sft_data makes no split of its own
    moved, _ = build_rows(assign_splits(cases, 0.5, 3), PAPER_WEIGHTS, RoleConfig())
    assert [r.split for r in moved] == [c.metadata.split for c in assign_splits(cases, 0.5, 3)]
    assert [r.split for r in moved] != [r.split for r in rows]


def test_cases_without_a_split_are_refused(cases):
    unsplit = [c.model_copy(update={"metadata": c.metadata.model_copy(update={"split": None})}) for c in cases]
    with pytest.raises(InputError, match=r"no split .*rerun construct@swe"):
        build_rows(unsplit, PAPER_WEIGHTS, RoleConfig())


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
    path.write_text(json.dumps({"source": "simulated outcomes", "weights": dict.fromkeys(PAPER_WEIGHTS, 0.5)}))
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


# ------------------------------------------------------------------ published targets, filtered by the staged reward

# A hand-written issue (no project or shared data); its error, steps and environment are annotated spans.
TABLE_ISSUE = """Exporting a report to CSV drops the last row

When I export the monthly sales report with `ReportWriter.to_csv()` the final row of the table is missing.

Error shown in the console:
```
ValueError: row index 12 out of range for table of length 12 in reports/writer.py line 88
```

Steps:
1. Open the monthly sales report with 12 rows.
2. Call `report.to_csv("out.csv")`.

Environment: tablekit 3.2.1, Python 3.12 on Ubuntu 22.04.
"""
TABLE_SPANS = [
    {"category": "Error Information",
     "text": "ValueError: row index 12 out of range for table of length 12 in reports/writer.py line 88"},
    {"category": "Reproduction Steps",
     "text": "1. Open the monthly sales report with 12 rows.\n2. Call `report.to_csv(\"out.csv\")`."},
    {"category": "Version/Environment Information", "text": "tablekit 3.2.1, Python 3.12 on Ubuntu 22.04"},
]
GOOD = ("1. Which Python version and tablekit release are you running?\n"
        "2. Which colour theme do you prefer for the dashboard?\n"
        "3. What is the exact error message or traceback printed when the export fails?")
DUPLICATES = ("1. What is the full error message?\n2. What exact error message do you get?\n"
              "3. Can you paste the complete error message text?\n4. Which error message is printed?")
"""One ask four ways: one intent in four questions, diversity 1/4 < 0.3 (three ways would pass with 1/3)."""
IRRELEVANT = "1. Which colour theme do you prefer for the dashboard?\n2. How many people are on your sales team?"


def _table_case(instance_id: str, hidden: list[str]):
    from tasks.records import IssueRecord

    issue = IssueRecord(instance_id=instance_id, repo="acme/tables", text=TABLE_ISSUE, spans=TABLE_SPANS)
    cases, _ = mask_issue(issue, SweConstructParams(variants_per_issue="all"))
    case = next(c for c in cases if sorted(h.key for h in c.hidden_categories) == sorted(hidden))
    return assign_splits([case], 0.0, 0)[0]  # every case in train


def _workbook(path, rows: dict[str, str]):
    import pandas as pd

    frame = pd.DataFrame({"instance_id": list(rows) + ["acme__tables-p09"],
                          "clarification_questions_gpt5_3": list(rows.values()) + [None]})
    frame.to_excel(path, index=False)
    return path


def test_published_lists_are_kept_when_they_pass_the_reward(tmp_path):
    from tasks.rewards.config import RewardConfig
    from tasks.rewards.staged import StagedReward
    from tasks.roles.question_writer import numbered
    from tasks.sftdata import (
        choose_published,
        load_published,
        published_metrics,
        validation_frame,
    )

    cases = [_table_case("acme__tables-p01", ["error_info", "version_env"]),
             _table_case("acme__tables-p02", ["error_info"]), _table_case("acme__tables-p03", ["error_info"]),
             _table_case("acme__tables-p04", ["error_info"])]
    book = _workbook(tmp_path / "questions.xlsx", {"acme__tables-p01": GOOD, "acme__tables-p02": DUPLICATES,
                                                     "acme__tables-p03": IRRELEVANT})
    published = load_published(book, "clarification_questions_gpt5_3")
    assert set(published) == {"acme__tables-p01", "acme__tables-p02", "acme__tables-p03"}  # empty cell skipped
    with pytest.raises(InputError, match="field 'nope'"):
        load_published(book, "nope")

    staged = StagedReward(RewardConfig(), PAPER_WEIGHTS)
    choices = choose_published(cases, published, PAPER_WEIGHTS, staged, min_reward=0.5)
    assert set(choices) == {c.case_id for c in cases[:3]}  # p04 has no published list
    good, dup, irrelevant = (choices[c.case_id] for c in cases[:3])
    # the off-topic question is dropped; the error question (weight 1.0) moves ahead of the version one (0.59)
    assert good.categories == ["error_info", "version_env"] and "error message" in good.questions[0]
    assert good.kept and good.reward >= 0.5
    assert not dup.kept and dup.reward is not None and dup.reward < 0.5  # near-duplicates fail diversity
    assert not irrelevant.kept and irrelevant.reward is None and irrelevant.questions == []

    rows, failed = build_rows(cases, PAPER_WEIGHTS, RoleConfig(), published=choices)
    assert failed == 0 and len(rows) == 4
    by_id = {r.instance_id: r for r in rows}
    kept_row = by_id["acme__tables-p01"]
    assert kept_row.target_source == "published" and kept_row.published_reward == good.reward
    assert kept_row.completion[0]["content"] == numbered(good.questions) and kept_row.n_questions == 2
    for iid in ("acme__tables-p02", "acme__tables-p03", "acme__tables-p04"):
        row = by_id[iid]
        assert row.target_source == "writer" and row.target_categories == row.hidden_categories
        assert row.n_questions == len(row.hidden_categories)
    assert by_id["acme__tables-p02"].published_reward == dup.reward
    assert by_id["acme__tables-p04"].published_reward is None
    assert validation_frame(rows)["questions_match_hidden"].all()
    assert published_metrics(choices, len(cases)) == {
        "cases_with_published": 3, "cases_without_published": 1, "kept": 1, "rejected_reward": 1,
        "rejected_no_hidden_question": 1, "mean_reward_kept": round(good.reward, 4),
        "mean_reward_rejected": round(dup.reward, 4),
    }


def test_rows_written_before_target_source_still_validate(cases):
    from tasks.sftdata import SftRow

    rows, _ = build_rows(cases[:2], PAPER_WEIGHTS, RoleConfig())
    old = rows[0].model_dump(exclude={"target_source", "target_categories", "published_reward"})
    restored = SftRow.model_validate(old)
    assert restored.target_source == "writer" and restored.published_reward is None


@pytest.mark.realdata
@pytest.mark.slow  # about 22 s cold; test_published_lists_are_kept_when_they_pass_the_reward covers the rule
def test_published_gpt5_targets_on_the_clariti_workbook(tmp_path, monkeypatch):
    """A handful of CLARITI issues through the sft_data stage with published targets (measured counts printed)."""
    import yaml

    from flows.sft_data import sft_data
    from tasks.domains.swe import load_clariti
    from tasks.rewards.parse import parse_questions
    from tasks.sftdata import SftRow, load_published
    from tasks.store import jsonl_text, read_jsonl
    from tests.conftest import SHARED

    workbook = SHARED / "data" / "clariti" / "data.xlsx"
    issues = [i for i in load_clariti(workbook) if i.spans][:8]
    cfg = SweConstructParams(source="clariti")
    cases = assign_splits([c for i in issues for c in mask_issue(i, cfg)[0]], cfg.heldout_fraction, cfg.split_seed)
    (tmp_path / "data" / "cases" / "swe").mkdir(parents=True)
    (tmp_path / "data" / "cases" / "swe" / "cases.jsonl").write_text(jsonl_text(cases))
    (tmp_path / "dvc.yaml").write_text("stages: {}\n")
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["sft_data"].update({"targets": "published", "weights": "absent.json"})
    params["sft_data"]["published"]["workbook"] = str(workbook)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    monkeypatch.chdir(tmp_path)

    summary = sft_data("params.yaml")
    pub = summary["published_targets"]
    print(f"\n{len(issues)} issues, {len(cases)} cases: {pub}")
    rows = read_jsonl(tmp_path / "data" / "sft" / "train.jsonl", SftRow) + \
        read_jsonl(tmp_path / "data" / "sft" / "heldout.jsonl", SftRow)
    assert len(rows) == len(cases) and summary["writer_failures"] == 0
    assert pub["cases_with_published"] + pub["cases_without_published"] == len(cases)
    assert pub["kept"] + pub["rejected_reward"] + pub["rejected_no_hidden_question"] == pub["cases_with_published"]
    assert pub["rows_published"] == pub["kept"] == sum(r.target_source == "published" for r in rows)
    assert pub["kept"] > 0 and pub["mean_reward_kept"] >= params["sft_data"]["published"]["min_reward"]
    published = load_published(workbook, "clarification_questions_gpt5_3")
    for row in rows:
        if row.target_source == "published":  # every target question is one of the published ones, in a hidden category
            assert set(parse_questions(row.completion[0]["content"])) \
                <= set(parse_questions(published[row.instance_id]))
            assert set(row.target_categories) <= set(row.hidden_categories)
            assert row.published_reward >= params["sft_data"]["published"]["min_reward"]

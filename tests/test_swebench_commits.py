"""SWE-bench commits travel from the dataset record to the harness export (issue 40 item 7)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tasks.domains.swe import load_issues, mask_issue
from tasks.domains.swe.domain import swebench_issue
from tasks.evaluation import bridge
from tasks.evaluation.question_units import QuestionUnit
from tasks.params import SweConstructParams
from tests.conftest import MINI

GOOD = json.loads(MINI.read_text().splitlines()[1])


def swebench_row(**extra) -> dict:
    """A row shaped like a SWE-bench dataset record (the columns the loader reads, plus the two commits)."""
    return {"instance_id": "acme__widgets-7", "repo": "acme/widgets", "version": "1.2",
            "problem_statement": GOOD["text"], "hints_text": "", "created_at": "2024-01-01T00:00:00Z",
            "category_mapping": json.dumps({"Error Information": {"present": True,
                                                                   "examples": [GOOD["spans"][0]["text"]]}}),
            **extra}


def export(tmp_path, row: dict, *, through_loader: bool = False) -> list[bridge.ExportRow]:
    path = tmp_path / "swebench.jsonl"
    path.write_text(json.dumps(row) + "\n")
    cfg = SweConstructParams(source="swebench", swebench={"path": str(path)}, variants_per_issue=1)
    if through_loader:  # the datasets library reads the file: seconds
        (issue,) = load_issues(cfg, tmp_path)
    else:
        issue = swebench_issue(row, Path("swebench.jsonl"), "row 1")
    cases, _ = mask_issue(issue, cfg)
    assert cases
    units = [QuestionUnit(key=f"k{i}", method="no_questions", case_id=c.case_id, source_id=c.metadata.source_id)
             for i, c in enumerate(cases)]
    out = tmp_path / "bridge"
    bridge.export_clarified(units, {c.case_id: c for c in cases}, out)
    return [r for f in sorted(out.glob("*.jsonl")) for r in bridge.read_export(f)]


def test_swebench_record_commits_reach_the_harness_export(tmp_path):
    rows = export(tmp_path, swebench_row(base_commit="0123abcdef", environment_setup_commit="fedcba9876"))
    assert rows and all(r.base_commit == "0123abcdef" for r in rows)
    assert all(r.environment_setup_commit == "fedcba9876" for r in rows)
    assert all(r.repo == "acme/widgets" and r.version == "1.2" for r in rows)


def test_a_record_without_commits_exports_none_not_an_empty_string(tmp_path):
    rows = export(tmp_path, swebench_row())
    assert rows and all(r.base_commit is None and r.environment_setup_commit is None for r in rows)


@pytest.mark.slow
def test_the_offline_swebench_loader_keeps_the_commits(tmp_path):
    rows = export(tmp_path, swebench_row(base_commit="0123abcdef", environment_setup_commit="fedcba9876"),
                  through_loader=True)
    assert rows and all((r.base_commit, r.environment_setup_commit) == ("0123abcdef", "fedcba9876") for r in rows)

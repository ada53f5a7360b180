"""The blind precision audit (benchmarks/annotator_audit.py): its arithmetic, its draw, and the committed verdicts."""

from __future__ import annotations

import json

import pytest

from tasks.categories import Category
from tasks.roles.annotator import Annotation, TaggedSpan
from tests.conftest import load_benchmark


@pytest.fixture(scope="module")
def audit():
    return load_benchmark("annotator_audit")


def test_audited_interval_is_the_wilson_interval(audit):
    lo, hi = audit.audited_precision(0.0, 10, 20)["q_ci95"]  # textbook Wilson 95% interval of 10/20
    assert lo == pytest.approx(0.2993, abs=1e-4) and hi == pytest.approx(0.7007, abs=1e-4)
    assert audit.audited_precision(0.5, 0, 0)["audited_precision_ci95"] == [0.5, 1.0]  # nothing judged: no claim


def test_audited_precision_counts_the_judged_share_as_correct(audit):
    out = audit.audited_precision(0.5, 12, 20)
    assert out["q"] == 0.6 and out["audited_precision"] == pytest.approx(0.5 + 0.5 * 0.6)
    lo, hi = out["audited_precision_ci95"]
    assert lo < out["audited_precision"] < hi
    assert audit.audited_precision(0.7, 0, 20)["audited_precision"] == 0.7  # nothing rescued: the measured figure


class _Issue:
    def __init__(self, instance_id, text, spans):
        self.instance_id, self.text, self.spans = instance_id, text, spans


class _Span:
    def __init__(self, category, text):
        self.category, self.text = category, text


def test_span_pool_and_draw(audit):
    text = "It crashes.\nI expect a list back.\nIt should also keep the order.\nSee docs."
    issue = _Issue("x__y-1", text, [_Span(Category.EXPECTED, "I expect a list back.")])
    ann = Annotation(spans=[TaggedSpan(category=Category.EXPECTED, text="I expect a list back."),
                            TaggedSpan(category=Category.EXPECTED, text="It should also keep the order."),
                            TaggedSpan(category=Category.ERROR, text="It crashes.")])
    pool = audit.span_pool([issue], [ann], ("expected_behavior",))
    spans = pool["expected_behavior"]
    assert [(s["start"], s["end"], s["overlaps_workbook"]) for s in spans] == [(12, 33, True), (34, 64, False)]
    assert text[spans[1]["start"] : spans[1]["end"]] == "It should also keep the order."
    items = audit.draw(pool, per_category=5, controls=5)
    assert len(items) == 2 and {i["item"] for i in items} == {"a000", "a001"}
    assert all(i["verdict"] is None for i in items)
    assert items == audit.draw(pool, per_category=5, controls=5)  # seeded
    sheet = audit.sheet(items, {"x__y-1": text}, "expected_behavior")
    assert ">>>It should also keep the order.<<<" in sheet and "overlaps" not in sheet  # blind


def test_record_rejects_an_unknown_item_or_verdict(audit, tmp_path, monkeypatch, capsys):
    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps({"item": "a000", "category": "reproduction", "verdict": None}) + "\n")
    monkeypatch.setattr(audit, "ITEMS", items)
    bad = tmp_path / "v.jsonl"
    bad.write_text(json.dumps({"item": "a000", "verdict": "maybe"}) + "\n")
    assert audit.record([bad]) == 2
    assert "line 1" in capsys.readouterr().err
    assert json.loads(items.read_text())["verdict"] is None  # nothing written
    good = tmp_path / "w.jsonl"
    good.write_text(json.dumps({"item": "a000", "verdict": "yes"}) + "\n")
    assert audit.record([good]) == 0
    assert json.loads(items.read_text())["verdict"] == "yes"


def test_committed_audit_is_complete_and_quotes_no_issue_text(audit):
    items = [json.loads(line) for line in audit.ITEMS.read_text().splitlines()]
    keys = {"item", "instance_id", "category", "start", "end", "overlaps_workbook", "verdict"}
    assert items and all(set(i) == keys for i in items)
    assert all(i["verdict"] in ("yes", "no") for i in items)
    run = json.loads(audit.RUN.read_text())
    scored = audit.score()
    assert set(scored) == set(run["categories"])
    for f in scored.values():  # every drawn item of every audited category was judged
        assert (f["judged"], f["controls"]) == (run["per_category"], run["controls"])

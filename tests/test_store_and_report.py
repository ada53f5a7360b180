"""Atomic publishing, content keys and the combined report."""

from __future__ import annotations

import json

import pytest

from tasks import masking
from tasks.caching import content_key
from tasks.reporting import ReportInputs, build_report, flatten, load_stage_metrics, render_markdown, write_report
from tasks.store import publish_dir, staged_dir


def test_failed_staging_leaves_the_old_folder(tmp_path):
    final = tmp_path / "out"
    final.mkdir()
    (final / "a.txt").write_text("old")
    with pytest.raises(RuntimeError), staged_dir(final) as staging:
        (staging / "a.txt").write_text("new")
        raise RuntimeError("gate failed")
    assert (final / "a.txt").read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]
    with staged_dir(final) as staging:
        (staging / "b.txt").write_text("new")
        publish_dir(staging, final)
    assert sorted(p.name for p in final.iterdir()) == ["b.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_content_key_follows_file_content_not_path(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text("same")
    b.write_text("same")
    key = lambda p: content_key({"source": p, "cfg": {"seed": 1}}, task_name="t", modules=[masking])  # noqa: E731
    assert key(a) == key(b)
    b.write_text("changed")
    assert key(a) != key(b)
    assert content_key({"cfg": {"seed": 2}}, task_name="t", modules=[masking]) != content_key(
        {"cfg": {"seed": 1}}, task_name="t", modules=[masking]
    )


def test_report_names_the_backend_of_every_number(tmp_path):
    metrics_dir = tmp_path / "metrics"
    (metrics_dir / "construct").mkdir(parents=True)
    (metrics_dir / "construct" / "swe.json").write_text(
        json.dumps({"backend": "rules", "cases": 3, "hidden_per_category": {"error_info": 2, "reproduction": 1}})
    )
    metrics = load_stage_metrics(metrics_dir)
    assert list(metrics) == ["construct@swe"]
    rows = flatten(metrics)
    assert {r["key"]: r["value"] for r in rows} == {
        "construct@swe.cases": 3,
        "construct@swe.hidden_per_category.error_info": 2,
        "construct@swe.hidden_per_category.reproduction": 1,
    }
    assert all(r["backend"] == "rules" for r in rows)
    page = render_markdown(build_report("T", ReportInputs(metrics)))
    assert "Backend: rules" in page and "| cases | 3 | rules |" in page
    write_report("T", metrics, tmp_path / "report")
    assert (tmp_path / "report" / "hidden_categories.png").read_bytes()[:4] == b"\x89PNG"
    assert json.loads((tmp_path / "report" / "metrics.json").read_text())["construct@swe.cases"] == 3
    assert "| cases | 3 | rules |" in (tmp_path / "report" / "report.md").read_text()
    assert (tmp_path / "report" / "report.html").read_text().startswith("<!DOCTYPE html>")


def test_gate_summary_is_readable():
    import pandas as pd

    from tasks.errors import GateError
    from tasks.validation import gate

    table = pd.DataFrame({"key": ["a", "a"], "value": [1.0, None], "backend": ["x", "x"]})
    with pytest.raises(GateError) as err:
        gate("report_metrics", table, artifact="data/report")
    text = str(err.value)
    assert text.startswith("validation gate failed for data/report: report_metrics: 2 of 3 expectations failed")
    assert "expect_column_values_to_be_unique(key) 2 rows e.g. 'a', 'a'" in text
    assert "expect_column_values_to_not_be_null(value) 1 rows" in text


def test_report_names_each_roles_backend_and_nested_backends():
    from tasks.roles.config import RoleConfig, RolesParams, describe_roles

    roles = RolesParams(slot_hit_judge=RoleConfig(backend="llm", model="openai/gpt-4o-mini", temperature=0.0))
    described = describe_roles(roles)
    assert described["annotator"]["backend"] == "local"
    assert described["slot_hit_judge"] == {
        "backend": "llm", "model": "openai/gpt-4o-mini", "temperature": 0.0, "max_tokens": 512, "max_regenerations": 3,
    }
    metrics = {"construct@swe": {"backend": "rules", "cases": 2,
                                 "roles": {"annotator": {"backend": "local", "requests": 5}}}}
    rows = {r["key"]: r["backend"] for r in flatten(metrics)}
    assert rows == {"construct@swe.cases": "rules", "construct@swe.roles.annotator.requests": "local"}
    page = render_markdown(build_report("T", ReportInputs(metrics, roles=described)))
    assert "| slot_hit_judge | llm | openai/gpt-4o-mini | 0.0 |" in page
    assert "| annotator | local |" in page
    assert "| roles.annotator.requests | 5 | local |" in page


def test_tasks_reports_still_serves_its_importers():
    from tasks import reporting, reports

    assert reports.flatten is reporting.flatten and reports.load_stage_metrics is reporting.load_stage_metrics

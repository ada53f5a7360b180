"""Atomic publishing, content keys and the combined report."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tasks.caching import content_key
from tasks.domains.swe import masking
from tasks.errors import InputError
from tasks.reporting import ReportInputs, build_report, flatten, load_stage_metrics, render_markdown, write_report
from tasks.store import ARTIFACT_MARKER, publish_dir, staged_dir


def _publish(final, files: dict[str, str]) -> None:
    with staged_dir(final) as staging:
        for name, text in files.items():
            (staging / name).write_text(text)
        publish_dir(staging, final)


def _names(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name != ARTIFACT_MARKER)


def test_failed_staging_leaves_the_old_folder(tmp_path):
    final = tmp_path / "out"
    _publish(final, {"a.txt": "old"})
    with pytest.raises(RuntimeError), staged_dir(final) as staging:
        (staging / "a.txt").write_text("new")
        raise RuntimeError("gate failed")
    assert (final / "a.txt").read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]
    _publish(final, {"b.txt": "new"})
    assert _names(final) == ["b.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_publishing_never_replaces_a_folder_the_stage_did_not_write(tmp_path):
    final = tmp_path / "samples"
    (final / "swe").mkdir(parents=True)
    (final / "swe" / "issues.jsonl").write_text("tracked input")
    with pytest.raises(InputError, match="refusing to replace") as err, staged_dir(final) as staging:
        (staging / "summary.json").write_text("{}")
        publish_dir(staging, final)
    assert str(final) in str(err.value) and len(str(err.value).splitlines()) == 1
    assert (final / "swe" / "issues.jsonl").read_text() == "tracked input"
    assert [p.name for p in tmp_path.iterdir()] == ["samples"]
    (tmp_path / "afile").write_text("x")
    with pytest.raises(InputError), staged_dir(tmp_path / "afile") as staging:
        publish_dir(staging, tmp_path / "afile")
    assert (tmp_path / "afile").read_text() == "x"


def test_a_folder_published_before_markers_is_replaced_when_it_holds_only_the_stage_names(tmp_path):
    final = tmp_path / "eval"
    (final / "runs").mkdir(parents=True)
    (final / "summary.json").write_text("old")
    _publish(final, {"summary.json": "new", "runs": "now a file"})
    assert (final / "summary.json").read_text() == "new" and (final / ARTIFACT_MARKER).is_file()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="one-step exchange needs Linux renameat2")
def test_publishing_over_a_folder_never_leaves_the_path_missing(tmp_path, monkeypatch):
    final = tmp_path / "out"
    _publish(final, {"a.txt": "old"})
    seen = []
    real_replace = os.replace

    def watching_replace(src, dst):
        real_replace(src, dst)
        seen.append(final.is_dir())

    monkeypatch.setattr(os, "replace", watching_replace)
    _publish(final, {"a.txt": "new"})
    assert (final / "a.txt").read_text() == "new"
    assert all(seen), "the output folder was missing between two renames"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def _dead_pid() -> int:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    return int(proc.stdout)


def test_staging_and_old_folders_of_killed_runs_are_removed_at_the_next_publish(tmp_path):
    final = tmp_path / "out"
    _publish(final, {"a.txt": "old"})
    dead = _dead_pid()
    stale = [tmp_path / f".out.staging-{dead}-k3j2h1", tmp_path / f".out.old-{dead}"]
    live = tmp_path / f".out.staging-{os.getppid()}-a1b2c3"  # a run that is still going
    other = tmp_path / f".other.old-{dead}"  # another output's leftovers are not this publish's business
    for folder in (*stale, live, other):
        folder.mkdir()
        (folder / "x.txt").write_text("left over")
    _publish(final, {"a.txt": "new"})
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, other.name, "out"])


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
    from tasks.llm.records import RoleConfig
    from tasks.roles.config import RolesParams, describe_roles

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

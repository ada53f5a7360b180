"""Bad input: one clear line naming the file, record and field; exit code 2; nothing written."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tasks.domains.swe import parse_category_mapping
from tasks.errors import InputError
from tasks.params import load_params
from tasks.swe_samples import load_samples
from tests.conftest import MINI, python, tiny_params, write_params

GOOD = [json.loads(line) for line in MINI.read_text().splitlines()]


def _write_lines(path: Path, rows: list) -> None:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))


def _dup(row: dict, **changes) -> dict:
    out = json.loads(json.dumps(row))
    out.update(changes)
    return out


CASES = {
    "malformed_json": ([GOOD[0], '{"instance_id": "x__y-t09", "text": ', GOOD[1]], "record line 2: malformed JSON"),
    "missing_field": ([GOOD[0], {k: v for k, v in GOOD[1].items() if k != "text"}],
                      "record line 2: field 'text': Field required"),
    "unknown_category": (
        [_dup(GOOD[0], spans=[{"category": "Vibes", "text": "Widget.resize() raises"}])],
        "field 'spans.0.category': Value error, unknown category 'Vibes'",
    ),
    "duplicate_ids": ([GOOD[0], GOOD[1], _dup(GOOD[2], instance_id=GOOD[0]["instance_id"])],
                      "record 3: field 'instance_id': duplicate id"),
    "empty_text": ([_dup(GOOD[0], text="   \n ", spans=[])], "field 'text': Value error, issue text is empty"),
    "span_not_in_text": ([_dup(GOOD[0], spans=[{"category": "Error Information",
                                                 "text": "this sentence is not in the issue"}])],
                         "field 'spans.0.text': span text does not occur in the issue text"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_loader_rejects(tmp_path, name):
    rows, expected = CASES[name]
    path = tmp_path / "issues.jsonl"
    _write_lines(path, rows)
    with pytest.raises(InputError) as err:
        load_samples(path)
    assert str(path) in str(err.value) and expected in str(err.value)
    assert "\n" not in str(err.value)


def test_non_utf8_file_is_rejected(tmp_path):
    path = tmp_path / "issues.jsonl"
    path.write_bytes(json.dumps(GOOD[0]).encode() + b"\n" + b'{"instance_id": "caf\xe9"}\n')
    with pytest.raises(InputError, match=r"not valid UTF-8 \(bad byte at offset \d+, line 2\)"):
        load_samples(path)


def test_clariti_mapping_errors_name_the_row():
    with pytest.raises(InputError, match=r"row 7 .*field 'category_mapping': malformed JSON"):
        parse_category_mapping("{not json", path=Path("data.xlsx"), record="row 7 (x)")
    with pytest.raises(InputError, match="unknown category 'Mood'"):
        parse_category_mapping('{"Mood": {"present": true, "examples": []}}', path=Path("data.xlsx"), record="row 8")
    spans, present = parse_category_mapping(
        '{"Error Information": {"present": true, "examples": ["boom happens"]}, '
        '"Reproduction Steps": {"present": false, "examples": []}}',
        path=Path("data.xlsx"), record="row 9",
    )
    assert [s.text for s in spans] == ["boom happens"] and [p.key for p in present] == ["error_info"]


def test_bad_params_name_the_field(tmp_path):
    path = tmp_path / "params.yaml"
    params = tiny_params(min_hidden=3, max_hidden=1)
    write_params(tmp_path, params)
    from tasks.domains.swe import DOMAIN

    cfg = load_params(path)
    with pytest.raises(InputError,
                       match=re.escape("field 'construct.swe': Value error, min_hidden must not exceed max_hidden")):
        DOMAIN.parse_params(path, cfg.construct_["swe"])


@pytest.mark.parametrize("name", ["malformed_json", "duplicate_ids", "unknown_category"])
def test_stage_cli_exits_nonzero_and_writes_nothing(project, name):
    rows, expected = CASES[name]
    samples = project / "data" / "samples" / "swe" / "issues.jsonl"
    _write_lines(samples, rows)
    previous = project / "data" / "cases" / "swe"
    previous.mkdir(parents=True)
    (previous / "cases.jsonl").write_text("previous output\n")
    proc = python(project, "-m", "flows.construct", "--domain", "swe", check=False)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: ") and "issues.jsonl" in lines[0] and expected in lines[0]
    assert (previous / "cases.jsonl").read_text() == "previous output\n"
    assert not (project / "data" / "metrics").exists()
    assert not list((project / "data" / "cases").glob(".*staging*"))


def test_non_utf8_through_the_cli(project):
    samples = project / "data" / "samples" / "swe" / "issues.jsonl"
    samples.write_bytes(b'{"instance_id": "caf\xe9"}\n')
    proc = python(project, "-m", "flows.construct", "--domain", "swe", check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "not valid UTF-8" in proc.stderr
    assert not (project / "data" / "cases").exists()


def test_unannotated_issues_get_a_clear_error(project):
    samples = project / "data" / "samples" / "swe" / "issues.jsonl"
    _write_lines(samples, [{k: v for k, v in GOOD[0].items() if k != "spans"}])
    write_params(project, tiny_params(on_unannotated="error"))
    proc = python(project, "-m", "flows.construct", "--domain", "swe", check=False)
    assert proc.returncode == 2
    assert "have no span annotations" in proc.stderr and "annotator" in proc.stderr


def test_swebench_source_reads_a_local_dataset_offline(tmp_path):
    from tasks.domains.swe import load_issues
    from tasks.params import SweConstructParams

    rows = [
        {"instance_id": "acme__widgets-1", "repo": "acme/widgets", "problem_statement": GOOD[0]["text"],
         "hints_text": ""},
        {
            "instance_id": "acme__widgets-2", "repo": "acme/widgets", "problem_statement": GOOD[1]["text"],
            "hints_text": "",
            "category_mapping": json.dumps(
                {"Error Information": {"present": True, "examples": [GOOD[1]["spans"][0]["text"]]}}
            ),
        },
    ]
    path = tmp_path / "swebench.jsonl"
    _write_lines(path, rows)
    cfg = SweConstructParams(source="swebench", swebench={"path": str(path)}, on_unannotated="error")
    with pytest.raises(InputError, match=r"1 of 2 issues have no span annotations .*acme__widgets-1"):
        load_issues(cfg, tmp_path)
    both = load_issues(cfg.model_copy(update={"on_unannotated": "annotate"}), tmp_path)
    assert [i.spans is None for i in both] == [True, False]
    issues = load_issues(cfg.model_copy(update={"on_unannotated": "skip"}), tmp_path)
    assert [i.instance_id for i in issues] == ["acme__widgets-2"]
    assert issues[0].spans[0].category.key == "error_info"
    missing = SweConstructParams(source="swebench", swebench={"path": "no/such/dataset-name"})
    with pytest.raises(InputError, match="cannot load dataset offline"):
        load_issues(missing, tmp_path)


def test_annotate_chunk_tags_raw_issues_with_the_local_annotator():
    from tasks.domains.swe import annotate_chunk, mask_issue
    from tasks.llm.records import RoleConfig
    from tasks.params import SweConstructParams
    from tasks.records import IssueRecord

    raw = [{k: v for k, v in row.items() if k not in ("spans", "present")} for row in GOOD]
    out = annotate_chunk(raw, RoleConfig().model_dump(mode="json"))
    assert out["failures"] == [] and len(out["issues"]) == len(GOOD)
    assert out["usage"]["backend"] == "local" and out["usage"]["requests"] == len(GOOD)
    for row, annotated in zip(raw, out["issues"]):
        issue = IssueRecord.model_validate(annotated)
        assert issue.spans, issue.instance_id
        assert all(" ".join(s.text.split()) in " ".join(row["text"].split()) for s in issue.spans)
        cases, _ = mask_issue(issue, SweConstructParams(variants_per_issue=2))
        assert cases, issue.instance_id


def test_annotate_chunk_records_llm_failures_instead_of_crashing():
    import time

    from tasks.domains.swe import annotate_chunk
    from tasks.llm.providers import ensure_registered
    from tasks.llm.providers.mock import MockScript, register
    from tasks.llm.records import RoleConfig

    ensure_registered()
    model = register(f"bad-annotator-{time.time_ns()}", MockScript(outputs=["not json"]))
    raw = [{k: v for k, v in GOOD[0].items() if k not in ("spans", "present")}]
    out = annotate_chunk(raw, RoleConfig(backend="llm", model=model, max_regenerations=1).model_dump(mode="json"))
    assert out["issues"] == []
    assert out["failures"][0]["instance_id"] == GOOD[0]["instance_id"] \
        and out["failures"][0]["kind"] == "invalid_output"

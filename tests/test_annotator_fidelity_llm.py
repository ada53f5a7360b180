"""``benchmarks/annotator_fidelity.py --model``: the annotator's LLM backend measured against the same spans as the
local one, on a scripted mock model (no network)."""

from __future__ import annotations

import json
import time

import pytest

from tasks.categories import Category
from tasks.llm.cache import CallCache
from tasks.llm.client import LLMClient
from tasks.llm.providers import ensure_registered
from tasks.llm.records import RoleConfig
from tasks.records import IssueRecord, SpanAnnotation
from tests.conftest import load_benchmark

ISSUE = IssueRecord(
    instance_id="acme__widgets-1",
    text=("Saving a widget crashes\n\nCalling `save()` raises KeyError: 'id' since 2.4.1.\n\n"
          "I expected the widget to be written to disk."),
    spans=[SpanAnnotation(category=Category.ERROR, text="raises KeyError: 'id'"),
           SpanAnnotation(category=Category.EXPECTED, text="I expected the widget to be written to disk.")],
)
OTHER = IssueRecord(
    instance_id="acme__widgets-2",
    text="The docs at https://example.org/widgets say `load()` accepts a path.\n\nIt should accept a path object.",
    spans=[SpanAnnotation(category=Category.EXTERNAL_REFS, text="https://example.org/widgets")],
)


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("annotator_fidelity")


def _model(outputs=None, rule=None, **script):
    ensure_registered()
    from tasks.llm.providers.mock import MockScript, register

    return register(f"fidelity-{time.time_ns()}", MockScript(outputs=outputs, rule=rule, **script))


def _answer(issue: IssueRecord, extra: list[dict] | None = None) -> str:
    spans = [{"category": s.category.value, "text": s.text} for s in issue.spans] + (extra or [])
    return json.dumps({"spans": spans, "present": []})


def test_llm_annotations_are_scored_like_the_local_ones(bench, tmp_path):
    """A model that quotes the workbook spans (and one span that is not in the issue) gets recall and span precision
    1.0; the invented span is dropped and counted."""
    answers = {ISSUE.instance_id: _answer(ISSUE, [{"category": Category.REPRODUCTION.value, "text": "not in it"}]),
               OTHER.instance_id: _answer(OTHER)}
    model = _model(rule=lambda messages: next(a for k, a in answers.items() if k in messages[-1]["content"]))
    client = LLMClient(CallCache(tmp_path / "calls.sqlite"))
    annotations, usage = bench.llm_annotations([ISSUE, OTHER], RoleConfig(backend="llm", model=model), client=client)
    assert usage["failures"] == {} and usage["spans_not_verbatim"] == 1
    assert usage["accounting"]["requests"] == 2
    result = bench.evaluate([ISSUE, OTHER], annotations, [0, 1], list(Category))
    for key in (Category.ERROR.key, Category.EXPECTED.key, Category.EXTERNAL_REFS.key):
        assert result["spans"][key]["recall"] == 1.0 and result["spans"][key]["span_precision"] == 1.0, key
    assert result["spans"][Category.REPRODUCTION.key]["span_precision"] == 0.0  # nothing tagged, nothing counted
    assert result["presence"][Category.EXTERNAL_REFS.key]["f1"] == 1.0


def test_a_failed_call_is_an_empty_annotation_and_counted(bench, tmp_path):
    model = _model(outputs=["no JSON here"])
    client = LLMClient(CallCache(tmp_path / "calls.sqlite"))
    annotations, usage = bench.llm_annotations(
        [ISSUE], RoleConfig(backend="llm", model=model, max_regenerations=0), client=client)
    assert usage["failures"] == {"invalid_output": 1}
    assert annotations[0].spans == [] and annotations[0].present == []
    result = bench.evaluate([ISSUE], annotations, [0], list(Category))
    assert result["spans"][Category.ERROR.key]["recall"] == 0.0


def test_limit_without_a_model_is_one_line_and_exit_2(bench, tmp_path, capsys):
    workbook = tmp_path / "data.xlsx"
    workbook.write_bytes(b"")
    assert bench.main(["--data", str(workbook), "--limit", "5"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--limit" in err[0]

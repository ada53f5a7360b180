"""The annotator role: local backend on small hand-written issues, LLM-side helpers, prompt, and one realdata floor."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from tasks.categories import Category
from tasks.records import IssueRecord
from tasks.roles import annotator
from tasks.roles.annotator import SPEC, AnnotateInput, Annotation, TaggedSpan, local, to_span_annotations, verbatim_spans
from tasks.roles.base import run_role
from tasks.roles.config import RoleConfig

ROOT = Path(__file__).resolve().parents[1]
WORKBOOK = ROOT.parent / "shared" / "data" / "clariti" / "data.xlsx"

TRACEBACK_ISSUE = """Loading a config with an empty section crashes

```
Traceback (most recent call last):
  File "app.py", line 3, in <module>
    cfg = load("settings.ini")
  File "/lib/confkit/reader.py", line 88, in load
    return sections[0]
IndexError: list index out of range
```
"""

CODE_ISSUE = """Rounding helper drops the sign

Running this snippet shows the problem:

```python
from numkit import round_half
print(round_half(-2.5))
```
"""

EXPECTED_ISSUE = """`merge_dicts` loses nested keys

When both dictionaries contain the same nested key, only the second value survives.
The function should return a dictionary that keeps the keys of both nested dictionaries.
"""

REFS_ISSUE = """Parser rejects trailing commas

The grammar in the spec at https://example.org/spec/grammar.html allows a trailing comma. This looks like the same
problem as #123, which was closed without a fix.
"""

VERSION_ISSUE = """Progress bar flickers in the terminal

The bar redraws twice per tick and flickers.
I see this with Python 3.11 on macOS.
"""

IMPLEMENTATION_ISSUE = """Cache never expires

Entries stay in the cache forever even after the timeout has passed.
I think the fix is in foo/bar.py, where `expire()` compares the timestamps the wrong way round.
"""

ALL = [TRACEBACK_ISSUE, CODE_ISSUE, EXPECTED_ISSUE, REFS_ISSUE, VERSION_ISSUE, IMPLEMENTATION_ISSUE]


def _annotate(text: str) -> Annotation:
    return local(AnnotateInput(text=text))


@pytest.fixture(params=["learned", "rules"])
def backend(request, monkeypatch, tmp_path) -> str:
    """Run a test with the shipped weights and again with the weights file absent (rules only)."""
    if request.param == "rules":
        monkeypatch.setattr(annotator, "WEIGHTS", tmp_path / "absent.npz")
        assert annotator.default_scorer() is None
    elif not annotator.WEIGHTS.is_file():
        pytest.skip("annotator_weights.npz not shipped")
    return request.param


def _spans(ann: Annotation, cat: Category) -> list[str]:
    return [s.text for s in ann.spans if s.category == cat]


@pytest.mark.parametrize(
    ("text", "category", "needle"),
    [
        (TRACEBACK_ISSUE, Category.ERROR, "IndexError: list index out of range"),
        (CODE_ISSUE, Category.REPRODUCTION, "print(round_half(-2.5))"),
        (EXPECTED_ISSUE, Category.EXPECTED, "should return a dictionary"),
        (REFS_ISSUE, Category.EXTERNAL_REFS, "https://example.org/spec/grammar.html"),
        (REFS_ISSUE, Category.EXTERNAL_REFS, "#123"),
        (VERSION_ISSUE, Category.VERSION_ENV, "Python 3.11 on macOS"),
        (IMPLEMENTATION_ISSUE, Category.IMPLEMENTATION, "foo/bar.py"),
    ],
)
def test_each_category_is_detected(text: str, category: Category, needle: str, backend: str) -> None:
    ann = _annotate(text)
    assert category in ann.present
    assert any(needle in span for span in _spans(ann, category)), ann.spans


def test_traceback_is_one_error_span(backend: str) -> None:
    errors = _spans(_annotate(TRACEBACK_ISSUE), Category.ERROR)
    assert any("Traceback (most recent call last):" in s and s.endswith("out of range") for s in errors), errors


def test_spans_are_verbatim(backend: str) -> None:
    for text in ALL:
        for span in _annotate(text).spans:
            assert span.text in text


def test_no_version_information_means_not_present(backend: str) -> None:
    for text in (EXPECTED_ISSUE, CODE_ISSUE, TRACEBACK_ISSUE):
        assert Category.VERSION_ENV not in _annotate(text).present


def test_deterministic_and_batch_equals_single(backend: str) -> None:
    inputs = [AnnotateInput(instance_id=f"t{k}", text=t) for k, t in enumerate(ALL)]
    first = SPEC.run_local(inputs)
    assert first == SPEC.run_local(inputs)
    assert first == [local(i) for i in inputs]


def test_run_role_local() -> None:
    out = run_role(SPEC, [AnnotateInput(text=VERSION_ISSUE)], RoleConfig())
    assert isinstance(out[0], Annotation)
    assert Category.VERSION_ENV in out[0].present


def test_verbatim_spans_drops_invented_spans() -> None:
    raw = Annotation(
        spans=[
            TaggedSpan(category=Category.ERROR, text="The bar redraws   twice\nper tick"),
            TaggedSpan(category=Category.EXPECTED, text="The bar should draw once per tick."),
        ],
        present=[Category.EXPECTED],
    )
    checked = verbatim_spans(raw, VERSION_ISSUE)
    assert [s.category for s in checked.spans] == [Category.ERROR]
    assert checked.spans[0].text == "The bar redraws twice per tick"
    assert checked.present == [Category.ERROR, Category.EXPECTED]


def test_converts_to_issue_record() -> None:
    ann = _annotate(IMPLEMENTATION_ISSUE)
    record = IssueRecord(instance_id="x__y-1", text=IMPLEMENTATION_ISSUE, spans=to_span_annotations(ann), present=ann.present)
    assert record.present_categories() == ann.present
    assert all(s.text in IMPLEMENTATION_ISSUE for s in record.spans)


def test_prompt_renders_and_names_categories() -> None:
    messages = SPEC.messages(AnnotateInput(instance_id="a-1", text=CODE_ISSUE, hints="maybe the sign"))
    assert [m["role"] for m in messages] == ["system", "user"]
    system = messages[0]["content"]
    for category in Category:
        assert category.value in system
    assert "JSON" in system and '"spans"' in system
    assert "round_half" in messages[1]["content"] and "maybe the sign" in messages[1]["content"]


def test_weights_file_loads_and_changes_scores() -> None:
    if not annotator.WEIGHTS.is_file():
        pytest.skip("annotator_weights.npz not shipped")
    scorer = annotator.UnitScorer.load(annotator.WEIGHTS)
    prepared = annotator.prepare_batch([AnnotateInput(text=t) for t in ALL])
    features = np.vstack([p.features for p in prepared])
    assert scorer.coef.shape == (len(Category), features.shape[1])
    scores = scorer.scores(features)
    flat = annotator.UnitScorer(**{**scorer.__dict__, "coef": np.zeros_like(scorer.coef)}).scores(features)
    assert np.all((scores > 0) & (scores < 1))
    assert np.abs(scores - flat).max() > 0.1  # the weights, not just the biases, move the scores
    assert scores.std(axis=0).min() > 0.01


def test_absent_weights_fall_back_to_rules(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(annotator, "WEIGHTS", tmp_path / "absent.npz")
    inputs = [AnnotateInput(text=t) for t in ALL]
    out = SPEC.run_local(inputs)
    assert out == annotator.annotate_prepared(annotator.prepare_batch(inputs), None)
    assert Category.VERSION_ENV in out[ALL.index(VERSION_ISSUE)].present


def test_weights_round_trip(tmp_path) -> None:
    rng = np.random.default_rng(0)
    d, k = 12, len(Category)
    scorer = annotator.UnitScorer(
        rng.normal(size=d).astype(np.float32), np.ones(d, np.float32), rng.normal(size=(k, d)).astype(np.float32),
        np.zeros(k, np.float32), np.full(k, 0.5, np.float32), np.ones((k, 5), np.float32), np.zeros(k, np.float32),
        np.full(k, 0.5, np.float32),
    )
    path = tmp_path / "w.npz"
    scorer.save(path)
    loaded = annotator.UnitScorer.load(path)
    x = rng.normal(size=(3, d)).astype(np.float32)
    assert np.array_equal(loaded.scores(x), scorer.scores(x))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.npz"]


def _benchmark():
    spec = importlib.util.spec_from_file_location("annotator_fidelity", ROOT / "benchmarks" / "annotator_fidelity.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.realdata
def test_span_recall_floor_on_workbook(backend: str) -> None:
    if not WORKBOOK.is_file():
        pytest.skip("CLARITI workbook absent")
    floors = FLOORS if backend == "rules" else LEARNED_IN_SAMPLE_FLOORS
    from tasks.categories import ORDER
    from tasks.domains.swe import load_clariti

    bench = _benchmark()
    issues = [i for i in load_clariti(WORKBOOK) if i.spans is not None][:50]
    annotations = SPEC.run_local([AnnotateInput(instance_id=i.instance_id, text=i.text) for i in issues])
    result = bench.evaluate(issues, annotations, list(range(len(issues))), ORDER)
    recall = {cat: figures["recall"] for cat, figures in result["spans"].items()}
    for cat, floor in floors.items():
        assert recall[cat] >= floor, (backend, cat, recall[cat])


FLOORS = {
    "error_info": 0.80,
    "reproduction": 0.70,
    "expected_behavior": 0.55,
    "implementation": 0.30,
    "external_refs": 0.60,
    "version_env": 0.70,
}
"""Rules-only span recall floors on the first 50 annotated workbook rows, set slightly under the measured figures."""

LEARNED_IN_SAMPLE_FLOORS = {
    "error_info": 0.87,
    "reproduction": 0.75,
    "expected_behavior": 0.78,
    "implementation": 0.82,
    "external_refs": 0.60,
    "version_env": 0.83,
}
"""The shipped weights on the same rows. They were trained on these rows, so this is a regression guard only; the
honest figures are the cross-validated ones of benchmarks/train_annotator.py."""

"""The annotator role: local backend on small hand-written issues, LLM-side helpers, prompt, and one realdata floor."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tasks.categories import ORDER, Category
from tasks.llm.records import RoleConfig
from tasks.records import IssueRecord
from tasks.roles import annotator
from tasks.roles.annotator import (
    SPEC,
    AnnotateInput,
    Annotation,
    TaggedSpan,
    local,
    to_span_annotations,
    verbatim_spans,
)
from tasks.roles.annotator import scorer as annotator_scorer
from tasks.roles.base import run_role
from tests.conftest import CLARITI_WORKBOOK, load_benchmark

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
        monkeypatch.setattr(annotator_scorer, "WEIGHTS", tmp_path / "absent.npz")
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
def test_each_category_is_detected(text: str, category: Category, needle: str, backend: str, request) -> None:
    if backend == "learned" and category == Category.IMPLEMENTATION:
        # A known miss, kept visible: the unit is tagged (score 0.15 over the 0.04 unit threshold) but the learned
        # presence regression puts Implementation Details at 0.38, under its 0.46 threshold. In the workbook this
        # category's presence often comes from the gold patch (344 of its 750 example spans quote the patch, not the
        # issue), so issue-text cues predict it weakly. strict: this reports XPASS as a failure once the model
        # catches it, so the marker cannot outlive the miss.
        request.applymarker(pytest.mark.xfail(strict=True, reason="learned presence misses a plain fix proposal"))
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
    record = IssueRecord(instance_id="x__y-1", text=IMPLEMENTATION_ISSUE, spans=to_span_annotations(ann),
                         present=ann.present)
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
    assert int(scorer.feature.max()) < features.shape[1]
    assert sorted(set(scorer.tree_category.tolist())) == list(range(len(Category)))
    assert np.abs(scorer.text_coef).max(axis=1).min() > 0  # every category has a learned text model
    scores = scorer.scores(features)
    assert np.all((scores > 0) & (scores < 1))
    assert scores.std(axis=0).min() > 0.01  # the trees, not just a constant, move the scores


def test_default_annotation_uses_the_blended_scores() -> None:
    if not annotator.WEIGHTS.is_file():
        pytest.skip("annotator_weights.npz not shipped")
    scorer = annotator.UnitScorer.load(annotator.WEIGHTS)
    prepared = annotator.prepare_batch([AnnotateInput(text=t) for t in ALL])
    differs = False
    for p in prepared:
        blended = scorer.scores(p.features, p.hashed)
        assert annotator.scored_annotation(p, scorer) == annotator.scored_annotation(p, scorer, blended)
        trees = scorer.tree_scores(p.features)
        differs |= not np.allclose(blended, trees)
    assert differs  # the text model moves the scores that the default path uses


def test_presence_threshold_zero_means_always_present() -> None:
    if not annotator.WEIGHTS.is_file():
        pytest.skip("annotator_weights.npz not shipped")
    k = len(Category)
    scorer = dataclasses.replace(
        annotator.UnitScorer.load(annotator.WEIGHTS), presence_coef=np.zeros((k, 5)), presence_bias=np.full(k, -30.0),
        presence_threshold=np.zeros(k), presence_from_spans=np.zeros(k, np.int32))
    for p in annotator.prepare_batch([AnnotateInput(text=t) for t in ALL]):
        ann = annotator.scored_annotation(p, scorer)
        assert ann.present == list(ORDER)
        assert {s.category for s in ann.spans} == set(ORDER)  # present <=> has spans


def test_absent_weights_fall_back_to_rules(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(annotator_scorer, "WEIGHTS", tmp_path / "absent.npz")
    inputs = [AnnotateInput(text=t) for t in ALL]
    out = SPEC.run_local(inputs)
    assert out == annotator.annotate_prepared(annotator.prepare_batch(inputs), None)
    assert Category.VERSION_ENV in out[ALL.index(VERSION_ISSUE)].present


def _tiny_scorer(threshold: float = 0.5) -> annotator.UnitScorer:
    """Two stumps per category on feature 0 or 1 (hand-made, not learned)."""
    dumps = []
    for j in range(len(Category)):
        stump = {"split_feature": j % 2, "threshold": 0.0, "decision_type": "<=",
                 "left_child": {"leaf_value": -2.0}, "right_child": {"leaf_value": 1.0 + j}}
        dumps.append({"tree_info": [{"tree_structure": stump}, {"tree_structure": {"leaf_value": 0.5}}]})
    k = len(Category)
    text_coef = np.zeros((k, 1 << annotator.TEXT_BITS), dtype=np.float32)
    text_coef[:, :4] = np.arange(k * 4, dtype=np.float32).reshape(k, 4) / 10
    return annotator.UnitScorer(
        **annotator.trees_from_lightgbm(dumps), text_coef=text_coef, text_bias=np.full(k, -0.25),
        unit_threshold=np.full(k, threshold), unit_relative=np.zeros(k), presence_coef=np.ones((k, 5)),
        presence_bias=np.zeros(k), presence_threshold=np.full(k, 0.5), presence_from_spans=np.zeros(k, np.int32),
    )


def test_tree_arrays_score_like_the_stumps() -> None:
    scorer = _tiny_scorer()
    x = np.array([[-1.0, 2.0, 0.0], [3.0, -1.0, 0.0]], dtype=np.float32)
    scores = scorer.scores(x)
    sig = lambda z: 1.0 / (1.0 + np.exp(-z))  # noqa: E731
    assert np.allclose(scores[0, 0], sig(-2.0 + 0.5)) and np.allclose(scores[1, 0], sig(1.0 + 0.5))
    assert np.allclose(scores[0, 1], sig(2.0 + 0.5)) and np.allclose(scores[1, 1], sig(-2.0 + 0.5))


def test_weights_round_trip(tmp_path) -> None:
    scorer = _tiny_scorer()
    path = tmp_path / "w.npz"
    scorer.save(path)
    loaded = annotator.UnitScorer.load(path)
    x = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
    assert np.array_equal(loaded.scores(x), scorer.scores(x))
    hashed = annotator.hashed_text(annotator.segment(LONG_SNIPPET_ISSUE))
    x = np.zeros((hashed.rows, 3), np.float32)
    assert np.abs(loaded.scores(x, hashed) - scorer.scores(x, hashed)).max() < 1e-3  # text weights stored as float16
    assert np.array_equal(loaded.presence_from_spans, scorer.presence_from_spans)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.npz"]


def test_lightgbm_export_matches_lightgbm() -> None:
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(1)
    x = rng.normal(size=(400, 6)).astype(np.float32)
    dumps, probs = [], []
    for j in range(len(Category)):
        y = (x[:, j % 6] + 0.5 * x[:, (j + 1) % 6] > 0).astype(int)
        model = lgb.LGBMClassifier(n_estimators=20, num_leaves=7, n_jobs=1, verbose=-1).fit(x, y)
        dumps.append(model.booster_.dump_model())
        probs.append(model.predict_proba(x)[:, 1])
    k = len(Category)
    scorer = annotator.UnitScorer(
        **annotator.trees_from_lightgbm(dumps), text_coef=np.zeros((k, 1 << annotator.TEXT_BITS), np.float32),
        text_bias=np.zeros(k), unit_threshold=np.zeros(k), unit_relative=np.zeros(k), presence_coef=np.zeros((k, 5)),
        presence_bias=np.zeros(k), presence_threshold=np.zeros(k), presence_from_spans=np.zeros(k, np.int32),
    )
    assert np.abs(scorer.scores(x) - np.stack(probs, axis=1)).max() < 1e-5


def test_hashed_text_is_stable_and_normalised() -> None:
    units = annotator.segment(LONG_SNIPPET_ISSUE)
    hashed = annotator.hashed_text(units)
    assert hashed.rows == len(units) and hashed.indptr[-1] == len(hashed.indices) == len(hashed.values)
    assert hashed.indices.min() >= 0 and hashed.indices.max() < 1 << annotator.TEXT_BITS
    for k in range(hashed.rows):
        row = hashed.values[hashed.indptr[k] : hashed.indptr[k + 1]]
        assert abs(float(np.linalg.norm(row)) - 1.0) < 1e-5
    again = annotator.hashed_text(annotator.segment(LONG_SNIPPET_ISSUE))
    assert np.array_equal(again.indices, hashed.indices) and np.array_equal(again.values, hashed.values)
    # CRC-32 of the kind token: the same bucket on every run and machine (Python's str hash is salted per process)
    import zlib

    assert (zlib.crc32(b"k:code") & ((1 << annotator.TEXT_BITS) - 1)) in set(hashed.indices.tolist())


def test_text_model_matches_sklearn_logistic_regression() -> None:
    sp = pytest.importorskip("scipy.sparse")
    linear = pytest.importorskip("sklearn.linear_model")
    issues = [LONG_SNIPPET_ISSUE, TEMPLATE_ISSUE, *ALL]
    units = [u for text in issues for u in annotator.segment(text)]
    hashed = annotator.hashed_text(units)
    x = sp.csr_matrix((hashed.values, hashed.indices, hashed.indptr), shape=(hashed.rows, 1 << annotator.TEXT_BITS))
    k = len(Category)
    coef, bias, probs = np.zeros((k, x.shape[1]), np.float32), np.zeros(k), []
    for j in range(k):
        y = np.array([u.kind == ("code", "prose")[j % 2] for u in units], dtype=int)
        model = linear.LogisticRegression(C=4.0, max_iter=2000).fit(x, y)
        coef[j], bias[j] = model.coef_[0], model.intercept_[0]
        probs.append(model.predict_proba(x)[:, 1])
    scorer = dataclasses.replace(_tiny_scorer(), text_coef=coef, text_bias=bias)
    assert np.abs(scorer.text_scores(hashed) - np.stack(probs, axis=1)).max() < 1e-5
    features = np.zeros((hashed.rows, 3), np.float32)
    blend = scorer.scores(features, hashed)
    expected = ((1 - annotator.TEXT_WEIGHT) * scorer.tree_scores(features)
                + annotator.TEXT_WEIGHT * scorer.text_scores(hashed))
    assert np.allclose(blend, expected)


def test_text_scores_of_an_empty_row_are_the_bias() -> None:
    scorer = _tiny_scorer()  # text_coef[j, :4] = (4j .. 4j + 3) / 10, bias -0.25
    hashed = annotator.HashedText(indptr=np.array([0, 2, 2, 3]), indices=np.array([0, 3, 1], np.int32),
                                  values=np.array([1.0, 0.5, 2.0], np.float32))
    raw = np.log(scorer.text_scores(hashed) / (1 - scorer.text_scores(hashed)))
    j = np.arange(len(Category))
    assert np.allclose(raw[0], 4 * j / 10 * 1.0 + (4 * j + 3) / 10 * 0.5 - 0.25, atol=1e-4)
    assert np.allclose(raw[1], -0.25, atol=1e-4)
    assert np.allclose(raw[2], (4 * j + 1) / 10 * 2.0 - 0.25, atol=1e-4)


def test_unit_tags_need_threshold_and_share_of_best() -> None:
    scores = np.array([[0.9, 0.1], [0.4, 0.05], [0.2, 0.02]])
    tags = annotator.unit_tags(scores, np.array([0.3, 0.04]), np.array([0.5, 0.0]))
    assert tags.tolist() == [[True, True], [False, True], [False, False]]
    assert annotator.unit_tags(np.zeros((0, 2)), np.zeros(2), np.zeros(2)).shape == (0, 2)


def test_fill_joins_units_of_one_group_only() -> None:
    groups = np.array([0, 0, 0, 0, 1, 1])
    tagged = np.array([True, False, False, True, False, True])
    assert annotator.fill_groups(groups, tagged).tolist() == [True, True, True, True, False, True]
    assert annotator.fill_groups(groups, np.array([False, True, False, False, True, False])).tolist() == [
        False, True, False, False, True, False]


TEMPLATE_ISSUE = """Widget resize loses the aspect ratio

<!-- Before filing, read the guide at https://example.org/guide/contributing.html and search
the tracker. -->

Resizing a widget with `keep_ratio=True` stretches it anyway.
"""

LONG_SNIPPET_ISSUE = """Sorting a table by two columns ignores the second column

To reproduce, run:

```python
from tablekit import Table
t = Table(rows=[(1, "b"), (1, "a"), (0, "c")])
t.sort_by("first", "second")
print(t.rows)
```
"""


def test_link_in_template_comment_is_an_external_reference(backend: str) -> None:
    refs = _spans(_annotate(TEMPLATE_ISSUE), Category.EXTERNAL_REFS)
    assert "https://example.org/guide/contributing.html" in refs, refs
    units = annotator.segment(TEMPLATE_ISSUE)
    assert [u.text for u in units if u.kind == "comment"] == ["https://example.org/guide/contributing.html"]


def test_code_block_is_one_reproduction_span() -> None:
    if not annotator.WEIGHTS.is_file():
        pytest.skip("annotator_weights.npz not shipped")
    spans = _spans(_annotate(LONG_SNIPPET_ISSUE), Category.REPRODUCTION)
    code = [s for s in spans if "Table(rows=" in s]
    assert len(code) == 1, spans  # one span for the block, not one per line
    assert "from tablekit import Table" in code[0] and code[0].endswith("print(t.rows)"), spans


def _benchmark():
    return load_benchmark("annotator_fidelity")


@pytest.mark.realdata
def test_span_recall_floor_on_workbook(backend: str) -> None:
    if not CLARITI_WORKBOOK.is_file():
        pytest.skip("CLARITI workbook absent")
    floors = FLOORS if backend == "rules" else LEARNED_IN_SAMPLE_FLOORS
    from tasks.categories import ORDER
    from tasks.domains.swe import load_clariti

    bench = _benchmark()
    issues = [i for i in load_clariti(CLARITI_WORKBOOK) if i.spans is not None][:50]
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
    "error_info": 0.93,
    "reproduction": 0.95,
    "expected_behavior": 0.95,
    "implementation": 0.95,
    "external_refs": 0.92,
    "version_env": 0.95,
}
"""The shipped weights on the same rows. They were trained on these rows, so this is a regression guard only; the
honest figures are the cross-validated ones of benchmarks/train_annotator.py."""

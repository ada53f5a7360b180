"""The annotator trainer's selection rules (benchmarks/train_annotator.py) on small synthetic inputs."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import load_benchmark


@pytest.fixture(scope="module")
def train():
    pytest.importorskip("sklearn")
    return load_benchmark("train_annotator")


class _Geometry:
    """Each tagged unit is its own span; units 0 and 1 are the gold spans of category 0."""

    def counts(self, j: int, tagged: np.ndarray) -> tuple[int, int, int, int]:
        hits = int(tagged[0]) + int(tagged[1])
        return 2, hits, int(tagged.sum()), hits


def test_unit_rule_is_the_most_precise_one_that_keeps_the_recall_floor(train) -> None:
    scores = [np.array([[0.9], [0.3], [0.5], [0.1]])]
    # recall 1.0 needs t <= 0.3; then unit 2 (0.5) is tagged too: precision 2/3, the best feasible; t in (0.1, 0.3]
    # ties and the lowest of them wins (more recall margin out of sample)
    assert train._best_span_threshold([_Geometry()], scores, 0) == (0.12, 0.0)
    points = train.span_points([_Geometry()], scores, 0)
    assert len(points) == len(train.GRID) * len(train.RELATIVE_GRID)
    assert all(p[2] < train.RECALL_FLOOR for p in points if p[0] > 0.3)


def test_unit_rule_falls_back_to_the_highest_recall(train) -> None:
    scores = [np.array([[0.9], [0.01], [0.5], [0.1]])]  # unit 1 is under every threshold of the grid
    t, r = train._best_span_threshold([_Geometry()], scores, 0)
    assert (t, r) == (0.52, 0.0)  # recall 0.5 at best; precision 1/1 once unit 2 (0.5) drops out


def test_presence_rule_selection(train) -> None:
    rng = np.random.default_rng(0)
    n = 200
    y = np.zeros((n, 6), dtype=np.int8)
    y[:, 0] = np.arange(n) % 2  # separable by feature 0
    y[:, 1] = (rng.random(n) < 0.95).astype(np.int8)  # nearly always present, no signal
    y[:, 2] = np.arange(n) % 3 == 0  # read off "has a tagged unit"
    y[:, 3:] = 1
    feats = rng.normal(size=(n, 6, 5)).astype(np.float32)
    feats[:, 0, 0] = y[:, 0] * 4.0 - 2.0 + rng.normal(scale=0.3, size=n)
    has_spans = np.ones((n, 6), dtype=bool)
    has_spans[:, 2] = y[:, 2] == 1
    folds = train.issue_folds(n, 4, 0)
    coef, bias, threshold, from_spans = train._fit_presence(list(feats), y, has_spans, folds)
    assert threshold[0] > 0 and abs(coef[0, 0]) > 1 and from_spans[0] == 0  # the regression
    assert threshold[1] == 0 and from_spans[1] == 0  # always present: the regression does not beat the prior
    assert from_spans[2] == 1  # has a tagged unit
    assert bias[3] == 30.0  # constant label


def test_frontier_and_its_plot(train, tmp_path) -> None:
    scores = [np.tile(np.array([[0.9], [0.3], [0.5], [0.1]]), (1, 6))]
    front = train.frontier([_Geometry()], scores, 0.8)
    assert len(front) == 6
    for f in front.values():
        assert len(f["points"]) == len(train.GRID) * len(train.RELATIVE_GRID)
        assert f["best_precision_at_recall"] == round(2 / 3, 4)  # recall 1.0 with units 0, 1, 2 tagged
    achieved = {cat: {"recall": 0.8, "span_precision": 0.6} for cat in front}
    a, b = tmp_path / "a.png", tmp_path / "b.png"
    train.frontier_plot(front, achieved, a, 0.8, 0.7)
    train.frontier_plot(front, achieved, b, 0.8, 0.7)
    assert a.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and a.read_bytes() == b.read_bytes()


def test_missing_workbook_is_one_line_and_exit_2(train, tmp_path, capsys) -> None:
    assert train.main(["--data", str(tmp_path / "absent.xlsx")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "absent.xlsx" in err[0]

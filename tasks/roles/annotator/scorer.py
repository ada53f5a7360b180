"""The learned unit scorer (on by default when ``tasks/roles/annotator_weights.npz`` is shipped).

Per category, a gradient-boosted tree ensemble over the unit features (:mod:`tasks.roles.annotator.features`; trained
with LightGBM, stored and evaluated as plain numpy arrays) and a logistic regression over the hashed text each score the
unit; the score is their even blend. A unit is tagged when its score reaches the category's threshold and a share of
the issue's best score for it (:func:`unit_tags`). The thresholds are recall-first: the best span precision at span
recall >= 0.82 on inner folds, because a span the annotator misses stays in a masked issue. Tagged units are then filled
within their paragraph or code block (:func:`fill_groups`: every unit between two tagged units of the same group is
tagged too), so one region gives one span rather than fragments. Presence follows the rule the training folds preferred
per category: always present, "has a tagged unit", or a small issue-level regression over its unit scores
(:func:`presence_features`; a present category keeps at least its best unit).

The shipped weights were trained by ``benchmarks/train_annotator.py`` on all 496 annotated rows of the CLARITI workbook
(``category_mapping`` spans located in ``original issue``), with thresholds from an inner 4-fold split; the file holds
numbers only. Its honest figures are the issue-level 5-fold cross-validated ones printed by that script and by
``benchmarks/annotator_fidelity.py``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise
from pathlib import Path

import numpy as np

from tasks.categories import ORDER
from tasks.roles.annotator.features import FEATURE_VERSION, HashedText
from tasks.roles.annotator.records import Unit

WEIGHTS = Path(__file__).parents[1] / "annotator_weights.npz"
"""The shipped weights (``tasks/roles/annotator_weights.npz``); without the file the annotator is the rules alone."""
TEXT_WEIGHT = 0.5
"""A unit's score is ``(1 - TEXT_WEIGHT) * trees + TEXT_WEIGHT * text model`` (fixed, not tuned)."""


def unit_tags(scores: np.ndarray, threshold: np.ndarray, relative: np.ndarray) -> np.ndarray:
    """(n_units, n_categories) bool: a unit is tagged with c when its score reaches c's threshold and
    ``relative[c]`` times the issue's best score for c."""
    scores = np.asarray(scores)
    if not len(scores):
        return np.zeros(scores.shape, dtype=bool)
    return (scores >= threshold[None, :]) & (scores >= relative[None, :] * scores.max(axis=0, keepdims=True))


@dataclass(frozen=True)
class UnitScorer:
    """Per category a gradient-boosted tree ensemble over unit features and a logistic regression over the unit's hashed
    text (their even blend is the unit score), and the rules that turn scores into spans and presence.

    The trees are stored flat (numbers only): node ``k`` sends a row to ``left[k]`` when ``feature_value <=
    threshold[k]`` and to ``right[k]`` otherwise; a leaf has ``feature[k] == -1`` and adds ``value[k]`` to the raw
    score of its tree's category (``tree_category``); ``roots`` are the trees' root nodes. The probability is the
    sigmoid of the summed raw score.
    """

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    roots: np.ndarray
    tree_category: np.ndarray
    text_coef: np.ndarray
    """(6, 2 ** TEXT_BITS) per category the logistic-regression weights of the hashed unit text (``hashed_text``)."""
    text_bias: np.ndarray
    unit_threshold: np.ndarray
    """A unit is tagged with a category when its score reaches this (before filling, see :func:`fill_groups`)..."""
    unit_relative: np.ndarray
    """... and this share of the issue's best score for the category (:func:`unit_tags`)."""
    presence_coef: np.ndarray
    """(6, n_presence_features): per category a logistic regression over :func:`presence_features`."""
    presence_bias: np.ndarray
    presence_threshold: np.ndarray
    """A category is present when its presence probability reaches this (0: always present)."""
    presence_from_spans: np.ndarray
    """(6,) 1 where presence is simply "has a tagged unit" (chosen on the training folds), 0 for the regression."""

    def scores(self, features: np.ndarray, text: HashedText | None = None) -> np.ndarray:
        """(n_units, 6) scores: the trees' probabilities, blended with the text model's when ``text`` is given."""
        trees = self.tree_scores(features)
        if text is None:
            return trees
        return ((1.0 - TEXT_WEIGHT) * trees + TEXT_WEIGHT * self.text_scores(text)).astype(np.float32)

    def text_scores(self, text: HashedText) -> np.ndarray:
        """(n_units, 6) probabilities of the hashed-text logistic regression."""
        raw = np.zeros((text.rows, len(ORDER)), dtype=np.float64)
        if len(text.indices):
            contrib = self.text_coef[:, text.indices].T.astype(np.float64) * text.values[:, None]
            nonempty = np.diff(text.indptr) > 0  # reduceat needs non-empty segments
            raw[nonempty] = np.add.reduceat(contrib, text.indptr[:-1][nonempty], axis=0)
        return _sigmoid(raw + self.text_bias[None, :])

    def tree_scores(self, features: np.ndarray) -> np.ndarray:
        """(n_units, 6) probabilities of the tree ensembles."""
        x = np.asarray(features, dtype=np.float64)
        n_cats = len(ORDER)
        raw = np.zeros((len(x), n_cats), dtype=np.float64)
        if not len(x) or not len(self.roots):
            return _sigmoid(raw)
        feature = self.feature.astype(np.int64)
        leaf = feature < 0
        safe_feature = np.where(leaf, 0, feature)
        onehot = np.zeros((len(self.roots), n_cats), dtype=np.float64)
        onehot[np.arange(len(self.roots)), self.tree_category.astype(np.int64)] = 1.0
        for lo in range(0, len(x), 512):
            rows = x[lo : lo + 512]
            node = np.broadcast_to(self.roots.astype(np.int64), (len(rows), len(self.roots))).copy()
            r = np.arange(len(rows))[:, None]
            while True:
                inner = ~leaf[node]
                if not inner.any():
                    break
                go_left = rows[r, safe_feature[node]] <= self.threshold[node]
                node = np.where(inner, np.where(go_left, self.left[node], self.right[node]), node)
            raw[lo : lo + 512] = self.value[node] @ onehot
        return _sigmoid(raw)

    def presence(self, units: list[Unit], scores: np.ndarray) -> np.ndarray:
        """(6,) presence probabilities of one issue (the regression's, whatever ``presence_from_spans`` says)."""
        feats = presence_features(units, scores, self.unit_threshold)
        return _sigmoid(np.sum(feats * self.presence_coef, axis=1) + self.presence_bias)

    _FIELDS = ("feature", "threshold", "left", "right", "value", "roots", "tree_category", "text_coef", "text_bias",
               "unit_threshold", "unit_relative", "presence_coef", "presence_bias", "presence_threshold",
               "presence_from_spans")
    _INTS = ("feature", "left", "right", "roots", "tree_category", "presence_from_spans")

    def save(self, path: Path) -> None:
        """Write the weights atomically (numbers only)."""
        tmp = path.with_name(path.name + ".tmp.npz")
        arrays = {k: getattr(self, k) for k in self._FIELDS}
        arrays["text_coef"] = np.asarray(self.text_coef, dtype=np.float16)  # halves the file; scores move < 1e-3
        np.savez_compressed(tmp, feature_version=np.int64(FEATURE_VERSION), **arrays)
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> UnitScorer:
        from tasks.errors import InputError

        with np.load(path, allow_pickle=False) as data:
            if "feature_version" not in data.files or int(data["feature_version"]) != FEATURE_VERSION:
                found = int(data["feature_version"]) if "feature_version" in data.files else "unknown"
                raise InputError(path, f"weights are for feature version {found}, "
                                       f"this code builds version {FEATURE_VERSION}", field="feature_version")
            missing = [k for k in cls._FIELDS if k not in data.files]
            if missing:
                raise InputError(path, "weights file lacks arrays", field=missing[0])
            arrays = {k: np.asarray(data[k], dtype=np.int32 if k in cls._INTS else np.float64) for k in cls._FIELDS}
            arrays["text_coef"] = np.asarray(data["text_coef"], dtype=np.float32)
        return cls(**arrays)


def trees_from_lightgbm(dumps: Sequence[dict]) -> dict[str, np.ndarray]:
    """Flatten the ``Booster.dump_model()`` of each category (in ``ORDER``) into :class:`UnitScorer`'s tree arrays.

    Only numerical ``<=`` splits are supported (unit features are finite numbers, never missing)."""
    feature, threshold, left, right, value, roots, tree_category = [], [], [], [], [], [], []

    def add(node: dict) -> int:
        k = len(feature)
        feature.append(-1)
        threshold.append(0.0)
        left.append(k)
        right.append(k)
        value.append(0.0)
        if "leaf_value" in node:
            value[k] = float(node["leaf_value"])
            return k
        if node.get("decision_type", "<=") != "<=":
            raise ValueError(f"unsupported split {node.get('decision_type')!r}")
        feature[k] = int(node["split_feature"])
        threshold[k] = float(node["threshold"])
        left[k] = add(node["left_child"])
        right[k] = add(node["right_child"])
        return k

    for j, dump in enumerate(dumps):
        for tree in dump["tree_info"]:
            roots.append(add(tree["tree_structure"]))
            tree_category.append(j)
    ints = lambda a: np.asarray(a, dtype=np.int32)  # noqa: E731
    return {"feature": ints(feature), "threshold": np.asarray(threshold, dtype=np.float64),
            "left": ints(left), "right": ints(right), "value": np.asarray(value, dtype=np.float64),
            "roots": ints(roots), "tree_category": ints(tree_category)}


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return (1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))).astype(np.float32)


def unit_groups(text: str, units: list[Unit]) -> np.ndarray:
    """Group index of each unit: consecutive units of one code block, or consecutive sentences of one prose paragraph
    (no blank line between them), share a group."""
    out = np.zeros(len(units), dtype=np.int64)
    gid = 0
    for k in range(1, len(units)):
        a, b = units[k - 1], units[k]
        same_block = b.block >= 0 and b.block == a.block
        same_paragraph = (a.block < 0 and b.block < 0 and b.kind == "prose" and a.kind in ("prose", "title")
                          and not re.search(r"\n[ \t]*\r?\n", text[a.end : b.start]))
        if not (same_block or same_paragraph):
            gid += 1
        out[k] = gid
    return out


def fill_groups(groups: np.ndarray, tagged: np.ndarray) -> np.ndarray:
    """Tag every unit between two tagged units of the same group, so that one region of a code block or paragraph
    becomes one span instead of fragments. ``tagged`` is (n_units,) or (n_units, n_categories) bool."""
    tagged = np.array(tagged, dtype=bool, copy=True)
    cols = tagged if tagged.ndim == 2 else tagged[:, None]
    for j in range(cols.shape[1]):
        idx = np.flatnonzero(cols[:, j])
        for a, b in pairwise(idx):
            if b > a + 1 and groups[a] == groups[b]:
                cols[a:b, j] = True
    return tagged


def presence_features(units: list[Unit], scores: np.ndarray, unit_threshold: np.ndarray) -> np.ndarray:
    """(6, 5) per category: best unit score, mean of the best three, rules say present, log count of rule units,
    log count of units over the unit threshold."""
    out = np.zeros((len(ORDER), 5), dtype=np.float32)
    for j, cat in enumerate(ORDER):
        col = np.sort(scores[:, j])[::-1] if len(units) else np.zeros(1, np.float32)
        rule_units = sum(1 for u in units if cat in u.cats)
        out[j] = (col[0], col[:3].mean(), 1.0 if rule_units else 0.0, np.log1p(rule_units),
                  np.log1p(float(np.sum(col >= unit_threshold[j]))))
    return out


@lru_cache(maxsize=4)
def _load_scorer(path: str, mtime_ns: int) -> UnitScorer:
    return UnitScorer.load(Path(path))


def default_scorer() -> UnitScorer | None:
    """The shipped learned scorer (``WEIGHTS``), or None when the file is absent (rules only)."""
    if WEIGHTS is None or not Path(WEIGHTS).is_file():
        return None
    return _load_scorer(str(WEIGHTS), Path(WEIGHTS).stat().st_mtime_ns)

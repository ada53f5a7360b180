"""Train the annotator's learned unit scorer on the CLARITI workbook and write ``tasks/roles/annotator_weights.npz``.

    .venv/bin/python benchmarks/train_annotator.py [--data ../shared/data/clariti/data.xlsx] [--cv-only] [--seed N]

Rows. Every unit the annotator's segmentation cuts from an annotated issue is one row: its features are those of
``tasks.roles.annotator.unit_features`` (rule tags and signals, unit kind, heading and lead-in context, neighbours'
rule tags, position, prototype cosines, MiniLM embedding of prose units); its label for category c is 1 when the
unit overlaps a workbook span of c located in the issue text (whitespace-insensitive).

Model. Per category, one LightGBM gradient-boosted tree ensemble over the unit features (settings ``GBM``, fixed
before the first CV run of this model), exported as flat numpy arrays (``tasks.roles.annotator.trees_from_lightgbm``)
so that the annotator needs no LightGBM at run time, and one logistic regression over the unit's hashed text
(``tasks.roles.annotator.hashed_text``: words, word bigrams, character 3/4-grams, kind, section, neighbours' words;
``TEXT_C`` fixed before its first CV run). A unit's score is their fixed even blend. Tagged units are filled within
their paragraph or code block (``fill_groups``) before they are merged into spans. Per category, on out-of-fold
scores of an inner 4-fold split of the training issues (never on the issues being scored): the *unit* rule
(``unit_tags``: a threshold and a share of the issue's best score, chosen for the best span precision at span recall
>= ``RECALL_FLOOR``, fill included), and the presence rule with the best out-of-fold presence F1 there: "always
present", "has a tagged unit", or an issue-level logistic regression over the unit scores (ties go to the simpler
rule).

Evaluation. Issue-level 5-fold cross-validation: each issue is annotated by a model (and thresholds) trained on the
other four folds; the figures are computed with ``benchmarks/annotator_fidelity.py``'s ``evaluate``. The shipped
weights are then trained on all annotated rows (thresholds again from an inner 4-fold split) and written atomically.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from itertools import pairwise
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.files import input_exists  # noqa: E402
from benchmarks.siblings import load  # noqa: E402
from tasks.text import find_all as _occurrences  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "clariti" / "data.xlsx"
OUT = ROOT / "benchmarks" / "out" / "train_annotator.json"
FRONTIER_PNG = ROOT / "benchmarks" / "out" / "annotator_frontier.png"
GBM = {"n_estimators": 300, "learning_rate": 0.05, "num_leaves": 15, "min_child_samples": 20, "subsample": 0.8,
       "subsample_freq": 1, "colsample_bytree": 0.3, "reg_lambda": 1.0}
"""LightGBM settings per category (one thread: deterministic, and no spinning against other jobs)."""
OUTER_FOLDS = 5
INNER_FOLDS = 4
SEED = 0
RECALL_FLOOR = 0.82
"""Unit thresholds are recall-first: the highest span precision whose span recall on the inner folds reaches this
(the target is 0.80; the margin absorbs the inner-to-outer fold drift). Masking needs recall: a span the annotator
misses stays in the masked issue. Where no threshold reaches the floor, the one with the highest recall."""
GRID = np.round(np.arange(0.02, 0.981, 0.02), 3)
RELATIVE_GRID = (0.0, 0.3, 0.5)
"""Candidate shares of the issue's best score a tagged unit must also reach (``tasks.roles.annotator.unit_tags``)."""
TEXT_C = 4.0
"""Inverse L2 strength of the hashed-text logistic regression (fixed before its first CV run)."""


def unit_labels(issue, prepared) -> np.ndarray:
    """(n_units, 6): 1 where the unit overlaps a workbook span of the category found in the issue text."""
    from tasks.categories import ORDER

    labels = np.zeros((len(prepared.units), len(ORDER)), dtype=np.int8)
    for j, cat in enumerate(ORDER):
        occ = [iv for s in issue.spans or [] if s.category == cat for iv in _occurrences(issue.text, s.text)]
        for k, unit in enumerate(prepared.units):
            if any(s < unit.end and unit.start < e for s, e in occ):
                labels[k, j] = 1
    return labels


def presence_labels(issues) -> np.ndarray:
    from tasks.categories import ORDER

    return np.array([[1 if c in i.present_categories() else 0 for c in ORDER] for i in issues], dtype=np.int8)


def issue_folds(n: int, k: int, seed: int) -> np.ndarray:
    """Fold index of each issue: a seeded permutation dealt round-robin."""
    order = np.random.default_rng(seed).permutation(n)
    folds = np.empty(n, dtype=np.int64)
    folds[order] = np.arange(n) % k
    return folds


def _fit_trees(x: np.ndarray, y: np.ndarray, seed: int = SEED) -> dict[str, np.ndarray]:
    """One LightGBM binary classifier per category; their trees as UnitScorer arrays."""
    import lightgbm as lgb

    from tasks.roles.annotator import trees_from_lightgbm

    dumps = []
    for j in range(y.shape[1]):
        if y[:, j].min() == y[:, j].max():
            dumps.append({"tree_info": [{"tree_structure": {"leaf_value": 30.0 if y[0, j] else -30.0}}]})
            continue
        model = lgb.LGBMClassifier(**GBM, n_jobs=1, random_state=seed, deterministic=True, verbose=-1)
        model.fit(x, y[:, j])
        dumps.append(model.booster_.dump_model())
    return trees_from_lightgbm(dumps)


def _text_matrix(prepared, rows):
    import scipy.sparse as sp

    from tasks.roles.annotator import TEXT_BITS

    blocks = [prepared[k].hashed for k in rows]
    return sp.vstack([sp.csr_matrix((h.values, h.indices, h.indptr), shape=(h.rows, 1 << TEXT_BITS))
                      for h in blocks]).tocsr()


def _fit_text(prepared, labels, rows) -> dict[str, np.ndarray]:
    """Per category a logistic regression on the hashed unit text; its weights as UnitScorer arrays."""
    from sklearn.linear_model import LogisticRegression

    from tasks.roles.annotator import TEXT_BITS

    x = _text_matrix(prepared, rows)
    y = np.vstack([labels[k] for k in rows])
    coef = np.zeros((y.shape[1], 1 << TEXT_BITS), dtype=np.float32)
    bias = np.zeros(y.shape[1])
    for j in range(y.shape[1]):
        if y[:, j].min() == y[:, j].max():
            bias[j] = 30.0 if y[0, j] else -30.0
            continue
        model = LogisticRegression(C=TEXT_C, max_iter=3000).fit(x, y[:, j])
        coef[j], bias[j] = model.coef_[0], model.intercept_[0]
    return {"text_coef": coef, "text_bias": bias}


def _fit_models(prepared, labels, rows, seed: int = SEED) -> dict[str, np.ndarray]:
    return {**_fit_trees(*_stack(prepared, labels, rows), seed=seed), **_fit_text(prepared, labels, rows)}


def _scorer(models: dict[str, np.ndarray], unit_threshold=None, pcoef=None, pbias=None, pthreshold=None,
            from_spans=None, unit_relative=None):
    from tasks.roles.annotator import TEXT_BITS, UnitScorer

    k = 6
    z = np.zeros(k)
    models = {"text_coef": np.zeros((k, 1 << TEXT_BITS), np.float32), "text_bias": z, **models}
    return UnitScorer(**models, unit_threshold=z if unit_threshold is None else np.asarray(unit_threshold, np.float64),
                      unit_relative=z if unit_relative is None else np.asarray(unit_relative, np.float64),
                      presence_coef=np.zeros((k, 5)) if pcoef is None else np.asarray(pcoef, np.float64),
                      presence_bias=z if pbias is None else np.asarray(pbias, np.float64),
                      presence_threshold=z if pthreshold is None else np.asarray(pthreshold, np.float64),
                      presence_from_spans=np.zeros(k, np.int32) if from_spans is None else
                      np.asarray(from_spans, np.int32))


def _best_f1_threshold(scores: np.ndarray, labels: np.ndarray) -> float:
    best, best_f1 = 0.5, -1.0
    for t in GRID:
        pred = scores >= t
        tp = float(np.sum(pred & (labels == 1)))
        fp = float(np.sum(pred & (labels == 0)))
        fn = float(np.sum(~pred & (labels == 1)))
        f1 = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
        if f1 > best_f1 + 1e-9:
            best, best_f1 = float(t), f1
    return best


class SpanGeometry:
    """What the span-level objective needs of one issue: unit offsets, which neighbours merge, gold spans."""

    def __init__(self, issue, prepared):
        from tasks.categories import ORDER
        from tasks.roles.annotator import only_fences, unit_groups

        text = issue.text
        units = prepared.units
        self.groups = unit_groups(text, units)
        self.starts = np.array([u.start for u in units], dtype=np.int64)
        self.ends = np.array([u.end for u in units], dtype=np.int64)
        self.joins = np.array([only_fences(text[a.end : b.start]) for a, b in pairwise(units)], dtype=bool)
        self.gold: list[list[list[tuple[int, int]]]] = []
        self.gold_cum: list[np.ndarray] = []
        for cat in ORDER:
            spans = [occ for g in dict.fromkeys(s.text for s in issue.spans or [] if s.category == cat)
                     if (occ := _occurrences(text, g))]
            mask = np.zeros(len(text) + 1, dtype=np.int64)
            for occ in spans:
                for a, b in occ:
                    mask[a:b] = 1
            self.gold.append(spans)
            self.gold_cum.append(np.concatenate([[0], np.cumsum(mask)]))

    def counts(self, j: int, tagged: np.ndarray) -> tuple[int, int, int, int]:
        """(gold spans, gold spans >= 50% covered, predicted spans, predicted spans touching gold) for category j,
        after the annotator's fill within paragraphs and code blocks."""
        from tasks.roles.annotator import fill_groups

        tagged = fill_groups(self.groups, tagged)
        spans = []
        k, n = 0, len(tagged)
        while k < n:
            if not tagged[k]:
                k += 1
                continue
            first = k
            while k + 1 < n and tagged[k + 1] and self.joins[k]:
                k += 1
            spans.append((self.starts[first], self.ends[k]))
            k += 1
        cum = self.gold_cum[j]
        hit_pred = sum(1 for a, b in spans if cum[b] - cum[a] > 0)
        if not self.gold[j]:
            return 0, 0, len(spans), hit_pred
        covered = np.zeros(int(self.ends.max()) + 1 if n else 1, dtype=np.int64)
        for a, b in spans:
            covered[a:b] = 1
        ccum = np.concatenate([[0], np.cumsum(covered)])
        hit_gold = 0
        for occ in self.gold[j]:
            best = max((ccum[min(b, len(covered))] - ccum[min(a, len(covered))]) / max(b - a, 1) for a, b in occ)
            hit_gold += best >= 0.5
        return len(self.gold[j]), hit_gold, len(spans), hit_pred


def span_points(geoms, scores: list[np.ndarray], j: int) -> list[tuple[float, float, float, float]]:
    """(threshold, relative, span recall, span precision) of category j for every ``unit_tags`` rule on the grids."""
    from tasks.roles.annotator import unit_tags

    points = []
    for r in RELATIVE_GRID:
        for t in GRID:
            g = h = p = ph = 0
            for geom, sc in zip(geoms, scores):
                tagged = unit_tags(sc[:, j : j + 1], np.array([t]), np.array([r]))[:, 0]
                a, b, c, d = geom.counts(j, tagged)
                g, h, p, ph = g + a, h + b, p + c, ph + d
            points.append((float(t), float(r), h / g if g else 0.0, ph / p if p else 0.0))
    return points


def _best_span_threshold(geoms, scores: list[np.ndarray], j: int) -> tuple[float, float]:
    """The (threshold, relative) pair of ``unit_tags`` with the highest span precision (then recall) among those whose
    span recall reaches ``RECALL_FLOOR`` for category j; if none reaches it, the highest recall (then precision).
    Remaining ties go to the first on the grids: the lowest share, then the lowest threshold (more recall margin)."""
    candidates = span_points(geoms, scores, j)
    feasible = [c for c in candidates if c[2] >= RECALL_FLOOR]
    best = max(feasible, key=lambda c: (c[3], c[2])) if feasible else max(candidates, key=lambda c: (c[2], c[3]))
    return best[0], best[1]


def frontier(geoms, scores: list[np.ndarray], recall_target: float) -> dict:
    """Per category, on out-of-fold scores: every rule's (recall, precision) and the best precision any rule reaches
    at span recall >= ``recall_target``. The rule is picked with hindsight here, so that precision is an upper
    bound of what this scorer can do at that recall, not a result."""
    from tasks.categories import ORDER

    out = {}
    for j, cat in enumerate(ORDER):
        points = span_points(geoms, scores, j)
        ok = [p for p in points if p[2] >= recall_target]
        out[cat.key] = {"points": [[round(v, 4) for v in p] for p in points],
                        "best_precision_at_recall": round(max(p[3] for p in ok), 4) if ok else None}
    return out


def frontier_plot(front: dict, achieved: dict, path: Path, recall_target: float, precision_target: float) -> None:
    """Span precision against span recall of every unit rule, per category, with the target region and the
    cross-validated result; a deterministic PNG."""
    import io

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    from tasks.store import atomic_write_bytes

    fig = Figure(figsize=(11, 6.6), dpi=100)
    FigureCanvasAgg(fig)
    axes = fig.subplots(2, 3, sharex=True, sharey=True)
    for ax, (cat, f) in zip(axes.flat, front.items()):
        pts = np.array([p[2:] for p in f["points"]])
        ax.add_patch(Rectangle((recall_target, precision_target), 1.05 - recall_target, 1.05 - precision_target,
                               color="#2ca02c", alpha=0.12, linewidth=0, label="target"))
        ax.scatter(pts[:, 0], pts[:, 1], s=6, color="#1f77b4", label="unit rules (out-of-fold scores)")
        a = achieved[cat]
        ax.scatter([a["recall"]], [a["span_precision"]], s=60, marker="*", color="#d62728", zorder=3,
                   label="cross-validated result")
        best = f["best_precision_at_recall"]
        ax.set_title(f"{cat}  (best P at R>={recall_target:.2f}: {best if best is not None else '-'})", fontsize=9)
        ax.set_xlim(0, 1.02)
        ax.set_ylim(0, 1.02)
        ax.grid(True, color="#dddddd", linewidth=0.6)
    for ax in axes[1]:
        ax.set_xlabel("span recall")
    for ax in axes[:, 0]:
        ax.set_ylabel("span precision")
    axes[0, 0].legend(fontsize=7, loc="lower left")
    fig.suptitle("Annotator span precision vs recall on the CLARITI workbook (issue-level 5-fold CV, local backend)",
                 fontsize=11)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata={"Software": None})
    atomic_write_bytes(path, buffer.getvalue())


def _stack(prepared, labels, rows):
    x = np.vstack([prepared[k].features for k in rows])
    y = np.vstack([labels[k] for k in rows])
    return x, y


def fit_scorer(prepared, labels, presence, rows, geoms, seed: int = SEED):
    """A UnitScorer trained on ``rows`` (issue indices), thresholds and presence from an inner split of those rows."""
    from tasks.roles.annotator import presence_features, unit_tags

    rows = np.asarray(rows)
    inner = issue_folds(len(rows), INNER_FOLDS, seed + 1)
    oof_units: list[np.ndarray] = [None] * len(rows)  # type: ignore[list-item]
    for f in range(INNER_FOLDS):
        train, test = rows[inner != f], np.flatnonzero(inner == f)
        scorer = _scorer(_fit_models(prepared, labels, train, seed))
        for t in test:
            oof_units[t] = scorer.scores(prepared[rows[t]].features, prepared[rows[t]].hashed)
    n_cats = labels[0].shape[1]
    fold_geoms = [geoms[k] for k in rows]
    rules = np.array([_best_span_threshold(fold_geoms, oof_units, j) for j in range(n_cats)])
    unit_threshold, unit_relative = rules[:, 0], rules[:, 1]
    pcoef, pbias, presence_threshold, from_spans = _fit_presence(
        [presence_features(prepared[k].units, sc, unit_threshold) for k, sc in zip(rows, oof_units)], presence[rows],
        np.array([unit_tags(sc, unit_threshold, unit_relative).any(axis=0) for sc in oof_units]), inner)
    return _scorer(_fit_models(prepared, labels, rows, seed), unit_threshold, pcoef, pbias, presence_threshold,
                   from_spans, unit_relative)


def _f1(pred: np.ndarray, y: np.ndarray) -> float:
    tp = float(np.sum(pred & (y == 1)))
    return 2 * tp / (tp + float(np.sum(pred)) + float(np.sum(y == 1))) if tp else 0.0


def _fit_presence(feats: list[np.ndarray], y: np.ndarray, has_spans: np.ndarray, folds: np.ndarray):
    """Per category the presence rule with the best out-of-fold F1 on the training issues (``folds``: their inner
    split), among: *always present* (threshold 0), *has a tagged unit*, and a logistic regression on the issue-level
    features of the out-of-fold unit scores (its threshold maximises its out-of-fold F1). Ties go to the simpler rule
    in that order, so a regression that only matches the prior is not used."""
    from sklearn.linear_model import LogisticRegression

    x = np.stack(feats)  # (issues, 6, 5)
    coef = np.zeros((y.shape[1], x.shape[2]))
    bias = np.zeros(y.shape[1])
    threshold = np.zeros(y.shape[1])
    from_spans = np.zeros(y.shape[1], dtype=np.int32)
    for j in range(y.shape[1]):
        if y[:, j].min() == y[:, j].max():
            bias[j] = 30.0 if y[0, j] else -30.0
            continue
        oof = np.zeros(len(y))
        for f in np.unique(folds):
            train, test = folds != f, folds == f
            if y[train, j].min() == y[train, j].max():
                oof[test] = float(y[train, j][0])
                continue
            oof[test] = LogisticRegression(C=1.0, max_iter=2000).fit(x[train, j], y[train, j]).predict_proba(
                x[test, j])[:, 1]
        t = _best_f1_threshold(oof, y[:, j])
        always, spans, regression = _f1(np.ones(len(y), bool), y[:, j]), _f1(has_spans[:, j], y[:, j]), \
            _f1(oof >= t, y[:, j])
        if always >= max(spans, regression):
            continue  # threshold 0: every issue has the category
        if spans >= regression:
            from_spans[j] = 1
            continue
        model = LogisticRegression(C=1.0, max_iter=2000).fit(x[:, j], y[:, j])
        coef[j], bias[j], threshold[j] = model.coef_[0], model.intercept_[0], t
    return coef, bias, threshold, from_spans


def cross_validated_annotations(issues, prepared, labels, presence, geoms, seed: int = SEED):
    """Each issue annotated by a scorer trained on the other folds; also the per-fold thresholds and the out-of-fold
    unit scores."""
    from tasks.roles.annotator import scored_annotation

    folds = issue_folds(len(issues), OUTER_FOLDS, seed)
    annotations = [None] * len(issues)
    scores = [None] * len(issues)
    thresholds = []
    for f in range(OUTER_FOLDS):
        scorer = fit_scorer(prepared, labels, presence, np.flatnonzero(folds != f), geoms, seed)
        thresholds.append({"unit": scorer.unit_threshold.round(3).tolist(),
                           "relative": scorer.unit_relative.round(3).tolist(),
                           "presence": scorer.presence_threshold.round(3).tolist(),
                           "presence_from_spans": scorer.presence_from_spans.tolist()})
        for k in np.flatnonzero(folds == f):
            p = prepared[k]
            scores[k] = scorer.scores(p.features, p.hashed)
            annotations[k] = scored_annotation(p, scorer, scores[k])
    return annotations, thresholds, scores


def load_rows(path: Path):
    """Annotated workbook issues, their prepared units, unit labels and presence labels."""
    from tasks.domains.swe import load_clariti
    from tasks.roles.annotator import AnnotateInput, prepare_batch

    issues = [i for i in load_clariti(path) if i.spans is not None]
    prepared = prepare_batch([AnnotateInput(instance_id=i.instance_id, text=i.text) for i in issues])
    return (issues, prepared, *training_rows(issues, prepared))


def training_rows(issues, prepared):
    """Unit labels, presence labels and span geometry of prepared workbook issues."""
    labels = [unit_labels(i, p) for i, p in zip(issues, prepared)]
    geoms = [SpanGeometry(i, p) for i, p in zip(issues, prepared)]
    return labels, presence_labels(issues), geoms


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--cv-only", action="store_true", help="print the CV figures, do not write the weights")
    parser.add_argument("--seed", type=int, default=SEED,
                        help="fold and LightGBM seed (another split for repeated CV; implies --cv-only)")
    args = parser.parse_args(argv)
    if args.seed != SEED:
        args.cv_only = True  # the shipped weights are trained with the default seed only
    path = Path(args.data)
    if not input_exists(path):
        return 2
    try:
        import torch

        torch.set_num_threads(2)
    except ImportError:
        pass
    from tasks.categories import ORDER
    from tasks.roles.annotator import WEIGHTS, annotate_prepared

    fidelity = load("annotator_fidelity")
    t0 = time.perf_counter()
    issues, prepared, labels, presence, geoms = load_rows(path)
    prep_s = time.perf_counter() - t0
    rows = list(range(len(issues)))
    t0 = time.perf_counter()
    cv_annotations, thresholds, cv_scores = cross_validated_annotations(issues, prepared, labels, presence, geoms,
                                                                        args.seed)
    cv_s = time.perf_counter() - t0
    cv = fidelity.evaluate(issues, cv_annotations, rows, ORDER)
    front = frontier(geoms, cv_scores, fidelity.SPAN_RECALL_TARGET)
    suffix = "" if args.seed == SEED else f"_seed{args.seed}"
    out, png = OUT.with_stem(OUT.stem + suffix), FRONTIER_PNG.with_stem(FRONTIER_PNG.stem + suffix)
    frontier_plot(front, cv["spans"], png, fidelity.SPAN_RECALL_TARGET, fidelity.SPAN_PRECISION_TARGET)
    rules = fidelity.evaluate(issues, annotate_prepared(prepared, None), rows, ORDER)
    print(fidelity._table("rules only", rules))
    print()
    print(fidelity._table(f"learned scorer, issue-level {OUTER_FOLDS}-fold cross-validation, seed {args.seed}", cv))
    n_units = sum(len(p.units) for p in prepared)
    print(f"\nbest span precision any unit rule reaches at recall >= {fidelity.SPAN_RECALL_TARGET} on the out-of-fold "
          f"scores (picked with hindsight: an upper bound): "
          + ", ".join(f"{c} {f['best_precision_at_recall']}" for c, f in front.items())
          + f"; plot {png.relative_to(ROOT)}")
    print(f"\n{n_units} units from {len(issues)} issues, {prepared[0].features.shape[1]} features; "
          f"prepare {prep_s:.1f} s, cross-validation {cv_s:.1f} s")
    timings = {"prepare_s": round(prep_s, 2), "cv_s": round(cv_s, 2)}
    if not args.cv_only:
        t0 = time.perf_counter()
        scorer = fit_scorer(prepared, labels, presence, np.arange(len(issues)), geoms)
        timings["final_fit_s"] = round(time.perf_counter() - t0, 2)
        scorer.save(WEIGHTS)
        print(f"final fit on all {len(issues)} issues {timings['final_fit_s']} s; wrote {WEIGHTS.relative_to(ROOT)} "
              f"(unit thresholds {[round(float(t), 2) for t in scorer.unit_threshold]}, "
              f"relative {[round(float(t), 2) for t in scorer.unit_relative]}, "
              f"presence thresholds {[round(float(t), 2) for t in scorer.presence_threshold]}, "
              f"presence from spans {scorer.presence_from_spans.tolist()})")
    from tasks.store import atomic_write_text

    atomic_write_text(out, json.dumps({
        "data": str(path), "seed": args.seed, "gbm": GBM, "text_c": TEXT_C, "recall_floor": RECALL_FLOOR,
        "outer_folds": OUTER_FOLDS, "inner_folds": INNER_FOLDS, "units": n_units, "timings": timings,
        "fold_thresholds": thresholds, "frontier": front, "rules_only": rules, "cross_validated": cv}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

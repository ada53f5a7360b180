"""Explaining the success classifier: TreeSHAP, LightGBM's own contributions, category weights and exact Shapley.

Every attribution here is in log-odds (the booster's raw score), the space in which TreeSHAP is exact and additive.

Two independent TreeSHAP computations are compared. For a LightGBM model, ``shap.TreeExplainer(model)(X)``
simply calls ``model.predict(X, pred_contrib=True)`` (shap 0.51, ``TreeExplainer.shap_values``), so comparing
that with ``pred_contrib`` would compare LightGBM with itself. ``tree_shap`` therefore runs shap's own C++ TreeSHAP
on shap's own parse of the trees (``engine="shap"``); ``engine="delegate"`` keeps shap's shortcut.

With six binary features (and a few control indicators) a table has few distinct rows, so both computations run
on the distinct rows only and broadcast back; the values are exactly those of the row-by-row computation.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from tasks.errors import ClarifyflowError
from tasks.infovalue import FEATURES


class ShapMismatchError(ClarifyflowError):
    """Two SHAP computations that must agree do not."""


def _distinct_rows(X: pd.DataFrame, dedupe: bool) -> tuple[pd.DataFrame, np.ndarray | None]:
    if not dedupe:
        return X, None
    values = X.to_numpy()
    unique, inverse = np.unique(values, axis=0, return_inverse=True)
    return pd.DataFrame(unique, columns=X.columns).astype(X.dtypes.to_dict()), inverse.reshape(-1)


def _binary_output(values: Any, n_features: int) -> np.ndarray:
    """(rows, features) log-odds values from any shape shap returns for a binary classifier."""
    if isinstance(values, list):  # older shap: one array per class
        values = values[-1]
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 3:  # (rows, features, outputs)
        values = values[:, :, -1]
    if values.ndim != 2 or values.shape[1] != n_features:
        raise ShapMismatchError(f"unexpected SHAP output shape {values.shape} for {n_features} features")
    return values


def tree_shap(model: Any, X: pd.DataFrame, *, engine: Literal["shap", "delegate"] = "shap",
              dedupe: bool = True) -> np.ndarray:
    """Per-row TreeSHAP values, shape (rows, features), log-odds, path-dependent (no background data)."""
    with warnings.catch_warnings():  # shap 0.51 trips matplotlib colormap deprecation warnings on import
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        import shap

    rows, inverse = _distinct_rows(X, dedupe)
    explainer = shap.TreeExplainer(model)
    if engine == "shap":
        # The LightGBM shortcut only runs for model_type != "internal": this selects shap's own algorithm.
        explainer.model.model_type = "internal"
    values = _binary_output(explainer(rows).values, X.shape[1])
    return values if inverse is None else values[inverse]


def lgbm_contrib(model: Any, X: pd.DataFrame, *, with_bias: bool = False, dedupe: bool = True) -> np.ndarray:
    """LightGBM's ``pred_contrib``: (rows, features) log-odds contributions, plus the bias column if asked."""
    rows, inverse = _distinct_rows(X, dedupe)
    out = np.asarray(model.predict(rows, pred_contrib=True), dtype=np.float64)
    out = out if with_bias else out[:, :-1]
    return out if inverse is None else out[inverse]


def check_agreement(a: np.ndarray, b: np.ndarray, tol: float = 1e-6, names: Sequence[str] | None = None) -> float:
    """The largest absolute difference; raises ShapMismatchError if the shapes differ or it exceeds ``tol``."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ShapMismatchError(f"TreeSHAP and pred_contrib have different shapes: {a.shape} vs {b.shape}")
    if a.size == 0:
        return 0.0
    diff = np.nan_to_num(np.abs(a - b), nan=math.inf)
    worst = float(diff.max())
    if worst > tol:
        row, col = np.unravel_index(int(diff.argmax()), diff.shape)
        feature = names[col] if names is not None else f"column {col}"
        raise ShapMismatchError(
            f"TreeSHAP and LightGBM pred_contrib disagree: max |diff| = {worst:.3g} > {tol:g} "
            f"(row {row}, feature {feature})"
        )
    return worst


def _feature_columns(feature_names: Sequence[str]) -> tuple[list[str], list[int]]:
    names = list(feature_names)
    missing = [c for c in FEATURES if c not in names]
    if missing:
        raise ValueError(f"feature_names lacks the category feature {missing[0]!r}")
    return list(FEATURES), [names.index(c) for c in FEATURES]


def ranking_of(scores: Mapping[str, float]) -> list[str]:
    """Keys by score, highest first; ties keep the canonical category order."""
    order = {c: i for i, c in enumerate(FEATURES)}
    return sorted(scores, key=lambda c: (-scores[c], order.get(c, len(order)), c))


def _bootstrap_means(values: np.ndarray, draws: int, seed: int, max_groups: int = 4096) -> np.ndarray:
    """Column means of ``draws`` row resamples (with replacement) of ``values``, shape (draws, columns).

    With few distinct rows, resampling n rows is the same as drawing multinomial counts over the distinct rows,
    which is much cheaper than gathering n rows per draw.
    """
    rng = np.random.default_rng(seed)
    n = values.shape[0]
    unique, counts = np.unique(values, axis=0, return_counts=True)
    if len(unique) <= max_groups:
        return rng.multinomial(n, counts / n, size=draws) @ unique / n
    return np.stack([values[rng.integers(0, n, size=n)].mean(axis=0) for _ in range(draws)])


def category_weights(
    shap_values: np.ndarray, feature_names: Sequence[str], *, bootstrap: int = 1000, seed: int = 0,
    X: pd.DataFrame | None = None, confidence: float = 0.95,
) -> dict[str, Any]:
    """Mean |SHAP| per category, normalised so the largest is 1, with a row-bootstrap percentile interval.

    ``categories[c]`` holds flat numbers: ``mean_abs``, ``mean_signed``, ``weight``, ``ci_low``, ``ci_high``,
    ``rank`` (1 = most important) and, when ``X`` is given, ``present_minus_absent`` (mean SHAP on rows where the
    category is present minus where it is absent: the direction of its effect; mean signed SHAP is close to 0 by
    construction because TreeSHAP values are centred on the training rows).
    """
    keys, cols = _feature_columns(feature_names)
    values = np.asarray(shap_values, dtype=np.float64)[:, cols]
    n = values.shape[0]
    if n == 0:
        raise ValueError("no rows to weigh")
    absolute = np.abs(values)
    mean_abs = absolute.mean(axis=0)
    top = mean_abs.max()
    weight = mean_abs / top if top > 0 else np.zeros_like(mean_abs)

    draws = _bootstrap_means(absolute, bootstrap, seed)
    peaks = draws.max(axis=1, keepdims=True)
    draws = np.divide(draws, peaks, out=np.zeros_like(draws), where=peaks > 0)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(draws, [tail, 100 - tail], axis=0)

    ranking = ranking_of(dict(zip(keys, weight.tolist(), strict=True)))
    categories: dict[str, dict[str, float | int]] = {}
    for j, key in enumerate(keys):
        entry: dict[str, float | int] = {
            "mean_abs": float(mean_abs[j]),
            "mean_signed": float(values[:, j].mean()),
            "weight": float(weight[j]),
            "ci_low": float(low[j]),
            "ci_high": float(high[j]),
            "rank": ranking.index(key) + 1,
        }
        if X is not None:
            present = X[key].to_numpy() == 1
            if present.any() and (~present).any():
                entry["present_minus_absent"] = float(values[present, j].mean() - values[~present, j].mean())
        categories[key] = entry
    return {
        "categories": categories,
        "ranking": ranking,
        "rows": int(n),
        "bootstrap": int(bootstrap),
        "confidence": float(confidence),
        "space": "log-odds",
    }


def _as_predictor(predict_fn: Any) -> Callable[[pd.DataFrame], np.ndarray]:
    """A callable X -> log-odds; a LightGBM Booster (or sklearn wrapper) gives its raw score."""
    if hasattr(predict_fn, "predict") and not callable(predict_fn):
        model = predict_fn
        return lambda X: np.asarray(model.predict(X, raw_score=True), dtype=np.float64)
    return predict_fn


def exact_shapley(
    predict_fn: Any, feature_names: Sequence[str], background: pd.DataFrame, *,
    shap_ranking: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Exact Shapley values of the category features, with the classifier as the value function.

    v(S) = mean over ``background`` rows of the predicted log-odds with the categories in S set present (1) and the
    other categories set absent (0), controls left as they are in each row. So v(all) - v(none) is the average
    gain in log-odds of success from full information over none, and phi_c = sum over S not containing c of
    |S|! (k-|S|-1)! / k! * (v(S + c) - v(S)) shares that gain out over the k categories (2^k coalitions).
    ``predict_fn`` is a callable returning log-odds, or a LightGBM model (its raw score is used).
    """
    predict = _as_predictor(predict_fn)
    players = [c for c in feature_names if c in FEATURES]
    if not players:
        raise ValueError("no category feature among feature_names")
    k = len(players)
    others = [c for c in background.columns if c not in players]

    # Rows that differ only in category columns predict the same once those are overwritten: weight the distinct
    # control combinations by their counts.
    if others:
        ctrl, counts = np.unique(background[others].to_numpy(), axis=0, return_counts=True)
    else:
        ctrl, counts = np.empty((1, 0)), np.array([len(background)])
    weights = counts / counts.sum()
    m = len(ctrl)
    masks = np.array([[(s >> j) & 1 for j in range(k)] for s in range(2**k)], dtype=np.int64)
    grid = pd.DataFrame(
        np.hstack([np.repeat(masks, m, axis=0), np.tile(ctrl, (2**k, 1))]), columns=[*players, *others]
    )
    grid = grid[list(background.columns)].astype(background.dtypes.to_dict())
    value = (predict(grid).reshape(2**k, m) * weights).sum(axis=1)  # v(S) for S encoded as a bit mask

    phi = np.zeros(k)
    for j in range(k):
        bit = 1 << j
        for s in range(2**k):
            if s & bit:
                continue
            size = s.bit_count()
            phi[j] += (math.factorial(size) * math.factorial(k - size - 1) / math.factorial(k)
                       * (value[s | bit] - value[s]))

    values = dict(zip(players, phi.tolist(), strict=True))
    top = max(values.values())
    result: dict[str, Any] = {
        "values": values,
        "weights": {c: (v / top if top > 0 else 0.0) for c, v in values.items()},
        "ranking": ranking_of(values),
        "v_none": float(value[0]),
        "v_all": float(value[-1]),
        "coalitions": 2**k,
        "space": "log-odds",
    }
    if shap_ranking is not None:
        result["spearman_vs_shap"] = spearman(result["ranking"], shap_ranking)
    return result


def _scores(ranking: Sequence[str] | Mapping[str, float]) -> dict[str, float]:
    if isinstance(ranking, Mapping):
        return {k: float(v) for k, v in ranking.items()}
    items = list(ranking)
    if len(set(items)) != len(items):
        raise ValueError("a ranking lists each key once")
    return {key: float(len(items) - i) for i, key in enumerate(items)}


def spearman(a: Sequence[str] | Mapping[str, float], b: Sequence[str] | Mapping[str, float]) -> float:
    """Spearman's rho between two rankings (lists, best first) or score maps (higher = better) over the same keys."""
    from scipy.stats import spearmanr

    sa, sb = _scores(a), _scores(b)
    if set(sa) != set(sb):
        raise ValueError(f"rankings cover different keys: {sorted(set(sa) ^ set(sb))}")
    keys = sorted(sa)
    if len(keys) < 2:
        raise ValueError("need at least two keys to correlate")
    rho = spearmanr([sa[k] for k in keys], [sb[k] for k in keys]).statistic
    return float(rho)


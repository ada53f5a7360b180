"""The success classifier: LightGBM on the six category presence features (plus varying controls), with stratified
cross-validation for honest out-of-fold metrics and a final model refit on every row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tasks.errors import InputError
from tasks.infovalue import CONTROLS, FEATURES

LABEL = "resolved"

DEFAULT_PARAMS: dict[str, Any] = {
    "objective": "binary",
    "learning_rate": 0.05,
    "num_boost_round": 200,
    "num_leaves": 8,
    "max_depth": 4,
    "min_data_in_leaf": 20,
    "lambda_l2": 1.0,
    "feature_fraction": 1.0,
    "bagging_fraction": 1.0,
    "deterministic": True,
    "force_row_wise": True,
    "num_threads": 1,
    "verbose": -1,
}
"""Small, regularised trees: six binary features have only 64 cells, so deep or many-leaved trees just memorise.
One thread: on a shared 2-core machine OpenMP spin-waiting made 2 threads 10-150x slower on these small tables."""

CALIBRATION_BINS = 10
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_.=/+-]+")


@dataclass(frozen=True)
class FitResult:
    """A fitted classifier: the refit-on-all-rows model, its design matrix and the cross-validated figures."""

    model: Any  # lightgbm.Booster refit on all rows
    X: pd.DataFrame
    y: np.ndarray
    feature_names: list[str]
    oof: np.ndarray  # out-of-fold predicted probability of success, one per row
    metrics: dict[str, float | int]
    calibration: list[dict[str, float | int]]
    params: dict[str, Any] = field(default_factory=dict)

    def log_odds(self, X: pd.DataFrame) -> np.ndarray:
        return np.asarray(self.model.predict(X[self.feature_names], raw_score=True), dtype=np.float64)

    def proba(self, X: pd.DataFrame) -> np.ndarray:
        return np.asarray(self.model.predict(X[self.feature_names]), dtype=np.float64)


def check_table(df: pd.DataFrame, source: Path | str = "runs table", *, folds: int = 2) -> None:
    """The few properties fitting needs; raises InputError naming the column (the GX gate checks the rest)."""
    for column in (*FEATURES, LABEL):
        if column not in df.columns:
            raise InputError(source, "missing column", field=column)
    for column in (*FEATURES, LABEL):
        values = pd.to_numeric(df[column], errors="coerce")
        bad = ~values.isin([0, 1])
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise InputError(source, f"must be 0 or 1, got {df[column].iloc[row]!r}", record=row, field=column)
    counts = df[LABEL].astype(int).value_counts()
    if len(counts) < 2:
        raise InputError(source, f"only one class ({int(counts.index[0]) if len(counts) else 'no rows'}); "
                         "cannot fit a success classifier", field=LABEL)
    if int(counts.min()) < folds:
        raise InputError(source, f"the rarer class has {int(counts.min())} rows, fewer than the {folds} CV folds",
                         field=LABEL)


def _dummy_name(control: str, value: str, taken: set[str]) -> str:
    # LightGBM rejects JSON-special characters (":", ",", brackets, quotes) in feature names.
    name = f"{control}={_NAME_UNSAFE.sub('_', value) or '_'}"
    base, n = name, 2
    while name in taken:
        name, n = f"{base}~{n}", n + 1
    taken.add(name)
    return name


def varying_controls(df: pd.DataFrame) -> list[str]:
    """Controls present in ``df`` that take more than one value."""
    return [c for c in CONTROLS if c in df.columns and df[c].astype(str).nunique() > 1]


def design_matrix(df: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The six category features, then a 0/1 indicator per level of each control that varies (levels sorted)."""
    columns: dict[str, np.ndarray] = {c: df[c].to_numpy(dtype=np.int64) for c in FEATURES}
    taken = set(columns)
    for control in varying_controls(df):
        values = df[control].astype(str).to_numpy()
        for level in sorted(set(values)):
            columns[_dummy_name(control, level, taken)] = (values == level).astype(np.int64)
    X = pd.DataFrame(columns, index=pd.RangeIndex(len(df)))
    return X, list(X.columns)


def _train(X: pd.DataFrame, y: np.ndarray, params: dict[str, Any]):
    import lightgbm as lgb

    params = dict(params)
    rounds = int(params.pop("num_boost_round"))
    data = lgb.Dataset(X, label=y, feature_name=list(X.columns), free_raw_data=True)
    return lgb.train(params, data, num_boost_round=rounds)


def calibration_table(y: np.ndarray, p: np.ndarray, bins: int = CALIBRATION_BINS) -> list[dict[str, float | int]]:
    """Equal-width probability bins (non-empty ones only): mean predicted vs observed success rate."""
    which = np.minimum((p * bins).astype(int), bins - 1)
    rows = []
    for b in range(bins):
        mask = which == b
        if mask.any():
            rows.append({
                "bin": b,
                "lower": b / bins,
                "upper": (b + 1) / bins,
                "mean_predicted": float(p[mask].mean()),
                "observed_rate": float(y[mask].mean()),
                "count": int(mask.sum()),
            })
    return rows


def _metrics(y: np.ndarray, p: np.ndarray, fold_auc: list[float], folds: int) -> dict[str, float | int]:
    from sklearn.metrics import (
        accuracy_score,
        brier_score_loss,
        log_loss,
        roc_auc_score,
    )

    base = float(y.mean())
    calib = calibration_table(y, p)
    ece = sum(r["count"] * abs(r["mean_predicted"] - r["observed_rate"]) for r in calib) / len(y)
    return {
        "auc": float(roc_auc_score(y, p)),
        "auc_fold_mean": float(np.mean(fold_auc)),
        "auc_fold_std": float(np.std(fold_auc)),
        "accuracy": float(accuracy_score(y, (p >= 0.5).astype(int))),
        "accuracy_majority": float(max(base, 1 - base)),
        "brier": float(brier_score_loss(y, p)),
        "brier_base_rate": float(base * (1 - base)),
        "log_loss": float(log_loss(y, np.clip(p, 1e-12, 1 - 1e-12))),
        "ece": float(ece),
        "base_rate": base,
        "rows": len(y),
        "positives": int(y.sum()),
        "folds": int(folds),
    }


def fit_classifier(
    df: pd.DataFrame, *, folds: int = 5, seed: int = 0, params: dict[str, Any] | None = None,
    source: Path | str = "runs table",
) -> FitResult:
    """Stratified K-fold out-of-fold metrics, then the final model refit on all rows (deterministic for a seed)."""
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import StratifiedKFold

    check_table(df, source, folds=folds)
    X, names = design_matrix(df)
    y = df[LABEL].to_numpy(dtype=np.int64)
    merged = {**DEFAULT_PARAMS, "seed": seed, **(params or {})}

    oof = np.zeros(len(y), dtype=np.float64)
    fold_auc = []
    splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    for train_idx, test_idx in splitter.split(X, y):
        booster = _train(X.iloc[train_idx], y[train_idx], merged)
        oof[test_idx] = booster.predict(X.iloc[test_idx])
        if len(np.unique(y[test_idx])) == 2:
            fold_auc.append(float(roc_auc_score(y[test_idx], oof[test_idx])))

    final = _train(X, y, merged)
    return FitResult(
        model=final, X=X, y=y, feature_names=names, oof=oof,
        metrics=_metrics(y, oof, fold_auc, folds), calibration=calibration_table(y, oof), params=merged,
    )

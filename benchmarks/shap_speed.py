"""TreeSHAP speed on a 100,000-run table: shap's own TreeSHAP and LightGBM's pred_contrib, with and without
evaluating only the distinct rows.

    .venv/bin/python benchmarks/shap_speed.py [--rows 100000] [--models 3] [--runs RUNS.csv]

Speed does not depend on the outcomes, so the default table is synthetic (planted effects, seeded); ``--runs``
times a real runs table instead (a CSV with the runs-table columns). Target: TreeSHAP over 100,000 rows x 6
features <= 10 s on 2 cores (the stage's path: ``tree_shap`` with distinct-row evaluation). Also reports the
TreeSHAP / pred_contrib agreement, and times the classifier fit, the bootstrap weights and exact Shapley values.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "benchmarks" / "out" / "shap_speed.json"

EFFECTS = {
    "error_info": 2.0, "implementation": 1.2, "version_env": 1.0,
    "expected_behavior": 0.8, "reproduction": 0.5, "external_refs": 0.2,
}


def synthetic(rows: int, models: int, seed: int = 0):
    import numpy as np
    import pandas as pd

    from tasks.infovalue import COLUMNS, FEATURES

    rng = np.random.default_rng(seed)
    present = rng.integers(0, 2, size=(rows, len(FEATURES)))
    which = rng.integers(0, models, size=rows)
    logit = -2.6 + present @ np.array([EFFECTS[c] for c in FEATURES]) + 0.3 * which
    frame = pd.DataFrame({c: present[:, j] for j, c in enumerate(FEATURES)})
    frame["resolved"] = (rng.random(rows) < 1 / (1 + np.exp(-logit))).astype("int64")
    frame["variant_id"] = [f"v{i:06d}" for i in range(rows)]
    frame["instance_id"] = frame["variant_id"]
    frame["condition"] = "synthetic"
    frame["agent_model"] = [f"model-{m}" for m in which]
    frame["repo"] = ""
    return frame[list(COLUMNS)]


def timed(fn, *args, **kwargs):
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--models", type=int, default=3, help="agent models in the synthetic table (a control)")
    parser.add_argument("--runs", type=Path, help="time this runs-table CSV instead of a synthetic one")
    parser.add_argument("--target-seconds", type=float, default=10.0)
    parser.add_argument("--skip-raw", action="store_true", help="skip the slow row-by-row reference timings")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)

    import numpy as np
    import pandas as pd

    from tasks.infovalue import explain, model
    from tasks.store import atomic_write_json

    if args.runs:
        if not args.runs.is_file():
            print(f"runs table not found: {args.runs}", file=sys.stderr)
            return 2
        table, source = pd.read_csv(args.runs, dtype=str, keep_default_na=False), str(args.runs)
        for column in (*model.FEATURES, model.LABEL):
            table[column] = pd.to_numeric(table[column])
    else:
        table, source = synthetic(args.rows, args.models), f"synthetic ({args.models} agent models, planted effects)"

    fit, fit_s = timed(model.fit_classifier, table, folds=5, seed=0)
    X = fit.X
    distinct = len(np.unique(X.to_numpy(), axis=0))
    _, import_s = timed(__import__, "shap")
    explain.tree_shap(fit.model, X.iloc[:10])  # warm-up: first-call set-up is not the per-row cost

    shap_values, shap_s = timed(explain.tree_shap, fit.model, X)
    contrib, contrib_s = timed(explain.lgbm_contrib, fit.model, X)
    max_diff = explain.check_agreement(shap_values, contrib, names=fit.feature_names)
    weights, weights_s = timed(explain.category_weights, shap_values, fit.feature_names, bootstrap=1000, seed=0)
    exact, exact_s = timed(explain.exact_shapley, fit.model, fit.feature_names, X, shap_ranking=weights["ranking"])

    figures: dict[str, object] = {
        "source": source,
        "rows": len(X),
        "features": int(X.shape[1]),
        "category_features": 6,
        "distinct_rows": int(distinct),
        "trees": int(fit.model.num_trees()),
        "lightgbm_threads": int(fit.params["num_threads"]),
        "cpu_count": os.cpu_count(),
        "seconds": {
            "fit_5fold_cv_plus_refit": round(fit_s, 3),
            "import_shap": round(import_s, 3),
            "tree_shap": round(shap_s, 3),
            "pred_contrib": round(contrib_s, 3),
            "category_weights_bootstrap_1000": round(weights_s, 3),
            "exact_shapley_64_coalitions": round(exact_s, 3),
        },
        "treeshap_vs_pred_contrib_max_abs_diff": max_diff,
        "cv_auc": round(fit.metrics["auc"], 4),
        "ranking": weights["ranking"],
        "exact_shapley_spearman_vs_shap": exact.get("spearman_vs_shap"),
        "target_seconds": args.target_seconds,
    }
    if not args.skip_raw:
        raw, raw_s = timed(explain.tree_shap, fit.model, X, dedupe=False)
        raw_contrib, raw_contrib_s = timed(explain.lgbm_contrib, fit.model, X, dedupe=False)
        _, delegate_s = timed(explain.tree_shap, fit.model, X, engine="delegate", dedupe=False)
        figures["seconds"] |= {
            "tree_shap_every_row": round(raw_s, 3),
            "pred_contrib_every_row": round(raw_contrib_s, 3),
            "shap_treeexplainer_default_every_row": round(delegate_s, 3),
        }
        figures["distinct_vs_every_row_max_abs_diff"] = max(float(np.abs(raw - shap_values).max()),
                                                            float(np.abs(raw_contrib - contrib).max()))
    figures["pass"] = shap_s <= args.target_seconds and max_diff <= 1e-6

    print(f"table: {source}: {len(X)} rows x {X.shape[1]} features ({distinct} distinct rows), "
          f"{figures['trees']} trees; CV AUC {fit.metrics['auc']:.3f}")
    print(f"{'step':<42} {'seconds':>9}")
    for step, seconds in figures["seconds"].items():
        print(f"{step:<42} {seconds:>9.3f}")
    print(f"TreeSHAP vs pred_contrib max |diff|: {max_diff:.2e}")
    if "distinct_vs_every_row_max_abs_diff" in figures:
        print(f"distinct-row vs every-row max |diff|: {figures['distinct_vs_every_row_max_abs_diff']:.2e}")
    print(f"ranking: {', '.join(weights['ranking'])}; exact Shapley Spearman vs SHAP: {exact.get('spearman_vs_shap')}")
    print(f"tree_shap {shap_s:.3f} s (target <= {args.target_seconds:.0f} s): {'PASS' if figures['pass'] else 'FAIL'}")
    atomic_write_json(args.out, figures)
    return 0 if figures["pass"] else 1


if __name__ == "__main__":
    raise SystemExit(main())

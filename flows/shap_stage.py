"""shap: which categories of information predict task success, as category weights for rewards and metrics.

Builds the runs table (params ``shap.source``), fits a LightGBM success classifier with stratified CV, explains it
with TreeSHAP (cross-checked against LightGBM's ``pred_contrib``) and exact Shapley values over the category
features, and writes ``data/shap/`` (weights.json, per-row SHAP values, PNG plots, and the fitted classifier as
model.txt + model.json for evaluate@swe's surrogate), ``data/plots/shap/`` (plot data for ``dvc plots``) and
``data/metrics/stages/shap.json``. Everything is validated before it is published.

The paper's weights are set beside the measured ones (weights.json, the weights figure, a Spearman) only for real
outcomes (``ambig_swe``, ``harness``). Simulated outcomes have the paper's ranking planted, so they are compared with
the planted ranking instead and drawn without the paper's weights.
"""

from __future__ import annotations

import argparse
import sys
import time

from flows import cli
from tasks.rewards.weights import CLARITI_WEIGHTS as PAPER_WEIGHTS  # the paper's weights, for comparison only


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    return cli.params_args("python -m flows.shap_stage", __doc__.splitlines()[0], argv)


def source_label(cfg) -> str:
    return {
        "simulated": "simulated outcomes (planted effects, not real agent runs)",
        "ambig_swe": f"Ambig-SWE agent outcomes (presence: {cfg.ambig_swe.presence})",
        "harness": "SWE-bench harness results for construct@swe variants",
    }[cfg.source]


def paper_weights(cfg) -> dict[str, float] | None:
    """The paper's weights, drawn beside measured ones; None for simulated outcomes, whose effects are planted (the
    paper's ranking by construction), so a paper column beside them would read as a replication."""
    return None if cfg.source == "simulated" else dict(PAPER_WEIGHTS)


def weights_document(cfg, weights: dict, exact: dict, label: str) -> dict:
    """``weights.json``: the weights and ranking, the exact Shapley cross-check, and either the planted ranking
    (simulated outcomes) or the paper's weights for comparison (real outcomes)."""
    from tasks.infovalue import FEATURES
    from tasks.infovalue.runs import planted_ranking

    document = {
        "source": label,
        "weights": {c: weights["categories"][c]["weight"] for c in FEATURES},
        "ranking": weights["ranking"],
        "categories": weights["categories"],
        "exact_shapley": exact,
    }
    paper = paper_weights(cfg)
    if paper is None:
        document["planted_ranking"] = planted_ranking(cfg.simulated.effects)
    else:
        document["paper_weights_for_comparison"] = paper
    return document


def ranking_agreement(cfg, ranking: list[str]) -> dict[str, float]:
    """Spearman of the measured ranking against the planted one (simulated) or the paper's (real outcomes)."""
    from tasks.infovalue import explain
    from tasks.infovalue.runs import planted_ranking

    paper = paper_weights(cfg)
    if paper is None:
        return {"spearman_vs_planted": round(float(explain.spearman(ranking, planted_ranking(cfg.simulated.effects))),
                                             4)}
    return {"spearman_vs_paper": round(float(explain.spearman(ranking, sorted(paper, key=paper.get, reverse=True))),
                                       4)}


def build_runs(cfg, root):
    """The runs table for ``cfg.source``, validated; raises InputError naming the file and field."""
    from pathlib import Path

    from tasks.infovalue import runs

    if cfg.source == "simulated":
        sim = cfg.simulated
        kwargs = {k: v for k, v in {"effects": sim.effects, "intercept": sim.intercept}.items() if v is not None}
        table = runs.simulate_runs(n_variants=sim.n_variants, agent_models=sim.agent_models,
                                   presence_prob=sim.presence_prob, noise=sim.noise, seed=cfg.seed, **kwargs)
        where: Path | str = "params.yaml: shap.simulated"
    elif cfg.source == "ambig_swe":
        amb = cfg.ambig_swe
        table = runs.ambig_swe_runs(root / amb.dir, root / amb.workbook, presence=amb.presence,
                                    removed_in_underspecified=amb.removed_in_underspecified, models=amb.models)
        where = root / amb.dir
    else:
        from tasks.errors import InputError

        if not cfg.harness.resolved:
            raise InputError("params.yaml", "no harness report given", field="shap.harness.resolved")
        table = runs.harness_runs(root / cfg.harness.cases, root / cfg.harness.resolved, cfg.harness.agent_model)
        where = root / cfg.harness.resolved
    return runs.validate_runs(table, where, min_per_class=cfg.min_per_class)


def shap_stage(params: str = "params.yaml") -> dict:
    import pandas as pd

    from tasks.evaluation.surrogate import save_surrogate
    from tasks.infovalue import FEATURES, explain, model, plots, runs
    from tasks.params import load_params
    from tasks.stage_metrics import publish_with_metrics
    from tasks.store import atomic_write_json, atomic_write_text, repo_root, staged_dir
    from tasks.validation import gate
    from tasks.validation.shap_gates import gate_shap_tables, gate_surrogate
    from tasks.validation.stage_metrics import check_stage_metrics

    root = repo_root()
    cfg = load_params(root / params).shap
    started = time.monotonic()
    table = build_runs(cfg, root)
    results_dir = root / ".cache" / "gx" / "results"
    gx_frame, _ = runs.runs_table_for_gx(table, cfg.min_per_class)
    gate("shap_runs", gx_frame, artifact="data/shap/runs.csv", results_dir=results_dir, min_per_class=cfg.min_per_class)

    fit = model.fit_classifier(table, folds=cfg.folds, seed=cfg.seed, params=cfg.lightgbm or None)
    X, names = model.design_matrix(table)
    values = explain.tree_shap(fit.model, X)
    contrib = explain.lgbm_contrib(fit.model, X)
    max_diff = explain.check_agreement(values, contrib)
    weights = explain.category_weights(values, names, bootstrap=cfg.bootstrap, seed=cfg.seed, X=X)
    exact = explain.exact_shapley(fit.model, names, X, shap_ranking=weights["ranking"])
    label = source_label(cfg)

    out_dir = root / "data" / "shap"
    weight_rows = [{"category": c, **weights["categories"][c]} for c in FEATURES]
    with staged_dir(out_dir) as staging:
        atomic_write_json(staging / "weights.json", weights_document(cfg, weights, exact, label))
        per_row = pd.DataFrame(values[:, : len(names)], columns=[f"shap_{n}" for n in names])
        per_row.insert(0, "variant_id", table["variant_id"].to_numpy())
        per_row.insert(1, "agent_model", table["agent_model"].to_numpy())
        atomic_write_text(staging / "shap_values.csv", per_row.to_csv(index=False, float_format="%.6g"))
        atomic_write_text(staging / "runs.csv", table.to_csv(index=False))
        atomic_write_json(staging / "calibration.json", fit.calibration)
        # the fitted classifier itself, for evaluate@swe's predicted-resolution surrogate (model.txt + model.json)
        save_surrogate(fit, table, staging, source=label)
        plot_data = plots.write_plots(staging / "plots", table, values, names, weights, paper=paper_weights(cfg),
                                      title_note=label)
        gate("shap_weights", pd.DataFrame(weight_rows), artifact="data/shap", results_dir=results_dir)
        gate_surrogate(staging, rows=len(table))
        gate_shap_tables(staging, rows=len(table), results_dir=results_dir)
        metrics = {
            "backend": f"lightgbm + TreeSHAP on {label}",
            "source": cfg.source,
            "runs": len(table),
            "resolved_rate": round(float(table["resolved"].mean()), 4),
            "cv": {k: v for k, v in fit.metrics.items() if isinstance(v, int | float)},
            "calibration": {
                f"bin_{n:02d}": {k: round(float(v), 4) if isinstance(v, float) else v for k, v in row.items()}
                for n, row in enumerate(fit.calibration)
            },
            "treeshap_vs_pred_contrib_max_abs_diff": float(max_diff),
            "weights": {c: round(weights["categories"][c]["weight"], 4) for c in FEATURES},
            **ranking_agreement(cfg, weights["ranking"]),
            "spearman_shap_vs_exact_shapley": round(float(exact["spearman_vs_shap"]), 4)
            if "spearman_vs_shap" in exact else None,
        }
        metrics = {k: v for k, v in metrics.items() if v is not None}
        check_stage_metrics("shap", metrics, counts={"runs": len(table)})
        # the wall-clock seconds go to data/metrics/timings/shap.json, apart from the metrics
        publish_with_metrics(staging, out_dir, root, "shap",
                             {**metrics, "seconds": round(time.monotonic() - started, 2)})
    for name in ("weights", "success_by_hidden"):  # `dvc plots` data; the beeswarm's is shap_values.csv
        atomic_write_json(root / "data" / "plots" / "shap" / f"{name}.json", plot_data[name])
    return {"runs": len(table), "source": label, "top": weights["ranking"][0], "auc": fit.metrics.get("auc"),
            "seconds": round(time.monotonic() - started, 2)}


def describe(summary: dict) -> str:
    return (
        f"shap: {summary['runs']} runs ({summary['source']}), CV AUC {summary['auc']:.3f}, top category "
        f"{summary['top']} -> data/shap/weights.json ({summary['seconds']} s)"
    )


def build_flow():
    from prefect import flow

    return flow(name="shap", flow_run_name="shap", log_prints=True)(shap_stage)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    def check() -> None:
        from tasks.params import load_params
        from tasks.store import repo_root

        root = repo_root()
        build_runs(load_params(root / args.params).shap, root)

    return cli.run_stage(lambda: build_flow()(params=args.params), describe, check=check)


if __name__ == "__main__":
    sys.exit(main())

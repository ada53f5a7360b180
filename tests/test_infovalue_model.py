"""The success classifier, SHAP weights, exact Shapley values and plots, on hand-made synthetic runs tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tasks.errors import InputError
from tasks.infovalue import COLUMNS, FEATURES, explain, model, plots

EFFECTS = {
    "error_info": 2.0, "implementation": 1.2, "version_env": 1.0,
    "expected_behavior": 0.8, "reproduction": 0.5, "external_refs": 0.2,
}
PLANTED = sorted(EFFECTS, key=EFFECTS.get, reverse=True)


def synthetic(n: int, seed: int = 0, *, intercept: float = -2.6, models: tuple[str, ...] = ("m",)) -> pd.DataFrame:
    """logit = intercept + sum(effect * presence) (+ a model offset); presence ~ Bernoulli(0.5) per category."""
    rng = np.random.default_rng(seed)
    present = rng.integers(0, 2, size=(n, len(FEATURES)))
    agent = np.array(models, dtype=object)[rng.integers(0, len(models), size=n)]
    offset = np.array([0.4 * models.index(a) for a in agent])
    logit = intercept + present @ np.array([EFFECTS[c] for c in FEATURES]) + offset
    frame = pd.DataFrame({c: present[:, j] for j, c in enumerate(FEATURES)})
    frame["resolved"] = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(np.int64)
    frame["variant_id"] = [f"v{i:05d}" for i in range(n)]
    frame["instance_id"] = frame["variant_id"]
    frame["condition"] = "synthetic"
    frame["agent_model"] = agent.astype(str)
    frame["repo"] = ""
    return frame[list(COLUMNS)]


@pytest.fixture(scope="module")
def planted():
    # 20,000 runs: the planted effects differ by only 0.2 log-odds; at 2,000 runs about 1 seed in 5 swaps a pair.
    table = synthetic(20_000, seed=1)
    fit = model.fit_classifier(table, folds=5, seed=0)
    values = explain.tree_shap(fit.model, fit.X)
    weights = explain.category_weights(values, fit.feature_names, bootstrap=200, seed=0, X=fit.X)
    return table, fit, values, weights


def test_ranking_recovered_by_shap_and_exact_shapley(planted):
    _, fit, _, weights = planted
    assert weights["ranking"] == PLANTED
    assert explain.spearman(weights["ranking"], PLANTED) == 1.0
    exact = explain.exact_shapley(fit.model, fit.feature_names, fit.X, shap_ranking=weights["ranking"])
    assert exact["ranking"] == PLANTED
    assert exact["spearman_vs_shap"] == 1.0
    assert exact["coalitions"] == 64
    assert sum(exact["values"].values()) == pytest.approx(exact["v_all"] - exact["v_none"])  # efficiency
    assert all(weights["categories"][c]["present_minus_absent"] > 0 for c in FEATURES)


def test_treeshap_matches_pred_contrib(planted):
    _, fit, values, _ = planted
    contrib = explain.lgbm_contrib(fit.model, fit.X, with_bias=True)
    assert explain.check_agreement(values, contrib[:, :-1]) <= 1e-6
    raw = fit.model.predict(fit.X, raw_score=True)
    np.testing.assert_allclose(contrib.sum(axis=1), raw, atol=1e-9)  # additivity
    with pytest.raises(explain.ShapMismatchError, match=r"disagree.*feature reproduction"):
        bumped = values.copy()
        bumped[3, 1] += 1e-3
        explain.check_agreement(bumped, contrib[:, :-1], names=fit.feature_names)


def test_dedupe_and_delegate_give_the_same_values(planted):
    _, fit, values, _ = planted
    head = fit.X.iloc[:300]
    np.testing.assert_allclose(explain.tree_shap(fit.model, head, dedupe=False), values[:300], atol=1e-12)
    np.testing.assert_allclose(explain.tree_shap(fit.model, head, engine="delegate"), values[:300], atol=1e-9)
    np.testing.assert_allclose(explain.lgbm_contrib(fit.model, head, dedupe=False), values[:300], atol=1e-9)


def test_cv_metrics(planted):
    table, fit, _, _ = planted
    m = fit.metrics
    for key in ("auc", "accuracy", "brier", "log_loss", "ece", "base_rate", "rows", "positives", "folds"):
        assert key in m
    assert m["auc"] > 0.6
    assert m["brier"] < m["brier_base_rate"]
    assert m["rows"] == len(table) and m["folds"] == 5
    assert sum(r["count"] for r in fit.calibration) == len(table)
    assert len(fit.calibration) <= model.CALIBRATION_BINS
    assert all(abs(r["mean_predicted"] - r["observed_rate"]) < 0.1 for r in fit.calibration if r["count"] > 500)
    assert fit.oof.shape == (len(table),) and ((fit.oof > 0) & (fit.oof < 1)).all()


def test_weights_normalised_with_intervals(planted):
    _, _, _, weights = planted
    cats = weights["categories"]
    assert max(c["weight"] for c in cats.values()) == 1.0
    assert cats[PLANTED[0]]["weight"] == 1.0 and cats[PLANTED[0]]["rank"] == 1
    for c in cats.values():
        assert c["ci_low"] <= c["weight"] <= c["ci_high"]
        assert c["mean_abs"] > 0
    assert weights["ranking"] == sorted(cats, key=lambda k: cats[k]["rank"])


def test_controls_become_features_only_when_they_vary():
    table = synthetic(400, models=("a", "b:1"))
    X, names = model.design_matrix(table)
    assert names[:6] == list(FEATURES)
    assert names[6:] == ["agent_model=a", "agent_model=b_1"]  # ':' is not allowed in LightGBM feature names
    assert not any(n.startswith(("repo", "condition")) for n in names)
    assert (X[names[6:]].sum(axis=1) == 1).all()
    _, single = model.design_matrix(synthetic(400))
    assert single == list(FEATURES)


def test_fit_is_deterministic_for_a_seed():
    table = synthetic(1500, seed=3, models=("a", "b"))
    one, two = (model.fit_classifier(table, folds=3, seed=7) for _ in range(2))
    assert one.model.model_to_string() == two.model.model_to_string()
    np.testing.assert_array_equal(one.oof, two.oof)
    assert one.metrics == two.metrics
    other = model.fit_classifier(table, folds=3, seed=8)
    assert not np.array_equal(one.oof, other.oof)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda t: t.assign(resolved=0), "field 'resolved': only one class"),
        (lambda t: t.assign(resolved=t["resolved"] * 2), "field 'resolved': must be 0 or 1"),
        (lambda t: t.assign(error_info="yes"), "field 'error_info': must be 0 or 1"),
        (lambda t: t.drop(columns=["version_env"]), "field 'version_env': missing column"),
    ],
)
def test_bad_tables_raise_one_clear_line(change, message):
    with pytest.raises(InputError, match=message) as info:
        model.fit_classifier(change(synthetic(200)), folds=3, source="runs.csv")
    assert str(info.value).startswith("runs.csv") and "\n" not in str(info.value)


def test_spearman_accepts_rankings_and_scores():
    assert explain.spearman(PLANTED, list(reversed(PLANTED))) == -1.0
    assert explain.spearman(EFFECTS, PLANTED) == 1.0
    with pytest.raises(ValueError, match="different keys"):
        explain.spearman(PLANTED, PLANTED[:-1])


def test_plots_are_deterministic_pngs(planted, tmp_path):
    table, fit, values, weights = planted
    paper = dict(zip(PLANTED, [1.0, 0.6, 0.59, 0.58, 0.42, 0.23], strict=True))
    first = plots.write_plots(tmp_path / "a", table, values, fit.feature_names, weights, paper=paper,
                              title_note="synthetic outcomes")
    second = plots.write_plots(tmp_path / "b", table, values, fit.feature_names, weights, paper=paper,
                               title_note="synthetic outcomes")
    assert first == second
    for name in ("beeswarm.png", "weights.png", "success_by_hidden.png"):
        data = (tmp_path / "a" / name).read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n")
        assert data == (tmp_path / "b" / name).read_bytes()
    assert len(first["beeswarm"]) == 6 * plots.MAX_POINTS
    assert [r["category"] for r in first["weights"]] == PLANTED and first["weights"][0]["paper"] == 1.0
    hidden = first["success_by_hidden"]
    assert sum(r["runs"] for r in hidden) == len(table)
    assert hidden[0]["success_rate"] > hidden[-1]["success_rate"]  # more missing information, less success


def test_grouped_bootstrap_matches_row_resampling():
    values = np.abs(np.random.default_rng(0).normal(size=(3000, 3))).round(1)  # few distinct rows
    grouped = explain._bootstrap_means(values, 400, seed=0)
    rows = explain._bootstrap_means(values, 400, seed=0, max_groups=0)
    np.testing.assert_allclose(grouped.mean(axis=0), values.mean(axis=0), atol=0.01)
    np.testing.assert_allclose(grouped.std(axis=0), rows.std(axis=0), rtol=0.2)


def test_tree_shap_does_not_call_lightgbm_pred_contrib(planted, monkeypatch):
    # The cross-check is only a check if the shap engine is not LightGBM's own pred_contrib under another name.
    _, fit, values, _ = planted

    def refuse(*args, **kwargs):
        raise AssertionError("tree_shap called the booster's predict")

    monkeypatch.setattr(fit.model, "predict", refuse)
    np.testing.assert_array_equal(explain.tree_shap(fit.model, fit.X.iloc[:50]), values[:50])
    with pytest.raises(AssertionError, match="called the booster"):
        explain.tree_shap(fit.model, fit.X.iloc[:50], engine="delegate")


def test_simulated_outcomes_are_compared_with_the_planted_ranking_not_the_paper(tmp_path):
    """Simulated outcomes have the paper's ranking planted: no paper weights in weights.json or the figure, and the
    Spearman is against the planted ranking; real outcomes keep the paper's weights beside the measured ones."""
    from flows.shap_stage import paper_weights, ranking_agreement, weights_document
    from tasks.params import ShapParams
    from tasks.rewards.weights import CLARITI_WEIGHTS

    simulated, real = ShapParams(), ShapParams(source="ambig_swe")
    categories = {c: {"weight": 1.0 - 0.15 * i, "ci_low": 0.9 - 0.15 * i, "ci_high": 1.0 - 0.1 * i, "rank": i + 1}
                  for i, c in enumerate(reversed(PLANTED))}  # the reverse of the paper's ranking
    weights = {"categories": categories, "ranking": list(reversed(PLANTED))}

    assert paper_weights(simulated) is None and paper_weights(real) == CLARITI_WEIGHTS
    sim_doc = weights_document(simulated, weights, {}, "simulated outcomes")
    real_doc = weights_document(real, weights, {}, "Ambig-SWE agent outcomes")
    assert "paper_weights_for_comparison" not in sim_doc and sim_doc["planted_ranking"][0] == "error_info"
    assert real_doc["paper_weights_for_comparison"] == CLARITI_WEIGHTS and "planted_ranking" not in real_doc
    assert ranking_agreement(simulated, weights["ranking"]) == {"spearman_vs_planted": -1.0}
    assert set(ranking_agreement(real, weights["ranking"])) == {"spearman_vs_paper"}

    bare = plots.weights_bar(weights, tmp_path / "sim.png", paper=paper_weights(simulated))
    beside = plots.weights_bar(weights, tmp_path / "real.png", paper=paper_weights(real))
    assert not any("paper" in row for row in bare) and all("paper" in row for row in beside)
    assert (tmp_path / "sim.png").read_bytes() != (tmp_path / "real.png").read_bytes()  # no paper markers drawn

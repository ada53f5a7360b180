"""The shap stage end to end: runs table -> classifier -> SHAP weights, plots and metrics; bad input."""

from __future__ import annotations

import json

import pytest

from tests.conftest import python, tiny_params, write_params


def check_shap_outputs(project, output: str) -> None:
    """What the shap stage publishes on the tiny params (``output``: the run's stdout): weights, plots, metrics, SHAP
    values and the surrogate. Called by the whole-DAG test (tests/test_pipeline.py), which runs the stage's CLI as
    `make run` does."""
    assert "simulated outcomes" in output, output
    weights = json.loads((project / "data" / "shap" / "weights.json").read_text())
    assert "simulated outcomes" in weights["source"]
    assert max(weights["weights"].values()) == 1.0 and len(weights["weights"]) == 6
    assert weights["ranking"][0] == "error_info"
    assert set(weights["exact_shapley"]["ranking"]) == set(weights["weights"])
    for png in ("beeswarm.png", "weights.png", "success_by_hidden.png"):
        assert (project / "data" / "shap" / "plots" / png).read_bytes()[:4] == b"\x89PNG"
    rows = json.loads((project / "data" / "plots" / "shap" / "weights.json").read_text())
    assert {r["category"] for r in rows} == set(weights["weights"])
    metrics = json.loads((project / "data" / "metrics" / "stages" / "shap.json").read_text())
    assert metrics["backend"].startswith("lightgbm + TreeSHAP on simulated outcomes")
    assert metrics["treeshap_vs_pred_contrib_max_abs_diff"] <= 1e-6
    assert 0.5 < metrics["cv"]["auc"] <= 1.0 and metrics["runs"] == 1200
    header = (project / "data" / "shap" / "shap_values.csv").read_text().splitlines()[0]
    assert header.startswith("variant_id,agent_model,shap_error_info")
    # the surrogate it persists for evaluate@swe's predicted resolution
    from tasks.evaluation.surrogate import load_surrogate

    model = load_surrogate(project / "data" / "shap" / "model.txt")
    meta = json.loads((project / "data" / "shap" / "model.json").read_text())
    assert meta["rows"] == 1200 and "simulated outcomes" in model.source
    assert model.feature_names[:6] == model.categories and len(model.profiles) == 2  # two simulated agent models
    low, high = model.predict([set(), set(model.categories)])
    assert 0 <= low < high <= 1


@pytest.mark.parametrize(
    "change, message",
    [
        ({"simulated": {"intercept": -60.0}}, "resolved"),
        ({"source": "harness"}, "shap.harness.resolved"),
    ],
)
def test_bad_runs_fail_with_one_line_and_write_nothing(project, change, message):
    params = tiny_params()
    for key, value in change.items():
        if isinstance(value, dict):
            params["shap"][key].update(value)
        else:
            params["shap"][key] = value
    write_params(project, params)
    proc = python(project, "-m", "flows.shap_stage", check=False)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and message in proc.stderr, proc.stderr
    assert not (project / "data" / "shap").exists()
    assert not (project / "data" / "metrics" / "stages" / "shap.json").exists()


def test_harness_report_with_a_non_binary_field_is_rejected(project):
    (project / "report.json").write_text(json.dumps({"resolved_ids": "not-a-list"}))
    params = tiny_params()
    params["shap"]["source"] = "harness"
    params["shap"]["harness"].update({"resolved": "report.json", "cases": "no/such/cases.jsonl"})
    write_params(project, params)
    proc = python(project, "-m", "flows.shap_stage", check=False)
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0, proc.stderr
    assert not (project / "data" / "shap").exists()

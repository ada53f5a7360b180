"""Labels that say what each number is (issue 40 item 4): a surrogate's predicted resolution never appears bare in
the stage metrics, and the combined report keeps its interval and its source under the labelled name."""

from __future__ import annotations

from tasks.evaluation.question_kind import headline as _swe_headline
from tasks.evaluation.stage import metric_rows
from tasks.evaluation.surrogate import base_metric, metric_key
from tasks.reporting.sections import method_table

PLANTED = "simulated outcomes (planted effects, not real agent runs)"


def test_the_stage_metrics_name_the_surrogate_and_its_planted_source():
    row = {"predicted_resolution": 0.6, "hidden_recall": 0.2, "kind": "policy", "CI95": {}}
    planted = _swe_headline(row, trained_on=PLANTED)
    assert "predicted_resolution" not in planted and planted["predicted_resolution_surrogate_planted"] == 0.6
    real = _swe_headline(row, trained_on="Ambig-SWE agent outcomes (presence: spans)")
    assert "predicted_resolution" not in real and real["predicted_resolution_surrogate"] == 0.6
    assert _swe_headline(row)["predicted_resolution_surrogate_planted"] == 0.6  # unknown source: assume planted
    assert planted["hidden_recall"] == 0.2 and "kind" not in planted


def test_no_ranked_or_reference_row_carries_a_bare_predicted_resolution():
    methods = {"grpo_policy": {"predicted_resolution": 0.6, "cases": 3}}
    reference = {"oracle_template": {"predicted_resolution": 0.8, "cases": 3,
                                     "reference": {"kind": "privileged", "reads": "hidden categories"}}}
    out = metric_rows(methods, reference, lambda m: _swe_headline(m, trained_on=PLANTED))
    for rows in (out["rows"], out["reference_rows"]):
        for row in rows.values():
            assert not any(k == "predicted_resolution" for k in row)
            assert any(k.startswith("predicted_resolution_surrogate") for k in row)


def test_the_combined_report_keeps_the_interval_of_the_labelled_column():
    key = metric_key(PLANTED)
    assert base_metric(key) == "predicted_resolution" and base_metric("hidden_recall") == "hidden_recall"
    summary = {"methods": {"grpo_policy": {"CI95": {"predicted_resolution": [0.5, 0.7]}}}}
    table = method_table({"grpo_policy": {key: 0.6}}, summary)
    assert table.header == ["method", key] and "surrogate" in key and "planted" in key
    assert table.rows[0][1].endswith("[0.5, 0.7]")

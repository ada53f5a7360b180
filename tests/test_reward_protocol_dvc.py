"""``dvc exp run -S reward.protocol=reference`` runs sft_data -> grpo -> evaluate@swe offline in a project copy,
and evaluate@swe's summary and report name the protocol (slow: the chain trains the embedded policy; a longer hang
guard than the default, since the chain alone is construct@swe, shap, sft_data, sft, grpo and evaluate@swe)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import dvc, run, tiny_params, write_params


@pytest.mark.slow
def test_exp_run_reference_protocol_runs_the_swe_chain(project, prefect_api):
    params = tiny_params()
    swe = params["evaluate"]["swe"]
    swe.update({"limit": 2, "methods": [m for m in swe["methods"] if m["name"] in ("ask_everything", "grpo_policy")]})
    write_params(project, params)
    run(project, "git", "add", "-A")
    run(project, "git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "copy")
    out = dvc(project, "exp", "run", "-S", "reward.protocol=reference", "evaluate@swe", timeout=3600).stdout
    for stage in ("sft_data", "grpo", "evaluate@swe"):
        assert f"Running stage '{stage}'" in out, out
    summary = json.loads((project / "data" / "eval" / "swe" / "summary.json").read_text())
    assert summary["reward_protocol"] == "reference" and summary["reward"]["protocol"] == "reference"
    assert summary["unscored"] == 0  # the local stand-in never fails
    assert summary["methods"]["ask_everything"]["reward_mean"] is not None
    report = (project / "data" / "eval" / "swe" / "report.md").read_text()
    assert "protocol reference" in report and "Reward protocol: reference" in report

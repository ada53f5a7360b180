"""Gates on the artifacts later stages read or users open (issue 21): for each, a valid copy passes and a corrupted
copy fails with a message naming the artifact. Artifacts are built small in tmp_path, never by running stages."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from tasks.errors import GateError
from tests.test_training import ISSUES, QUESTIONS, _tiny_llama, _tokenizer

pytestmark = pytest.mark.filterwarnings("ignore:`is_gradient_checkpointing` is deprecated:FutureWarning")


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# ------------------------------------------------------------------ LoRA adapters


@pytest.fixture(scope="module")
def tokenizer():
    return _tokenizer()


@pytest.fixture(scope="module")
def trained(tmp_path_factory, tokenizer) -> Path:
    from tasks.training import get_profile, sft_row, train_sft

    out = tmp_path_factory.mktemp("adapter") / "sft"
    profile = get_profile("cpu", {"sft": {"max_steps": 1, "batch_size": 2, "max_length": 128}})
    train_sft(_tiny_llama(tokenizer), tokenizer, [sft_row(i, q) for i, q in zip(ISSUES, QUESTIONS, strict=True)],
              profile, out)
    return out


def _check(adapter: Path, **overrides):
    from tasks.training import get_profile
    from tasks.validation.adapters import check_adapter

    lora = get_profile("cpu").lora
    options = {"base_model": "in-memory LlamaForCausalLM", "r": lora.r, "lora_alpha": lora.alpha,
               "target_modules": list(lora.target_modules), "artifact": "data/models/sft", **overrides}
    return check_adapter(adapter, **options)


def _copy(trained: Path, tmp_path: Path) -> Path:
    shutil.copytree(trained, tmp_path / "sft")
    return tmp_path / "sft" / "adapter"


def test_adapter_gate_passes_a_trained_adapter_and_its_smoke_generation(trained, tokenizer):
    from tasks.validation.adapters import smoke_generate

    config = _check(trained / "adapter")
    assert config.peft_type == "LORA" and config.r == 8
    answer = smoke_generate(trained / "adapter", _tiny_llama(tokenizer), tokenizer=tokenizer,
                            artifact="data/models/sft")
    assert answer.strip()


@pytest.mark.parametrize(("field", "value", "message"), [
    ("peft_type", "PREFIX_TUNING", "peft_type is 'PREFIX_TUNING'"),
    ("r", 4, "r is 4, expected 8"),
    ("lora_alpha", 1, "lora_alpha is 1"),
    ("target_modules", ["q_proj"], "target_modules is ['q_proj']"),
    ("base_model_name_or_path", "Qwen/Qwen3-8B", "base_model_name_or_path is 'Qwen/Qwen3-8B'"),
])
def test_adapter_gate_refuses_a_wrong_config_key(trained, tmp_path, field, value, message):
    adapter = _copy(trained, tmp_path)
    config = json.loads((adapter / "adapter_config.json").read_text())
    config[field] = value
    (adapter / "adapter_config.json").write_text(json.dumps(config))
    with pytest.raises(GateError, match="data/models/sft") as err:
        _check(adapter)
    assert message in str(err.value)


def test_adapter_gate_refuses_a_truncated_or_missing_weights_file(trained, tmp_path):
    adapter = _copy(trained, tmp_path)
    weights = adapter / "adapter_model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    with pytest.raises(GateError, match=r"data/models/sft: adapter_model.safetensors unreadable"):
        _check(adapter)
    weights.write_bytes(b"\0" * 16)
    with pytest.raises(GateError, match="is 16 bytes"):
        _check(adapter)
    weights.unlink()
    with pytest.raises(GateError, match=r"adapter_model.safetensors missing"):
        _check(adapter)


def test_adapter_smoke_check_fails_on_a_base_the_adapter_does_not_fit(trained, tokenizer):
    from transformers import LlamaConfig, LlamaForCausalLM

    from tasks.validation.adapters import smoke_generate

    other = LlamaForCausalLM(LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,
                                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1))
    with pytest.raises(GateError, match="data/models/sft: load-and-generate smoke check failed"):
        smoke_generate(trained / "adapter", other, tokenizer=tokenizer, artifact="data/models/sft")


def test_failing_adapter_gate_leaves_the_previous_adapter_byte_identical(trained, tmp_path, tokenizer):
    """The trainer runs ``check`` on the staging folder before publishing: a failure publishes nothing."""
    from tasks.training import get_profile, sft_row, train_sft

    out = tmp_path / "sft"
    shutil.copytree(trained, out)
    before = _tree(out)

    def check(staging: Path) -> None:
        _check(staging / "adapter", r=99)

    profile = get_profile("cpu", {"sft": {"max_steps": 1, "batch_size": 2, "max_length": 128, "learning_rate": 0.5}})
    with pytest.raises(GateError, match="r is 8, expected 99"):
        train_sft(_tiny_llama(tokenizer), tokenizer, [sft_row(ISSUES[0], QUESTIONS[0])] * 2, profile, out,
                  check=check)
    assert _tree(out) == before
    assert not list(tmp_path.glob(".sft.staging*"))


# ------------------------------------------------------------------ surrogate + SHAP tables


@pytest.fixture(scope="module")
def shap_folder(tmp_path_factory) -> tuple[Path, int]:
    """The files the shap stage writes next to each other, for a small simulated runs table."""
    import pandas as pd

    from tasks.evaluation.surrogate import save_surrogate
    from tasks.infovalue import explain, model, runs
    from tasks.store import atomic_write_json

    folder = tmp_path_factory.mktemp("shap")
    table = runs.simulate_runs(n_variants=150, agent_models=["a", "b"], seed=0)
    fit = model.fit_classifier(table, folds=2, seed=0)
    X, names = model.design_matrix(table)
    values = explain.tree_shap(fit.model, X)
    per_row = pd.DataFrame(values[:, : len(names)], columns=[f"shap_{n}" for n in names])
    per_row.insert(0, "variant_id", table["variant_id"].to_numpy())
    per_row.insert(1, "agent_model", table["agent_model"].to_numpy())
    (folder / "shap_values.csv").write_text(per_row.to_csv(index=False, float_format="%.6g"))
    atomic_write_json(folder / "calibration.json", fit.calibration)
    save_surrogate(fit, table, folder, source="simulated")
    return folder, len(table)


def _shap_copy(shap_folder, tmp_path) -> Path:
    folder = tmp_path / "shap"
    shutil.copytree(shap_folder[0], folder)
    return folder


def test_surrogate_and_shap_tables_pass(shap_folder):
    from tasks.infovalue import FEATURES
    from tasks.validation.shap_gates import gate_shap_tables, gate_surrogate

    folder, rows = shap_folder
    meta = gate_surrogate(folder, rows=rows)
    assert set(FEATURES) <= set(meta.feature_names) and meta.rows == rows
    gate_shap_tables(folder, rows=rows)  # raises on failure


def test_truncated_model_txt_fails(shap_folder, tmp_path):
    from tasks.validation.shap_gates import gate_surrogate

    folder = _shap_copy(shap_folder, tmp_path)
    text = (folder / "model.txt").read_text()
    (folder / "model.txt").write_text(text[: len(text) // 3])
    with pytest.raises(GateError, match=r"data/shap/model.txt"):
        gate_surrogate(folder, rows=shap_folder[1])


def test_model_json_with_wrong_features_or_rows_fails(shap_folder, tmp_path):
    from tasks.validation.shap_gates import gate_surrogate

    folder = _shap_copy(shap_folder, tmp_path)
    meta = json.loads((folder / "model.json").read_text())
    with pytest.raises(GateError, match=r"data/shap/model.json: rows is \d+ but the runs table has 7"):
        gate_surrogate(folder, rows=7)
    (folder / "model.json").write_text(json.dumps({**meta, "feature_names": meta["feature_names"][:-1] + ["extra"]}))
    with pytest.raises(GateError, match=r"data/shap/model.txt: expects"):
        gate_surrogate(folder, rows=shap_folder[1])
    del meta["profiles"]
    (folder / "model.json").write_text(json.dumps(meta))
    with pytest.raises(GateError, match=r"data/shap/model.json: profiles: Field required"):
        gate_surrogate(folder, rows=shap_folder[1])


def test_calibration_probability_out_of_range_fails(shap_folder, tmp_path):
    from tasks.validation.shap_gates import gate_shap_tables

    folder = _shap_copy(shap_folder, tmp_path)
    bins = json.loads((folder / "calibration.json").read_text())
    bins[0]["mean_predicted"] = 1.5
    (folder / "calibration.json").write_text(json.dumps(bins))
    with pytest.raises(GateError, match=r"data/shap/calibration.json: bin 0: mean_predicted"):
        gate_shap_tables(folder, rows=shap_folder[1])


def test_shap_values_with_nan_or_wrong_rows_or_columns_fail(shap_folder, tmp_path):
    import pandas as pd

    from tasks.validation.shap_gates import gate_shap_tables

    folder, rows = _shap_copy(shap_folder, tmp_path), shap_folder[1]
    frame = pd.read_csv(folder / "shap_values.csv")
    with pytest.raises(GateError, match=r"data/shap/shap_values.csv: .*expect_table_row_count_to_equal"):
        gate_shap_tables(folder, rows=rows + 1)
    column = next(c for c in frame.columns if c.startswith("shap_"))
    frame.loc[3, column] = math.nan
    frame.to_csv(folder / "shap_values.csv", index=False)
    with pytest.raises(GateError, match=r"shap_values.csv: .*expect_column_values_to_be_in_set\(row_finite\)"):
        gate_shap_tables(folder, rows=rows)
    frame.drop(columns=[column]).assign(**{column: 0.0}).to_csv(folder / "shap_values.csv", index=False)
    with pytest.raises(GateError, match="expect_table_columns_to_match_ordered_list"):
        gate_shap_tables(folder, rows=rows)


# ------------------------------------------------------------------ recovery curves


def _curves() -> dict:
    band = {"mean": [0.0, 0.5, 1.0], "low": [0.0, 0.2, 1.0], "high": [0.0, 0.8, 1.0]}
    return {"questions": [0, 1, 2], "curves": {
        "open::freeqa": {"protocol": "open", "method": "freeqa", "runs": 2, "core_runs": 2, "all_slot": band,
                         "core": band},
        "mc_d::mc_d": {"protocol": "mc_d", "method": "mc_d", "runs": 2, "core_runs": 0, "all_slot": band,
                       "core": None},
    }}


def _gate_recovery(tmp_path: Path, doc: dict) -> None:
    from tasks.validation.eval_gates import gate_recovery

    path = tmp_path / "recovery.json"
    path.write_text(json.dumps(doc))
    gate_recovery(path, artifact="data/eval/optimization/recovery.json")


def test_recovery_curves_pass(tmp_path):
    from tasks.validation.eval_gates import recovery_frame

    _gate_recovery(tmp_path, _curves())
    assert len(recovery_frame(tmp_path / "recovery.json", "recovery.json")) == 3 * 3  # 2 all_slot + 1 core curve


def test_curves_from_real_episodes_pass(tmp_path):
    """The curves ``tasks.evaluation.metrics.recovery_curves`` computes for the metrics tests' hand-built runs."""
    from tasks.evaluation import metrics
    from tests.test_evaluation_metrics import runs

    eps, judged, cases = runs.__wrapped__()
    curves = metrics.recovery_curves(eps, judged, cases, n_resamples=50)
    assert curves["curves"]["open::m"]["core"] is not None
    _gate_recovery(tmp_path, curves)


@pytest.mark.parametrize(("corrupt", "message"), [
    (lambda d: d.update(questions=[0, 2, 1]), r"expect_column_values_to_be_between\(x_step\)"),
    (lambda d: d["curves"]["open::freeqa"]["all_slot"]["mean"].__setitem__(1, 1.5),
     r"expect_column_values_to_be_between\(mean\)"),
    (lambda d: d["curves"]["open::freeqa"]["core"]["mean"].__setitem__(2, math.nan),
     r"expect_column_values_to_not_be_null\(mean\)"),
    (lambda d: d["curves"]["mc_d::mc_d"]["all_slot"]["high"].pop(), r"lengths_match_x"),
    (lambda d: d.pop("questions"), "questions: Field required"),
])
def test_corrupted_recovery_curves_fail(tmp_path, corrupt, message):
    doc = _curves()
    corrupt(doc)
    with pytest.raises(GateError, match=r"data/eval/optimization/recovery.json: .*" + message):
        _gate_recovery(tmp_path, doc)


# ------------------------------------------------------------------ bridge exports


def _bridge(folder: Path, rows: list[dict] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    rows = rows if rows is not None else [
        {"instance_id": f"psf__requests-{n}", "problem_statement": "It crashes.", "repo": "psf/requests",
         "base_commit": "0123abcd", "clarifyflow_case_id": f"c{n}", "clarifyflow_method": "no_questions"}
        for n in range(3)]
    (folder / "no_questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    manifest = {"format": "SWE-bench-style JSONL", "methods": {
        "no_questions": {"no_questions.jsonl": [r["clarifyflow_case_id"] for r in rows]}}}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


def _gate_bridge(folder: Path) -> None:
    from tasks.validation.eval_gates import gate_bridge

    gate_bridge(folder, artifact="data/eval/swe/bridge")


def test_bridge_exports_pass_without_and_with_base_commit(tmp_path):
    _gate_bridge(_bridge(tmp_path / "a"))
    rows = [{"instance_id": "x-1", "problem_statement": "Fails.", "repo": "o/r", "clarifyflow_case_id": "c1",
             "clarifyflow_method": "no_questions"}]
    _gate_bridge(_bridge(tmp_path / "b", rows))  # the sample issues carry no base_commit


@pytest.mark.parametrize(("field", "value", "message"), [
    ("instance_id", "psf__requests-0", r"expect_column_values_to_be_unique\(key\)"),
    ("problem_statement", "  ", r"problem_statement_chars"),
    ("repo", "", r"expect_column_value_lengths_to_be_between\(repo\)"),
    ("base_commit", "", r"expect_column_values_to_match_regex\(base_commit\)"),
])
def test_corrupted_bridge_rows_fail(tmp_path, field, value, message):
    folder = _bridge(tmp_path / "bridge")
    rows = [json.loads(line) for line in (folder / "no_questions.jsonl").read_text().splitlines()]
    rows[1][field] = value
    _bridge(folder, rows)
    with pytest.raises(GateError, match=r"data/eval/swe/bridge: .*" + message):
        _gate_bridge(folder)


def test_the_swe_evaluations_own_bridge_export_passes(tmp_path):
    from tests.test_swe_eval import METHODS, FakePolicy, project, run

    root, settings = project(tmp_path, METHODS)
    run(root, settings, tmp_path / "out", FakePolicy())
    _gate_bridge(tmp_path / "out" / "bridge")
    assert len(list((tmp_path / "out" / "bridge").glob("*.jsonl"))) >= 2


def test_bridge_manifest_must_list_exactly_the_files(tmp_path):
    folder = _bridge(tmp_path / "bridge")
    (folder / "extra.jsonl").write_text((folder / "no_questions.jsonl").read_text())
    with pytest.raises(GateError, match=r"data/eval/swe/bridge/manifest.json: lists \['no_questions.jsonl'\]"):
        _gate_bridge(folder)
    (folder / "extra.jsonl").unlink()
    (folder / "no_questions.jsonl").write_text((folder / "no_questions.jsonl").read_text().splitlines()[0] + "\n")
    with pytest.raises(GateError, match=r"data/eval/swe/bridge/no_questions.jsonl: rows do not match"):
        _gate_bridge(folder)


# ------------------------------------------------------------------ stage metrics


STAGE_METRICS = {
    "construct/swe": ({"backend": "rules", "cases": 3, "spans": 5}, {"cases": 3}),
    "shap": ({"backend": "lightgbm", "source": "simulated", "runs": 10, "resolved_rate": 0.4, "cv": {"auc": 0.7},
              "calibration": {"bin_00": {"count": 4, "mean_predicted": 0.1, "observed_rate": 0.2}},
              "weights": {"reproduction": 1.0}, "treeshap_vs_pred_contrib_max_abs_diff": 1e-7}, {"runs": 10}),
    "sft_data": ({"backend": "w", "cases": 4, "rows": 4, "train": 3, "heldout": 1, "writer_failures": 0,
                  "mean_questions": 1.5}, {"rows": 4}),
    "sft": ({"backend": "TRL", "kind": "sft", "steps": 2, "trainable_params": 10, "n_rows": 4, "final_loss": 1.2},
            {}),
    # a GRPO surrogate loss may end just below 0 (the grpo_long recipe's last step: -5.96e-08)
    "grpo": ({"backend": "TRL", "kind": "grpo", "steps": 20, "trainable_params": 10, "n_rows": 72,
              "final_loss": -5.96e-08}, {}),
    "evaluate/swe": ({"backend": "local", "cases": 3, "rows": {"a": {"answered_rate": 0.5, "distinct_intents": 0.8}},
                      "reference_rows": {}}, {"cases": 3}),
}


@pytest.mark.parametrize("stage", sorted(STAGE_METRICS))
def test_stage_metrics_pass(stage):
    from tasks.validation.stage_metrics import check_stage_metrics

    metrics, counts = STAGE_METRICS[stage]
    check_stage_metrics(stage, metrics, counts=counts)  # raises on failure


@pytest.mark.parametrize(("stage", "change", "message"), [
    ("construct/swe", {"cases": 2}, "cases is 2 but the artifact has 3"),
    ("construct/swe", {"backend": None}, "backend: Input should be a valid string"),
    ("shap", {"resolved_rate": math.nan}, "resolved_rate"),
    ("shap", {"cv": {"auc": math.inf}}, "cv.auc: inf is not a finite number"),
    ("sft_data", {"train": 2}, r"train \+ heldout \(2 \+ 1\) != rows \(4\)"),
    ("sft", {"steps": 0}, "steps: Input should be greater than or equal to 1"),
    ("sft", {"final_loss": -0.5}, "final_loss -0.5 of an SFT run is negative"),
    ("evaluate/swe", {"rows": {"a": {"answered_rate": 1.2}}}, r"rows.a.answered_rate: rate 1.2 outside \[0, 1\]"),
    ("evaluate/swe", {"rows": {"a": {"distinct_intents": 1.5}}}, r"rows.a.distinct_intents: rate 1.5 outside \[0, 1\]"),
])
def test_corrupted_stage_metrics_fail(stage, change, message):
    from tasks.validation.stage_metrics import check_stage_metrics

    metrics, counts = STAGE_METRICS[stage]
    with pytest.raises(GateError, match=f"data/metrics/stages/{stage}.json: .*{message}"):
        check_stage_metrics(stage, {**metrics, **change}, counts=counts)


# ------------------------------------------------------------------ report


def _report(folder: Path):
    from tasks.reporting import ReportInputs, write_report

    folder.mkdir(parents=True, exist_ok=True)
    metrics = {"extra_stage": {"backend": "rules (https://example.org/rules)", "steps": 2}}
    return write_report("Report", ReportInputs(metrics=metrics), folder)


def test_report_passes(tmp_path):
    from tasks.validation.report_gate import gate_report

    page = _report(tmp_path / "report")
    assert "https://example.org/rules" in (tmp_path / "report" / "report.md").read_text()  # text URLs are fine
    gate_report(tmp_path / "report", page)
    gate_report(tmp_path / "report")


@pytest.mark.parametrize(("name", "old", "new", "message"), [
    ("report.md", "## Training", "## Trained", "data/report/report.md: section 'Training' missing"),
    ("report.html", 'id="training"', 'id="trained"', "data/report/report.html: section 'Training'"),
    ("report.html", "</main>", '<img src="https://cdn.example.org/x.png"></main>', "loads a remote asset"),
    ("report.html", "</head>", '<link rel="stylesheet" href="http://cdn.example.org/a.css"></head>',
     "data/report/report.html: loads a remote asset"),
    ("report.md", "# Report", "# Report\n\n![plot](https://example.org/p.png)",
     "data/report/report.md: image 'https://example.org/p.png' is not a file"),
    ("report.html", "</main>", '<img src="figure.png"></main>', "is not embedded"),
    ("report.md", "# Report", "# Report\n\n![plot](missing.png)", "image 'missing.png' is not a PNG"),
])
def test_corrupted_report_fails(tmp_path, name, old, new, message):
    from tasks.validation.report_gate import gate_report

    page = _report(tmp_path / "report")
    path = tmp_path / "report" / name
    assert old in path.read_text()
    path.write_text(path.read_text().replace(old, new, 1))
    with pytest.raises(GateError, match=message):
        gate_report(tmp_path / "report", page)


def test_failing_report_gate_keeps_the_previous_report_and_metrics(tmp_path, monkeypatch):
    """The report stage end to end on an empty project: a remote asset in the page stops it before publishing."""
    import tasks.reporting
    from flows.report import report
    from tests.conftest import ROOT

    (tmp_path / "dvc.yaml").write_text("stages: {}\n")
    shutil.copy(ROOT / "params.yaml", tmp_path / "params.yaml")
    (tmp_path / "data" / "metrics" / "stages").mkdir(parents=True)
    (tmp_path / "data" / "metrics" / "stages" / "sft_data.json").write_text(json.dumps(STAGE_METRICS["sft_data"][0]))
    monkeypatch.chdir(tmp_path)
    report()
    before = _tree(tmp_path / "data" / "report")
    metrics_before = (tmp_path / "data" / "metrics" / "report.json").read_bytes()
    assert "report.html" in before

    original = tasks.reporting.render_html
    monkeypatch.setattr(tasks.reporting, "render_html",
                        lambda page: original(page).replace("</main>", '<img src="https://x.org/a.png"></main>'))
    with pytest.raises(GateError, match=r"data/report/report.html: loads a remote asset"):
        report()
    assert _tree(tmp_path / "data" / "report") == before
    assert (tmp_path / "data" / "metrics" / "report.json").read_bytes() == metrics_before

"""Headline metrics: a few figures per stage, copied from the full metrics, are what `dvc metrics show` reads."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tasks import stage_metrics
from tasks.stage_metrics import headline, headline_path

ROOT = Path(__file__).resolve().parents[1]
VOCABULARY = {"cases", "heldout", "hidden", "steps", "loss", "score"}


def test_headlines_copy_a_few_figures_from_the_full_metrics():
    construct = {"cases": 12, "cases_by_hidden_count": {"1": 4, "2": 8}, "split": {"heldout": {"cases": 3}},
                 "backend": "rules", "hidden_per_category": {"a": 1}}
    assert headline("construct/swe", construct) == {"cases": 12, "hidden": 20, "heldout": 3}
    episodes = {"cases": 5, "rows": {"open::freeqa": {"AllSlotExactRestoreRate": 0.4},
                                     "mc_d::interopt": {"AllSlotExactRestoreRate": 0.6}},
                "reference_rows": {"open::oracle": {"AllSlotExactRestoreRate": 1.0}}}
    assert headline("evaluate/optimization", episodes) == {"cases": 5, "score": 0.6}  # reference rows never count
    questions = {"cases": 30, "rows": {"policy": {"weighted_recovery": 0.51234}}}
    assert headline("evaluate/swe", questions) == {"cases": 30, "score": 0.5123}
    grpo = {"steps": 6, "final_loss": 0.25, "heldout": {"gain": {"total": {"mean": -0.02, "low": -0.1, "high": 0.05}}}}
    assert headline("grpo", grpo) == {"steps": 6, "loss": 0.25, "score": -0.02}
    assert headline("shap", {"runs": 600, "cv": {"auc": 0.8}, "weights": {"x": 1.0}}) == {"cases": 600, "score": 0.8}
    assert headline("sft", {"steps": 20}) == {"steps": 20}  # a figure the metrics lack is left out, never invented


def test_every_committed_stage_metrics_file_has_a_small_headline_in_the_shared_vocabulary():
    stages = sorted((ROOT / "data" / "metrics" / "stages").rglob("*.json"))
    assert stages
    for path in stages:
        stage = path.relative_to(ROOT / "data" / "metrics" / "stages").with_suffix("").as_posix()
        figures = headline(stage, json.loads(path.read_text(encoding="utf-8")))
        assert figures and set(figures) <= VOCABULARY and len(figures) <= 3, (stage, figures)


def test_publishing_writes_the_headline_next_to_the_full_metrics(tmp_path: Path):
    staging = tmp_path / "data" / ".staging"
    staging.mkdir(parents=True)
    (staging / "out.txt").write_text("x")
    metrics = {"runs": 10, "cv": {"auc": 0.7}, "seconds": 3.0}
    stage_metrics.publish_with_metrics(staging, tmp_path / "data" / "shap", tmp_path, "shap", metrics)
    assert json.loads(headline_path(tmp_path, "shap").read_text()) == {"cases": 10, "score": 0.7}
    assert json.loads(stage_metrics.metrics_path(tmp_path, "shap").read_text())["cv"] == {"auc": 0.7}


def test_dvc_yaml_declares_only_headline_files_as_metrics_and_keeps_the_full_files_as_outputs():
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    for name, spec in stages.items():
        metrics = [next(iter(m)) if isinstance(m, dict) else m for m in spec.get("metrics", [])]
        outs = [next(iter(o)) if isinstance(o, dict) else o for o in spec.get("outs", [])]
        for metric in metrics:
            if metric == "data/metrics/report.json":  # the report's own summary: four numbers
                continue
            assert metric.startswith("data/metrics/headline/"), (name, metric)
            assert metric.replace("/headline/", "/stages/") in outs, (name, metric)

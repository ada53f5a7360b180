"""`dvc plots` and `dvc exp`: the plot records the stages write, the real dvc.yaml's plot declarations, and both
commands run on small throwaway git + DVC repositories (never the real pipeline)."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from tasks.evaluation import plots as eval_plots
from tasks.evaluation import question_plots as question_plots
from tasks.training import artifacts
from tasks.training.heldout import CURVE_FILE, HeldoutCurve, HeldoutPoint
from tests.conftest import ROOT, dvc, run

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kg"
                       "AAAABJRU5ErkJggg==")
"""A 1x1 PNG: the image plots only need a file the revisions can tell apart."""
REWARDS = ["non_redundancy", "diversity", "staged_total"]


def history(scale: float = 1.0) -> list[dict]:
    """A GRPO-like cleaned log history: logged steps, a final summary entry without ``loss``."""
    rows = [{"step": s, "loss": scale / s, "reward": 0.1 * s, "epoch": 0.5 * s,
             **{f"rewards/{n}/mean": 0.05 * s * (i + 1) for i, n in enumerate(REWARDS)}} for s in (1, 2, 3)]
    return [*rows, {"step": 3, "train_loss": scale / 2, "total_flos": 0.0}]


def curve(scale: float = 1.0) -> HeldoutCurve:
    points = [HeldoutPoint(step=s, total=scale * (0.3 + 0.01 * s), stages={"non_redundancy": 0.5, "diversity": 0.2},
                           per_case={"c0": 0.3}, per_case_stages={"non_redundancy": {"c0": 0.5},
                                                                  "diversity": {"c0": 0.2}},
                           questions=2.0, asking_rate=1.0) for s in (0, 2)]
    return HeldoutCurve(cases=1, issues=1, every=2, max_new_tokens=16, points=points)


def recovery_curves(scale: float = 1.0) -> dict:
    band = {"mean": [0.0, 0.5 * scale, scale], "low": [0.0, 0.2, 0.5], "high": [0.0, 0.8, 1.0]}
    return {"questions": [0, 1, 2], "curves": {
        "open::freeqa": {"protocol": "open", "method": "freeqa", "runs": 2, "core_runs": 2, "all_slot": band,
                         "core": band},
        "mc_d::mc_d": {"protocol": "mc_d", "method": "mc_d", "runs": 2, "core_runs": 0, "all_slot": band,
                       "core": None}}}


def swe_methods(scale: float = 1.0) -> dict:
    return {"no_questions": {"questions_per_issue": 0.0, "weighted_recovery": 0.0, "CI95": {}},
            "ask_everything": {"questions_per_issue": 6.0, "weighted_recovery": 0.7 * scale,
                               "CI95": {"questions_per_issue": [5.0, 7.0], "weighted_recovery": [0.6, 0.8]}},
            "no_answers": {"questions_per_issue": None, "weighted_recovery": None, "CI95": {}}}


def records(path: Path) -> list[dict]:
    rows = json.loads(path.read_text())
    assert isinstance(rows, list)
    assert all(set(r) == set(rows[0]) for r in rows), f"{path}: records with different keys (dvc plots drops them)"
    return rows


def model_dir(folder: Path, scale: float = 1.0, with_curve: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / artifacts.LOG_HISTORY).write_text(json.dumps(history(scale)))
    if with_curve:
        (folder / CURVE_FILE).write_text(curve(scale).model_dump_json())
    return folder


# ---- the records --------------------------------------------------------------------------------------------------


def test_training_plot_data_is_flat_records_outside_the_model_folder(tmp_path):
    grpo = model_dir(tmp_path / "models" / "grpo")
    before = sorted(p.name for p in grpo.iterdir())
    written = artifacts.write_plot_data(tmp_path / "plots" / "grpo", grpo, reward_names=REWARDS)
    assert [p.name for p in written] == ["loss.json", "rewards.json", "heldout.json"]
    assert sorted(p.name for p in grpo.iterdir()) == before  # the model folder gains nothing
    assert records(written[0]) == [{"step": 1, "loss": 1.0}, {"step": 2, "loss": 0.5}, {"step": 3, "loss": 1 / 3}]
    rewards = records(written[1])
    assert [r["series"] for r in rewards] == [n for n in [*REWARDS, artifacts.WEIGHTED_TOTAL] for _ in range(3)]
    assert rewards[-1] == {"step": 3, "series": artifacts.WEIGHTED_TOTAL, "reward": 0.1 * 3}
    heldout = records(written[2])
    assert {(r["step"], r["series"]) for r in heldout} == {(s, n) for s in (0, 2)
                                                           for n in ("total", "non_redundancy", "diversity")}
    assert heldout[0] == {"step": 0, "series": "total", "reward": 0.3}


def test_sft_writes_only_the_loss_and_grpo_without_a_curve_an_empty_heldout_file(tmp_path):
    sft = model_dir(tmp_path / "sft", with_curve=False)
    assert [p.name for p in artifacts.write_plot_data(tmp_path / "p" / "sft", sft)] == ["loss.json"]
    grpo = model_dir(tmp_path / "grpo", with_curve=False)
    artifacts.write_plot_data(tmp_path / "p" / "grpo", grpo, reward_names=REWARDS)
    assert json.loads((tmp_path / "p" / "grpo" / "heldout.json").read_text()) == []


def test_evaluation_records_one_series_per_curve_and_per_swe_method(tmp_path):
    rows = eval_plots.recovery_rows(recovery_curves())
    assert len(rows) == 2 * 3
    assert {r["series"] for r in rows} == {"open::freeqa", "mc_d::mc_d"}
    assert rows[2] == {"series": "open::freeqa", "questions": 2, "recovery": 1.0, "low": 0.5, "high": 1.0, "core": 1.0}
    assert all(r["core"] is None for r in rows if r["series"] == "mc_d::mc_d")
    swe = question_plots.recovery_rows(swe_methods())
    assert [r["series"] for r in swe] == ["ask_everything", "no_questions"]  # sorted; no_answers has no values
    assert swe[0] == {"series": "ask_everything", "questions": 6.0, "recovery": 0.7, "questions_low": 5.0,
                      "questions_high": 7.0, "recovery_low": 0.6, "recovery_high": 0.8}
    assert eval_plots.plot_data_path(tmp_path, "swe") == tmp_path / "data/plots/evaluate/swe/recovery.json"


# ---- the real dvc.yaml -------------------------------------------------------------------------------------------


def test_the_real_plot_declarations_load_and_name_what_the_stages_write():
    """DVC's own loader reads dvc.yaml (schema, matrices); every plot is a stage's output or lies inside one, every
    template exists, and the data files are the ones the code writes."""
    from dvc.repo import Repo
    from dvc_render.vega_templates import TEMPLATES

    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    with Repo(str(ROOT)) as repo:
        stage_plots = {(o.stage.addressing, o.def_path): o.plot for o in repo.index.plots}
        outs = [o.def_path for s in repo.index.stages for o in s.outs]
        top = [p if isinstance(p, str) else next(iter(p)) for ps in repo.index._plots.values() for p in ps]
    expected = {("sft", f"data/plots/sft/{artifacts.LOSS_DATA}")}
    expected |= {("grpo", f"data/plots/grpo/{name}")
                 for name in (artifacts.LOSS_DATA, artifacts.REWARDS_DATA, artifacts.HELDOUT_DATA)}
    expected |= {(f"evaluate@{d}", eval_plots.plot_data_path(Path(), d).as_posix()) for d in params["domains"]}
    assert expected <= set(stage_plots)
    assert all(path.startswith("data/plots/") for _, path in stage_plots)
    builtin = {t.DEFAULT_NAME for t in TEMPLATES}
    for (stage, path), props in stage_plots.items():
        template = props.get("template") if isinstance(props, dict) else None
        assert template is None or template in builtin or (ROOT / ".dvc" / "plots" / f"{template}.json").is_file(), \
            f"{stage}: {path}: no template {template!r}"
    assert top, "no top-level plots"
    for path in top:
        assert any(path == o or path.startswith(o.rstrip("/") + "/") for o in outs), f"{path}: no stage writes it"


# ---- dvc plots show / diff on a toy repository ---------------------------------------------------------------------

MAKE = """import shutil, sys
from pathlib import Path
shutil.copytree(Path("fixtures") / sys.argv[1], ".", dirs_exist_ok=True)
"""


def git_dvc_repo(repo: Path) -> Path:
    repo.mkdir()
    run(repo, "git", "init", "-q")
    run(repo, "git", "config", "user.name", "t")
    run(repo, "git", "config", "user.email", "t@example.invalid")
    dvc(repo, "init", "-q")
    return repo


def commit(repo: Path, message: str) -> None:
    run(repo, "git", "add", "-A")
    run(repo, "git", "commit", "-qm", message)


def toy_pipeline(real: dict) -> dict:
    """The real dvc.yaml's sft, grpo and evaluate stages (outs and plots as declared) and top-level plots, each
    stage's command copying its fixture files into place."""
    stages = {}
    for name in ("sft", "grpo", "evaluate"):
        stage = {k: v for k, v in real["stages"][name].items() if k in ("matrix", "outs", "plots")}
        # the stages' metrics files are not plots: the toy's fixtures do not write them
        stage["outs"] = [o for o in stage.get("outs", []) if not str(o if isinstance(o, str) else next(iter(o)))
                         .startswith("data/metrics/")]
        fixture = f"{name}-${{item.domain}}" if "matrix" in stage else name
        stage.update(cmd=f"python make.py {fixture}", deps=["make.py", f"fixtures/{fixture}"])
        stages[name] = stage
    return {"stages": stages, "plots": real["plots"]}


def write_fixtures(repo: Path, domains: list[str], scale: float) -> None:
    """Files of the stages' shapes: the records from the project's writers, a PNG per image plot."""
    fixtures = repo / "fixtures"
    for name, reward_names in (("sft", []), ("grpo", REWARDS)):
        source = model_dir(repo / "scratch" / name, scale)
        artifacts.write_plot_data(fixtures / name / "data" / "plots" / name, source, reward_names=reward_names)
    shutil.rmtree(repo / "scratch")
    for domain in domains:
        rows = (question_plots.recovery_rows(swe_methods(scale)) if domain == "swe"
                else eval_plots.recovery_rows(recovery_curves(scale)))
        path = eval_plots.plot_data_path(fixtures / f"evaluate-{domain}", domain)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(rows))
        (fixtures / f"evaluate-{domain}" / "data" / "eval" / domain).mkdir(parents=True, exist_ok=True)
    for image in yaml.safe_load((ROOT / "dvc.yaml").read_text())["plots"]:
        parts = image.split("/")  # data/models/<stage>/x.png or data/eval/<domain>/x.png
        target = fixtures / (parts[2] if parts[1] == "models" else f"evaluate-{parts[2]}") / image
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(PNG if scale == 1.0 else PNG + b"\0")  # trailing bytes: another file, same picture


def plots_json(repo: Path, *args: str) -> dict:
    return json.loads(dvc(repo, "plots", *args, "--json").stdout)


def test_dvc_plots_show_and_diff_render_every_declared_plot(tmp_path):
    real = yaml.safe_load((ROOT / "dvc.yaml").read_text())
    domains = yaml.safe_load((ROOT / "params.yaml").read_text())["domains"]
    repo = git_dvc_repo(tmp_path / "toy")
    shutil.copytree(ROOT / ".dvc" / "plots", repo / ".dvc" / "plots")
    (repo / "make.py").write_text(MAKE)
    (repo / "params.yaml").write_text(yaml.safe_dump({"domains": domains}))
    (repo / "dvc.yaml").write_text(yaml.safe_dump(toy_pipeline(real), sort_keys=False))
    write_fixtures(repo, domains, scale=1.0)
    dvc(repo, "repro", "-q")
    commit(repo, "first")

    data_plots = {f"data/plots/sft/{artifacts.LOSS_DATA}",
                  *(f"data/plots/grpo/{n}" for n in (artifacts.LOSS_DATA, artifacts.REWARDS_DATA,
                                                     artifacts.HELDOUT_DATA)),
                  *(eval_plots.plot_data_path(Path(), d).as_posix() for d in domains)}
    shown = plots_json(repo, "show")
    assert not shown.get("errors"), shown.get("errors")
    assert set(shown["data"]) == data_plots | set(real["plots"])
    for plot_id in data_plots:
        (plot,) = shown["data"][plot_id]
        assert plot["type"] == "vega" and plot["content"]["data"]["values"], plot_id
    for image in real["plots"]:
        assert [p["type"] for p in shown["data"][image]] == ["image"]
    series = shown["data"]["data/plots/grpo/heldout.json"][0]["content"]
    assert series["encoding"]["color"]["field"] == "series"  # the project's template, not DVC's default

    write_fixtures(repo, domains, scale=2.0)
    dvc(repo, "repro", "-q")
    diff = plots_json(repo, "diff", "HEAD")
    assert not diff.get("errors"), diff.get("errors")
    for plot_id in data_plots:
        (plot,) = diff["data"][plot_id]
        assert set(plot["revisions"]) == {"HEAD", "workspace"}, plot_id
        values = plot["content"]["data"]["values"]
        assert {v["rev"] for v in values} == {"HEAD", "workspace"}
    for image in real["plots"]:  # read from DVC's cache for HEAD: the files lie in cached output folders
        assert sorted(r for p in diff["data"][image] for r in p["revisions"]) == ["HEAD", "workspace"], image


# ---- dvc exp run -S ------------------------------------------------------------------------------------------------


def test_dvc_exp_run_with_a_param_override_shows_in_exp_show(tmp_path):
    repo = git_dvc_repo(tmp_path / "exp")
    (repo / "params.yaml").write_text(yaml.safe_dump({"toy": {"scale": 1, "name": "a"}}))
    (repo / "toy.py").write_text(
        "import json, yaml\n"
        "p = yaml.safe_load(open('params.yaml'))['toy']\n"
        "json.dump({'value': 2 * p['scale']}, open('metrics.json', 'w'))\n")
    (repo / "dvc.yaml").write_text(yaml.safe_dump({"stages": {"toy": {
        "cmd": f"{sys.executable} toy.py", "deps": ["toy.py"], "params": ["toy.scale"],
        "metrics": [{"metrics.json": {"cache": False}}]}}}))
    dvc(repo, "repro", "-q")
    commit(repo, "baseline")
    dvc(repo, "exp", "run", "-S", "toy.scale=3", "--name", "scale3")
    shown = json.loads(dvc(repo, "exp", "show", "--json").stdout)
    experiments = [e for row in shown for e in row.get("experiments") or []]
    runs = {e.get("name"): rev for e in experiments for rev in e.get("revs") or []}
    assert "scale3" in runs, shown
    data = runs["scale3"]["data"]
    assert data["params"]["params.yaml"]["data"]["toy"] == {"scale": 3, "name": "a"}
    assert data["metrics"]["metrics.json"]["data"] == {"value": 6}
    (baseline,) = [row for row in shown if row["rev"] != "workspace"]  # the commit the experiment is based on
    assert baseline["data"]["params"]["params.yaml"]["data"]["toy"]["scale"] == 1
    assert baseline["data"]["metrics"]["metrics.json"]["data"] == {"value": 2}
    log = subprocess.run(["git", "log", "--format=%s"], cwd=repo, capture_output=True, text=True, check=True).stdout
    assert log.split() == ["baseline"]  # the experiment lives in its own ref, not on the branch

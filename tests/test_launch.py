"""``python -m flows.train --launch``: accelerate config and command for GPU profiles, in-process for ``cpu``."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from flows.train import main
from tasks.errors import InputError
from tasks.training import accelerate_config, get_profile
from tasks.training.launch import LaunchPlan, run
from tests.conftest import ROOT, python, write_params


def _project(tmp_path: Path, **training) -> Path:
    """A folder that ``repo_root`` accepts, with the repo's params and the given ``training`` section."""
    (tmp_path / "dvc.yaml").write_text("stages: {}\n")
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["training"].update(training)
    write_params(tmp_path, params)
    return tmp_path


def _dry_run(capsys, project: Path, stage: str) -> tuple[list[str], dict, str]:
    """``--launch --dry-run`` in-process: (the command's words, the config, the config path in the header)."""
    assert main(["--stage", stage, "--launch", "--dry-run", "--params", "params.yaml"]) == 0
    out = capsys.readouterr().out
    header, *_ = out.splitlines()
    config_text, command = out.split("# command", 1)
    return shlex.split(command.splitlines()[1]), yaml.safe_load(config_text), header.split(": ", 1)[1]


def test_dry_run_prints_the_accelerate_command_and_config(tmp_path, capsys, monkeypatch):
    from accelerate.commands.config.config_args import load_config_from_file

    monkeypatch.chdir(_project(tmp_path, profile="gpu"))
    words, config, path = _dry_run(capsys, tmp_path, "grpo")
    assert Path(words[0]).name == "accelerate" and words[1:4] == ["launch", "--config_file", path]
    assert words[4:] == ["-m", "flows.train", "--stage", "grpo", "--params", "params.yaml"]
    assert path == ".cache/accelerate/grpo.yaml" and not (tmp_path / path).exists()  # a dry run writes nothing
    profile = get_profile("gpu")
    assert config == accelerate_config(profile)
    assert (config["num_processes"], config["mixed_precision"]) == (profile.accelerate.num_processes, "bf16")
    assert config["distributed_type"] == "NO" and config["use_cpu"] is False
    # accelerate's own loader reads what we render
    (tmp_path / "check.yaml").write_text(yaml.safe_dump(config))
    loaded = load_config_from_file(str(tmp_path / "check.yaml"))
    assert (loaded.num_processes, loaded.mixed_precision, loaded.use_cpu) == (1, "bf16", False)


def test_overrides_reach_the_accelerate_config(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(_project(tmp_path, profile="gpu", overrides={"accelerate": {"num_processes": 4}}))
    words, config, _ = _dry_run(capsys, tmp_path, "sft")
    assert words[-4:] == ["--stage", "sft", "--params", "params.yaml"]
    assert config["num_processes"] == 4 and config["distributed_type"] == "MULTI_GPU"
    assert config["mixed_precision"] == "bf16"


def test_cpu_profile_runs_in_process(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(_project(tmp_path, profile="cpu"))
    assert main(["--stage", "sft", "--launch", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "no accelerate settings" in out and "accelerate launch" not in out
    assert shlex.split(out.splitlines()[-1])[1:] == ["-m", "flows.train", "--stage", "sft", "--params", "params.yaml"]


def test_accelerate_settings_follow_the_profile():
    assert get_profile("cpu").accelerate is None
    cpu = get_profile("cpu", {"bf16": False, "accelerate": {"num_processes": 2}})
    assert accelerate_config(cpu)["mixed_precision"] == "no" \
        and accelerate_config(cpu)["distributed_type"] == "MULTI_CPU"
    assert accelerate_config(get_profile("cpu", {"bf16": True}))["mixed_precision"] == "bf16"
    with pytest.raises(InputError, match="contradicts bf16=False"):
        get_profile("cpu", {"bf16": False, "accelerate": {"mixed_precision": "bf16"}})


def test_gpu_profile_without_cuda_is_refused_in_one_line_before_heavy_imports(tmp_path):
    project = _project(tmp_path, profile="gpu")
    probe = ("import sys; from flows.train import main; code = main(sys.argv[1:]); "
             "print(sorted(m for m in ('torch', 'transformers', 'trl', 'accelerate', 'prefect') if m in sys.modules)); "
             "sys.exit(code)")
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "PYTHONPATH": str(ROOT)}
    for extra in (["--launch"], []):
        proc = subprocess.run([sys.executable, "-c", probe, "--stage", "grpo", *extra], cwd=project, env=env,
                              capture_output=True, text=True, timeout=120, check=False)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.count("\n") == 1 and "needs a CUDA device" in proc.stderr and "Qwen/Qwen3-8B" in proc.stderr
        assert proc.stdout.strip() == "[]"  # refused before torch (or anything heavy) was imported
    assert not (project / ".cache" / "accelerate").exists()


def test_run_writes_the_config_and_returns_the_exit_code(tmp_path):
    plan = LaunchPlan(stage="sft", profile="gpu", command=[sys.executable, "-c", "import sys; sys.exit(7)"],
                      cwd=tmp_path, config_path=Path(".cache/accelerate/sft.yaml"), config_text="num_processes: 1\n")
    assert run(plan) == 7
    assert (tmp_path / ".cache" / "accelerate" / "sft.yaml").read_text() == "num_processes: 1\n"
    killed = plan.model_copy(update={"command": [sys.executable, "-c",
                                                 f"import os; os.kill(os.getpid(), {int(signal.SIGTERM)})"]})
    assert run(killed) == 128 + signal.SIGTERM


def test_accelerate_cli_accepts_the_rendered_config(tmp_path):
    """``accelerate launch --config_file`` with the gpu profile's config runs a script with bf16 set up."""
    from tasks.training import accelerate_config_text
    from tasks.training.launch import accelerate_executable

    (tmp_path / "gpu.yaml").write_text(accelerate_config_text(get_profile("gpu")))
    (tmp_path / "show.py").write_text(
        "import os, sys\nprint(os.environ.get('ACCELERATE_MIXED_PRECISION'), os.environ.get('ACCELERATE_USE_CPU'), "
        "sys.argv[1:])\n")
    proc = subprocess.run([accelerate_executable(), "launch", "--config_file", "gpu.yaml", "show.py", "--stage", "x"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["bf16", "False", "['--stage',", "'x']"]


# Hand-written rows (no project data) for an SFT run through accelerate on the cpu profile.
ROWS = [
    ("The upload button does nothing when the file name has an accent.", "1. Which browser do you use?"),
    ("Saving a draft loses the images pasted into it.", "1. What does the editor log when saving?"),
]


@pytest.mark.slow
def test_sft_through_accelerate_launch_on_cpu(project, prefect_api):
    """The whole ``--launch`` path on CPU: the cpu profile given accelerate settings trains one SFT step."""
    from tasks.sftdata import SftRow
    from tasks.store import jsonl_text
    from tasks.training import prompt_messages

    params = yaml.safe_load((project / "params.yaml").read_text())
    params["training"]["overrides"]["accelerate"] = {"num_processes": 1}
    write_params(project, params)
    rows = []
    for n, (issue, questions) in enumerate(ROWS):
        prompt, completion = prompt_messages(issue), [{"role": "assistant", "content": questions}]
        rows.append(SftRow(case_id=f"c{n}", instance_id=f"i{n}", split="train", prompt=prompt, completion=completion,
                           messages=prompt + completion, incomplete_issue=issue, full_issue=issue,
                           hidden_categories=["error_info"], n_questions=1, target_categories=["error_info"]))
    (project / "data" / "sft").mkdir(parents=True)
    (project / "data" / "sft" / "train.jsonl").write_text(jsonl_text(rows))
    proc = python(project, "-m", "flows.train", "--stage", "sft", "--launch")
    assert "sft: 1 steps" in proc.stdout, proc.stdout + proc.stderr
    assert (project / ".cache" / "accelerate" / "sft.yaml").is_file()
    assert (project / "data" / "models" / "sft" / "adapter" / "adapter_model.safetensors").is_file()
    assert (project / "data" / "metrics" / "stages" / "sft.json").is_file()
    assert isinstance(json.loads((project / "data" / "plots" / "sft" / "loss.json").read_text()), list)  # dvc plots


def test_the_training_stages_run_with_launch():
    """``dvc repro`` trains through ``--launch``: accelerate for the gpu profile, in-process for cpu (below)."""
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    for stage in ("sft", "grpo"):
        assert stages[stage]["cmd"] == f"python -m flows.train --stage {stage} --launch"


def _record_main(monkeypatch, argv: list[str]) -> tuple[int, list[tuple]]:
    """``main(argv)`` with the training, the input checks and ``accelerate launch`` replaced by recorders."""
    import flows._env
    import flows.train
    import tasks.training.launch

    calls: list[tuple] = []

    def flow(stage: str, params: str) -> dict:
        calls.append(("train in-process", stage, params))
        return {"stage": stage, "steps": 1, "seconds": 0.0, "out": f"data/models/{stage}"}

    monkeypatch.setattr(flows._env, "configure", lambda root=None: None)
    monkeypatch.setattr(flows.train, "prepare", lambda stage, params: calls.append(("prepare", stage, params)))
    monkeypatch.setattr(flows.train, "build_flow", lambda: flow)
    monkeypatch.setattr(tasks.training.launch, "run", lambda plan: calls.append(("accelerate", plan.command)) or 3)
    return main(argv), calls


@pytest.mark.parametrize("stage", ["sft", "grpo"])
def test_cpu_profile_with_launch_trains_in_process_exactly_as_without(tmp_path, monkeypatch, capsys, stage):
    monkeypatch.chdir(_project(tmp_path, profile="cpu"))
    launched = _record_main(monkeypatch, ["--stage", stage, "--launch"])
    plain = _record_main(monkeypatch, ["--stage", stage])
    assert launched == plain == (0, [("prepare", stage, "params.yaml"), ("train in-process", stage, "params.yaml")])
    assert capsys.readouterr().out.count(f"{stage}: 1 steps -> data/models/{stage}/") == 2
    assert not (tmp_path / ".cache" / "accelerate").exists()


def test_gpu_profile_with_launch_hands_the_stage_to_accelerate(tmp_path, monkeypatch):
    """The inputs are checked first, then ``accelerate launch`` runs the stage; its exit code is the command's and
    nothing trains in this process."""
    monkeypatch.chdir(_project(tmp_path, profile="gpu"))
    code, calls = _record_main(monkeypatch, ["--stage", "grpo", "--launch"])
    assert code == 3 and [c[0] for c in calls] == ["prepare", "accelerate"]
    command = calls[1][1]
    assert Path(command[0]).name == "accelerate" and command[1:4] == ["launch", "--config_file",
                                                                       ".cache/accelerate/grpo.yaml"]
    assert command[4:] == ["-m", "flows.train", "--stage", "grpo", "--params", "params.yaml"]

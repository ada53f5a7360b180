"""A DVC stage must list the project code it runs, or a change to that code would not rerun the stage.

Deps name single modules rather than whole folders where a folder holds code a stage never runs (an annotator change
does not touch the GRPO reward, and rerunning GRPO costs minutes), and the packages every stage imports load their
parts lazily (``tasks.rewards``, ``tasks.training``, the GX suites), so a stage loads what it runs. The pipeline test
runs every stage with an import trace (``tests/import_trace/sitecustomize.py``: each Python process writes the files
it loaded) and checks, with the helpers here, that every project file each stage loaded is covered by its deps.
"""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
TRACE_ENV = "CLARIFYFLOW_IMPORT_TRACE"
INFRASTRUCTURE = ("flows/_env.py", "tasks/prefect_server.py", "tasks/stage_times.py", "tasks/progress.py")
"""Modules that set up and find Prefect for every flow, stamp a stage's start and end, and print progress lines; no
stage output depends on them."""


def install_trace(repo: Path, traces: Path) -> None:
    """Make every Python process started in ``repo`` (it is on their PYTHONPATH) write its loaded files."""
    shutil.copy(ROOT / "tests" / "import_trace" / "sitecustomize.py", repo / "sitecustomize.py")
    traces.mkdir(parents=True, exist_ok=True)


def stage_deps(repo: Path) -> dict[str, tuple[str, list[str]]]:
    """Stage name -> (command, deps), matrices resolved, as DVC reads ``dvc.yaml``."""
    from dvc.repo import Repo

    with Repo(str(repo)) as dvc_repo:
        return {s.name: (s.cmd, [d.def_path for d in s.deps]) for s in dvc_repo.index.stages}


def _docstring_only(path: Path) -> bool:
    body = ast.parse(path.read_text()).body
    return all(isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) for node in body)


def project_files(repo: Path, loaded: list[str]) -> set[str]:
    """The loaded files of tasks/ and flows/, less package markers that hold only a docstring and the Prefect
    infrastructure modules."""
    root = repo.resolve()
    out = set()
    for file in loaded:
        path = Path(file).resolve()
        if not path.is_relative_to(root) or path.parts[len(root.parts)] not in ("tasks", "flows"):
            continue
        rel = path.relative_to(root).as_posix()
        if rel in INFRASTRUCTURE or (path.name == "__init__.py" and _docstring_only(path)):
            continue
        out.add(rel)
    return out


def uncovered(files: set[str], deps: list[str]) -> list[str]:
    return sorted(f for f in files if not any(f == d or f.startswith(d.rstrip("/") + "/") for d in deps))


def traced_stage_files(repo: Path, traces: Path) -> dict[str, set[str]]:
    """Stage name -> project files its processes loaded, matched by the stage's command line."""
    stages = stage_deps(repo)
    by_args = {tuple(cmd.split()[2:]): name for name, (cmd, _) in stages.items()}  # after "python -m"
    out: dict[str, set[str]] = {}
    for trace in traces.glob("*.json"):
        data = json.loads(trace.read_text())
        argv = data["argv"]
        if not argv or not argv[0].endswith(".py"):
            continue
        script = Path(argv[0])
        name = by_args.get((f"{script.parent.name}.{script.stem}", *argv[1:]))
        if name:
            out.setdefault(name, set()).update(project_files(repo, data["files"]))
    return out


def test_uncovered_reads_folders_and_files():
    deps = ["tasks/rewards", "tasks/roles/base.py"]
    assert uncovered({"tasks/rewards/staged.py", "tasks/roles/base.py", "tasks/roles/annotator/rules.py",
                      "tasks/rewardsx.py"}, deps) == ["tasks/rewardsx.py", "tasks/roles/annotator/rules.py"]


def test_project_files_drop_markers_and_infrastructure(tmp_path):
    for rel, text in {"tasks/__init__.py": '"""Docs only."""\n', "tasks/llm/__init__.py": "import os\n",
                      "tasks/prefect_server.py": "", "tasks/store.py": "", "other/x.py": ""}.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    loaded = [str(tmp_path / rel) for rel in ("tasks/__init__.py", "tasks/llm/__init__.py",
                                              "tasks/prefect_server.py", "tasks/store.py", "other/x.py")]
    assert project_files(tmp_path, loaded) == {"tasks/llm/__init__.py", "tasks/store.py"}


def test_the_trace_hook_writes_the_loaded_files(tmp_path):
    import subprocess
    import sys

    repo = tmp_path / "repo"
    (repo / "tasks").mkdir(parents=True)
    (repo / "tasks" / "thing.py").write_text("X = 1\n")
    install_trace(repo, tmp_path / "traces")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(repo), TRACE_ENV: str(tmp_path / "traces")}
    subprocess.run([sys.executable, "-c", "import tasks.thing"], cwd=repo, env=env, check=True, timeout=60)
    (trace,) = (tmp_path / "traces").glob("*.json")
    assert project_files(repo, json.loads(trace.read_text())["files"]) == {"tasks/thing.py"}


def test_grpo_does_not_depend_on_the_annotator():
    deps = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]["grpo"]["deps"]
    assert "tasks/roles" not in deps and not [d for d in deps if d.startswith("tasks/roles/annotator")]
    assert "tasks/roles/swe_judges.py" in deps and "tasks/llm" in deps  # what the reward does run


def test_the_shared_modules_do_not_load_the_code_behind_them():
    """``tasks.params`` (every stage) loads only the reward's config, ``tasks.training.prompts`` (sft_data) no
    trainer, and a construction gate no evaluation code; otherwise every stage would depend on all of it."""
    import subprocess
    import sys

    code = (
        "import sys, tasks.params, tasks.training.prompts\n"
        "from tasks.validation.suites import SUITES\n"
        "import great_expectations as gx\n"
        "SUITES['swe_cases'](gx.expectations, {})\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith(('tasks.', 'flows.')))))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                          timeout=120)
    loaded = set(proc.stdout.split())
    assert "tasks.rewards.config" in loaded and "tasks.training.prompts" in loaded
    assert not {"tasks.rewards.staged", "tasks.rewards.judges", "tasks.training.trainers", "tasks.training.policy",
                "tasks.evaluation.metrics", "tasks.infovalue.runs", "tasks.clarifiers.base"} & loaded, sorted(loaded)


def test_the_lazy_packages_still_export_every_name():
    import tasks.rewards
    import tasks.training

    for package in (tasks.rewards, tasks.training):
        assert sorted(package.__all__) == sorted(package._HOME)
        for name in package.__all__:
            assert getattr(package, name) is not None, (package.__name__, name)
        with pytest.raises(AttributeError):
            package.no_such_name  # noqa: B018


def test_a_stage_that_reads_a_role_tracks_the_preset_that_rewrites_it():
    """``roles.preset`` (``served``, the group presets, ``reasoning``) changes what a role runs on, so a stage that
    tracks any ``roles.<name>`` must track it too, or ``dvc exp run -S roles.preset=served`` keeps its old output."""
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    untracked = []
    for name, stage in stages.items():
        params = [p for p in stage.get("params", []) if isinstance(p, str)]
        reads_a_role = any(p.startswith("roles.") and p != "roles.max_failure_rate" for p in params)
        if reads_a_role and "roles" not in params and "roles.preset" not in params:
            untracked.append(name)
    assert not untracked, f"dvc.yaml: stages reading roles without roles.preset: {untracked}"

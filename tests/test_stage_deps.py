"""A DVC stage must list the project code it runs, or a change to that code would not rerun the stage.

The training stages' deps name single modules rather than whole folders where a folder holds code they never run
(an annotator change does not touch the GRPO reward, and rerunning GRPO costs minutes). These tests run each
stage's code path in a fresh interpreter and check that every project file it loads is covered by a dep.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]

_LOADS = r"""
import json, sys
import flows.train
import tasks.params
import tasks.sftdata
import tasks.training.trainers
"""
_REWARD = r"""
from tasks.rewards import StagedReward, RewardConfig
from tasks.rewards.weights import CLARITI_WEIGHTS

full = "render_table crashes on an empty header.\nZeroDivisionError: division by zero\nquill 2.4.1, Python 3.11"
sample = {"completion": "1. What is the full error message?\n2. Which quill version do you use?",
          "incomplete_issue": full.splitlines()[0], "full_issue": full}
StagedReward(RewardConfig(), CLARITI_WEIGHTS).score([sample])
"""
_PRINT = r"""
print(json.dumps(sorted({m.__file__ for m in list(sys.modules.values()) if getattr(m, "__file__", None)})))
"""
_CODE_PATHS = {"sft": _LOADS + _PRINT, "grpo": _LOADS + _REWARD + _PRINT}


def _stage_deps(name: str) -> list[str]:
    stage = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"][name]
    return [d if isinstance(d, str) else next(iter(d)) for d in stage["deps"]]


def _docstring_only(path: Path) -> bool:
    body = ast.parse(path.read_text()).body
    return all(isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) for node in body)


def _project_files(loaded: list[str]) -> set[str]:
    """The loaded files of tasks/ and flows/, less package markers that hold only a docstring."""
    out = set()
    for file in loaded:
        path = Path(file).resolve()
        if path.is_relative_to(ROOT) and path.parts[len(ROOT.parts)] in ("tasks", "flows") and not (
                path.name == "__init__.py" and _docstring_only(path)):
            out.add(path.relative_to(ROOT).as_posix())
    return out


def _uncovered(files: set[str], deps: list[str]) -> list[str]:
    return sorted(f for f in files if not any(f == d or f.startswith(d.rstrip("/") + "/") for d in deps))


def test_uncovered_reads_folders_and_files():
    deps = ["tasks/rewards", "tasks/roles/base.py"]
    assert _uncovered({"tasks/rewards/staged.py", "tasks/roles/base.py", "tasks/roles/annotator.py",
                       "tasks/rewardsx.py"}, deps) == ["tasks/rewardsx.py", "tasks/roles/annotator.py"]


@pytest.mark.parametrize("stage", sorted(_CODE_PATHS))
def test_training_deps_cover_the_code_the_stage_loads(stage):
    proc = subprocess.run([sys.executable, "-c", _CODE_PATHS[stage]], check=False, cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    files = _project_files(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert "tasks/training/trainers.py" in files and "tasks/params.py" in files  # the path really ran
    deps = _stage_deps(stage)
    assert _uncovered(files, deps) == []
    if stage == "grpo":
        assert "tasks/roles/swe_judges.py" in files  # the reward ran its judges
        assert "tasks/roles" not in deps and "tasks/roles/annotator.py" not in deps  # an annotator change keeps GRPO

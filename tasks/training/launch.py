"""Launching a training stage through ``accelerate launch`` for profiles that carry accelerate settings.

``python -m flows.train --stage grpo --launch`` writes the profile's accelerate config to
``.cache/accelerate/<stage>.yaml`` and runs ``accelerate launch --config_file <it> -m flows.train --stage <stage>
--params <params>`` from the repository root; the launched processes train as a plain ``flows.train`` run.
Nothing here imports torch or the training libraries.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from .profiles import TrainProfile, accelerate_config_text

CONFIG_DIR = Path(".cache") / "accelerate"


class LaunchPlan(BaseModel):
    model_config = ConfigDict(extra="forbid")

    stage: str
    profile: str
    command: list[str]
    cwd: Path
    config_path: Path | None
    """Relative to ``cwd``; None when the profile has no accelerate settings (the stage runs in-process)."""
    config_text: str = ""

    @property
    def launched(self) -> bool:
        return self.config_path is not None

    def describe(self) -> str:
        """What ``--dry-run`` prints: the config (YAML under a comment header) and then the exact command."""
        if not self.launched:
            return (f"# profile {self.profile!r} has no accelerate settings: the stage runs in-process (run from "
                    f"{self.cwd})\n{shlex.join(self.command)}\n")
        return (f"# accelerate config: {self.config_path}\n{self.config_text}"
                f"# command (run from {self.cwd})\n{shlex.join(self.command)}\n")


def accelerate_executable() -> str:
    """The ``accelerate`` script of this interpreter's environment, else the one on PATH."""
    beside = Path(sys.executable).parent / "accelerate"
    if beside.is_file():
        return str(beside)
    return shutil.which("accelerate") or "accelerate"


def plan(stage: str, params: str, profile: TrainProfile, root: Path) -> LaunchPlan:
    train_args = ["-m", "flows.train", "--stage", stage, "--params", params]
    if profile.accelerate is None:
        return LaunchPlan(stage=stage, profile=profile.name, command=[sys.executable, *train_args], cwd=root,
                          config_path=None)
    config_path = CONFIG_DIR / f"{stage}.yaml"
    command = [accelerate_executable(), "launch", "--config_file", str(config_path), *train_args]
    return LaunchPlan(stage=stage, profile=profile.name, command=command, cwd=root, config_path=config_path,
                      config_text=accelerate_config_text(profile))


def run(launch: LaunchPlan) -> int:
    """Write the config atomically and run the command; its exit code is returned as is."""
    import subprocess

    from tasks.store import atomic_write_text

    if launch.config_path is not None:
        atomic_write_text(launch.cwd / launch.config_path, launch.config_text)
    code = subprocess.run(launch.command, cwd=launch.cwd, check=False).returncode
    return 128 - code if code < 0 else code  # killed by signal N: 128 + N, as a shell reports it


def is_main_process() -> bool:
    """False in the non-zero ranks of a multi-process launch, which train but write no outputs."""
    return int(os.environ.get("RANK", "0") or 0) == 0

"""`make setup` says which torch it installs: TORCH=cpu / cuda / auto, checked with dry runs (`make -n`) and with a
stand-in python that records the pip commands (nothing is installed)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="no make")
VERSION = "2.13.0"

FAKE_PYTHON = """#!/bin/sh
# a stand-in for .venv/bin/python: records each call; pip fails where the scenario says
echo "$*" >> "$FAKE_LOG"
case "$*" in
  *"-m pip install"*"+cpu"*"--extra-index-url"*) [ -n "$FAKE_CPU_INDEX_DOWN" ] && exit 1 ;;
  *"-m pip install"*"+cpu"*) [ -n "$FAKE_NO_LOCAL_CPU" ] && exit 1 ;;
esac
exit 0
"""


def make(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={**os.environ, **(env or {})})


def dry_run(tmp_path, torch: str) -> subprocess.CompletedProcess:
    """``make -n setup`` (every step, as if pyproject.toml had changed) into a throwaway venv path."""
    return make("-n", "-B", "setup", f"TORCH={torch}", f"VENV={tmp_path / 'venv'}")


def pip_torch_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if re.search(r"pip install .*torch==", line)]


def test_dry_runs_print_different_torch_installs_for_cpu_and_cuda(tmp_path):
    cpu, cuda = dry_run(tmp_path, "cpu"), dry_run(tmp_path, "cuda")
    assert cpu.returncode == 0 and cuda.returncode == 0, cpu.stderr + cuda.stderr
    assert "torch: installing the cpu build" in cpu.stdout and "torch: installing the cuda build" in cuda.stdout
    (cpu_line,), (cuda_line,) = pip_torch_lines(cpu.stdout), pip_torch_lines(cuda.stdout)
    assert cpu_line != cuda_line
    # cpu: the +cpu wheel from the configured indexes, else PyTorch's CPU index, else a plain torch==X
    assert f'"torch=={VERSION}+cpu"' in cpu_line
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in cpu_line
    assert f'install -q "torch=={VERSION}"' in cpu_line and "cu130" not in cpu_line
    # cuda: the CUDA build from PyTorch's CUDA index, no fallback to another build
    assert f'"torch=={VERSION}+cu130" --extra-index-url https://download.pytorch.org/whl/cu130' in cuda_line
    assert "+cpu" not in cuda_line and "exit 1" in cuda_line
    # both report what was installed; only cuda fails on a build that is not CUDA
    assert '"cpu" == "cuda"' in cpu.stdout and '"cuda" == "cuda"' in cuda.stdout


def test_auto_follows_nvidia_smi_and_other_values_are_refused(tmp_path):
    has_gpu = shutil.which("nvidia-smi") is not None and subprocess.run(
        ["nvidia-smi"], capture_output=True, timeout=60).returncode == 0
    auto = dry_run(tmp_path, "auto")
    expected = "cuda" if has_gpu else "cpu"
    assert f"torch: installing the {expected} build of torch {VERSION} (TORCH=auto)" in auto.stdout, auto.stdout
    assert pip_torch_lines(auto.stdout) == pip_torch_lines(dry_run(tmp_path, expected).stdout)
    bad = dry_run(tmp_path, "gpu")
    assert bad.returncode != 0 and "TORCH must be auto, cpu or cuda, not 'gpu'" in bad.stderr


@pytest.mark.parametrize(("scenario", "expected"), [
    ({}, [f"torch=={VERSION}+cpu"]),  # pip's configured indexes have the +cpu wheel (this machine: /opt/wheels)
    ({"FAKE_NO_LOCAL_CPU": "1"}, [f"torch=={VERSION}+cpu", f"torch=={VERSION}+cpu --extra-index-url"]),
    ({"FAKE_NO_LOCAL_CPU": "1", "FAKE_CPU_INDEX_DOWN": "1"},
     [f"torch=={VERSION}+cpu", f"torch=={VERSION}+cpu --extra-index-url", f"torch=={VERSION}"]),
])
def test_cpu_setup_falls_back_to_plain_torch_when_the_cpu_index_is_unreachable(tmp_path, scenario, expected):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    fake = venv / "bin" / "python"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    log = tmp_path / "calls.log"
    proc = make("-B", "setup", "TORCH=cpu", f"VENV={venv}", env={"FAKE_LOG": str(log), **scenario})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    calls = log.read_text().splitlines()
    torch_calls = [re.sub(r"^-m pip install -q ", "", c) for c in calls if "torch==" in c and "pip install" in c]
    assert [c.split(" https://")[0] for c in torch_calls] == expected
    said = [line for line in proc.stdout.splitlines() if line.startswith("torch: no torch==")]  # not make's echo
    assert bool(said) == ("FAKE_CPU_INDEX_DOWN" in scenario), said
    assert any(c.startswith("-c import sys, torch") for c in calls)  # the line saying which build was installed
    assert (venv / ".installed").is_file()


def test_torch_is_checked_on_every_make_call_not_only_when_the_setup_runs(tmp_path):
    """``make run TORCH=gpu`` once .venv exists used to run with whatever was installed, without a word."""
    for target in ("run", "test", "help"):
        bad = make("-n", target, "TORCH=gpu", f"VENV={tmp_path / 'venv'}")
        assert bad.returncode != 0 and "TORCH must be auto, cpu or cuda, not 'gpu'" in bad.stderr, target
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / ".installed").write_text("")
    fake = venv / "bin" / "python"
    fake.write_text("#!/bin/sh\necho cpu\n")  # answers the installed-build probe: a CPU build
    fake.chmod(0o755)
    other = make("-n", "help", "TORCH=cuda", f"VENV={venv}")
    assert other.returncode == 0
    assert f"TORCH=cuda, but {venv} has the cpu build of torch: to switch, rm {venv}/.installed" in other.stderr
    same = make("-n", "help", "TORCH=cpu", f"VENV={venv}")
    assert "has the cpu build" not in same.stderr


def test_dvc_reads_yaml_with_the_c_parser():
    """dvc parses params.yaml once per stage and dvc.yaml / dvc.lock on every call; with ruamel's pure-Python parser a
    no-op `dvc repro` took 2.4 s on the default DAG, with the C parser (ruamel.yaml.clib) 0.6 s."""
    from dvc.utils.serialize._yaml import parse_yaml
    from ruamel.yaml import YAML

    assert YAML(typ="safe").Parser.__name__ == "CParser"
    assert parse_yaml("a: [1, 2]\n", "params.yaml") == {"a": [1, 2]}

"""What a no-op `dvc repro` costs, and how much of it is this project's DAG rather than DVC itself.

    .venv/bin/python benchmarks/noop_repro.py [--project DIR] [--repeats 5]

DIR is a checkout whose pipeline has run (`make run`), so that `dvc status` finds nothing to do; the default is this
checkout. Four timings, each the median of --repeats runs of `dvc repro` that reproduce nothing:

- ``project``: DIR as it is (per-file code deps, per-stage params);
- ``floor``: a throwaway project with one stage and one file dep, DVC's own start-up and index;
- ``coarse_deps``: a copy of DIR whose stages depend on the folders ``tasks`` and ``flows`` instead of their
  per-file lists (the lock rewritten by ``dvc commit -f``, nothing rerun): what the per-file lists cost;
- ``coarse_deps_no_params``: the same copy without any params dependency: what the params checks cost.

The last two are not configurations to ship: with them every code edit reruns every stage, and a params change
reruns nothing. Writes ``benchmarks/results/noop_repro/noop.json``. Run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def dvc_binary(project: Path) -> str:
    local = project / ".venv" / "bin" / "dvc"
    return str(local) if local.exists() else str(ROOT / ".venv" / "bin" / "dvc")


def noop_seconds(dvc: str, project: Path, repeats: int) -> dict:
    runs = []
    for _ in range(repeats):
        started = time.monotonic()
        proc = subprocess.run([dvc, "repro"], cwd=project, capture_output=True, text=True)
        runs.append(time.monotonic() - started)
        if proc.returncode != 0 or "up to date" not in proc.stdout:
            last = (proc.stdout + proc.stderr).strip().splitlines()[-1:]
            print(f"{project}: dvc repro is not a no-op there (exit {proc.returncode}; run `make run` first): {last}",
                  file=sys.stderr)
            raise SystemExit(2)
    return {"median_s": round(statistics.median(runs), 3), "runs_s": [round(r, 3) for r in runs]}


def floor_project(dvc: str, into: Path) -> Path:
    into.mkdir()
    run = lambda *cmd: subprocess.run(cmd, cwd=into, check=True, capture_output=True)  # noqa: E731
    run("git", "init", "-q")
    run(dvc, "init", "-q")
    run(dvc, "config", "core.analytics", "false")
    (into / "a.txt").write_text("a\n")
    run(dvc, "stage", "add", "-q", "-n", "copy", "-d", "a.txt", "-o", "b.txt", "cp a.txt b.txt")
    run(dvc, "repro", "-q")
    return into


def project_copy(project: Path, into: Path) -> Path:
    ignore = shutil.ignore_patterns(".venv", ".cache", "__pycache__", "tmp")
    shutil.copytree(project, into, ignore=ignore, symlinks=True)
    return into


def rewrite_stages(copy: Path, dvc: str, *, drop_params: bool) -> None:
    spec = yaml.safe_load((copy / "dvc.yaml").read_text())
    for stage in spec["stages"].values():
        stage["deps"] = ["tasks", "flows"] + [d for d in stage.get("deps", []) if d.startswith("data/")]
        if drop_params:
            stage.pop("params", None)
    (copy / "dvc.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    (copy / ".dvcignore").write_text("__pycache__\n")
    subprocess.run([dvc, "commit", "-f", "-q"], cwd=copy, check=True, capture_output=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--project", default=str(ROOT), help="a checkout whose pipeline has run (default: this one)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "noop_repro" / "noop.json"))
    args = parser.parse_args(argv)
    project = Path(args.project).resolve()
    dvc = dvc_binary(project)
    result: dict = {"cores": os.cpu_count(), "load_average_at_start": round(os.getloadavg()[0], 2),
                    "dvc_lock_bytes": (project / "dvc.lock").stat().st_size,
                    "params_yaml_bytes": (project / "params.yaml").stat().st_size}
    result["project"] = noop_seconds(dvc, project, args.repeats)
    with tempfile.TemporaryDirectory(prefix="clarifyflow-noop-") as tmp:
        result["floor"] = noop_seconds(dvc, floor_project(dvc, Path(tmp) / "floor"), args.repeats)
        copy = project_copy(project, Path(tmp) / "copy")
        (copy / ".venv").symlink_to(project / ".venv") if (project / ".venv").exists() else None
        rewrite_stages(copy, dvc, drop_params=False)
        result["coarse_deps"] = noop_seconds(dvc, copy, args.repeats) | {
            "dvc_lock_bytes": (copy / "dvc.lock").stat().st_size}
        rewrite_stages(copy, dvc, drop_params=True)
        result["coarse_deps_no_params"] = noop_seconds(dvc, copy, args.repeats) | {
            "dvc_lock_bytes": (copy / "dvc.lock").stat().st_size}
    result["load_average_at_end"] = round(os.getloadavg()[0], 2)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    for key in ("project", "floor", "coarse_deps", "coarse_deps_no_params"):
        print(f"{key:>22}: {result[key]['median_s']:.3f} s (median of {args.repeats})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""What a new user pays on this machine: a fresh clone's `make setup`, with --test `make test` (cold caches, as CI),
`make run` (with its stage table), `git status` after it and a second `dvc repro` (a no-op); optionally beside one
CPU-bound competitor.

    .venv/bin/python benchmarks/fresh_clone.py [--repo .] [--test] [--competitor] [--keep DIR]

Writes ``benchmarks/results/fresh_clone/<alone|competitor>.json`` (the seconds of each step, the stage table of
``make run``, whether the tree stayed clean, the slowest tests when --test). Run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed(cmd: str, cwd: Path, log: Path, env: dict | None = None) -> tuple[float, int, str]:
    started = time.monotonic()
    proc = subprocess.run(["bash", "-c", cmd], cwd=cwd, capture_output=True, text=True, env=env)
    seconds = time.monotonic() - started
    log.write_text(proc.stdout + "\n--- stderr ---\n" + proc.stderr)
    return round(seconds, 1), proc.returncode, proc.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", default=str(ROOT), help="the repository to clone (default: this checkout)")
    parser.add_argument("--test", action="store_true", help="also time make test")
    parser.add_argument("--competitor", action="store_true",
                        help="run everything beside one CPU-bound process (python -c 'while True: pass')")
    parser.add_argument("--into", default=None,
                        help="the clone's folder (default: fresh-<scenario> beside this checkout, so ../shared "
                             "resolves as it does here and in CI); removed first if it exists")
    args = parser.parse_args(argv)
    label = "competitor" if args.competitor else "alone"
    clone = Path(args.into) if args.into else ROOT.parent / f"fresh-{label}"
    if clone.exists():
        shutil.rmtree(clone)
    subprocess.run(["git", "clone", "-q", args.repo, str(clone)], check=True)
    logs = Path(tempfile.mkdtemp(prefix=f"clarifyflow-fresh-{label}-logs-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "VIRTUAL_ENV"))}
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if args.competitor else None
    result: dict = {"scenario": label, "cores": os.cpu_count(), "load_average_at_start": os.getloadavg()[0]}
    try:
        result["setup_s"], code, _ = timed("make setup", clone, logs / "setup.log", env)
        result["setup_again_s"], _, _ = timed("make setup", clone, logs / "setup_again.log", env)
        if code == 0 and args.test:
            # before make run, with an empty cache folder of its own (no model conversion, no embeddings): as CI
            # meets the suite, and leaving make run the cold caches a new user's first run has
            cache = Path(tempfile.mkdtemp(prefix="clarifyflow-fresh-test-cache-"))
            test_env = {**env, "CLARIFYFLOW_CACHE_DIR": str(cache)}
            result["test_s"], result["test_exit"], out = timed("make test", clone, logs / "test.log", test_env)
            result["test_summary"] = [line for line in out.splitlines() if re.search(r"\d+ passed", line)][-1:]
            slow = out[out.find("slowest 25 durations"):].splitlines()[1:26]
            result["slowest_tests"] = [line for line in slow if re.match(r"\s*[\d.]+s ", line)]
            shutil.rmtree(cache, ignore_errors=True)
        if code == 0:
            result["run_s"], result["run_exit"], out = timed("make run", clone, logs / "run.log", env)
            table = out[out.find("the stages that ran:"):].splitlines()[1:]
            result["stages"] = {m.group(1): float(m.group(2)) for line in table
                                if (m := re.match(r"(\S+@?\S*)\s+\d\d:\d\d:\d\d\s+([\d.]+)", line))}
            pipeline = re.search(r"pipeline finished in (\d+) s", out)
            result["pipeline_s"] = int(pipeline.group(1)) if pipeline else None
            status = subprocess.run(["git", "status", "--short"], cwd=clone, capture_output=True, text=True)
            result["git_status_after_run"] = status.stdout.splitlines()
            result["noop_repro_s"], _, noop = timed(".venv/bin/dvc repro", clone, logs / "noop.log", env)
            result["noop_repro_ran_a_stage"] = "Running stage" in noop
            subprocess.run(["make", "stop"], cwd=clone, capture_output=True)
    finally:
        if spinner is not None:
            spinner.kill()
            spinner.wait()
    out_file = ROOT / "benchmarks" / "results" / "fresh_clone" / f"{label}.json"
    out_file.parent.mkdir(parents=True, exist_ok=True)
    out_file.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    print(f"logs: {logs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

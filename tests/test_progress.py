"""Progress lines a person can follow in a plain log, and the stage start/end stamps with their time table."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

from tasks import stage_times
from tasks.progress import Progress, duration


def test_progress_lines_carry_count_rate_time_left_and_the_methods(monkeypatch):
    clock = iter([0.0, 5.0, 20.0, 40.0])
    monkeypatch.setattr("tasks.progress.time.monotonic", lambda: next(clock))
    out = io.StringIO()
    bar = Progress("evaluate@optimization", "episodes", every_s=10, stream=out)
    bar(1, 4, "open::freeqa", 1, 2)
    bar(2, 4, "open::freeqa", 2, 2)   # 5 s after the first line: throttled
    bar(3, 4, "mc::mc", 1, 2)
    bar(4, 4, "mc::mc", 2, 2)
    lines = out.getvalue().splitlines()
    assert len(lines) == 3 and all("\r" not in line for line in lines)
    assert "evaluate@optimization: 1/4 episodes (25%)" in lines[0] and "open::freeqa 1/2" in lines[0]
    # 2 episodes in 20 s since the first: 0.1/s, 1 left -> 10 s
    assert "3/4 episodes (75%), 0.1/s, 10 s left" in lines[1]
    assert "1 of 2 finished" in lines[1] and "mc::mc 1/2" in lines[1]
    assert "4/4 episodes (100%), done in 40 s" in lines[2]


def test_duration_reads_as_minutes_and_hours():
    assert (duration(42), duration(150), duration(7260)) == ("42 s", "2 min 30 s", "2 h 1 min")


def test_a_stage_stamps_its_start_and_end_and_records_its_time(tmp_path: Path):
    code = ("import sys; from pathlib import Path; from tasks import stage_times; "
            f"stage_times.begin(Path({str(tmp_path)!r}), 'evaluate@demo')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parents[1])
    started, finished = proc.stdout.splitlines()
    assert proc.stderr == ""
    assert started.endswith("] evaluate@demo: started") and started.startswith("[")
    assert " evaluate@demo: ended after " in finished
    record = json.loads((tmp_path / stage_times.FOLDER / "evaluate@demo.json").read_text())
    assert record["stage"] == "evaluate@demo" and record["ended"] >= record["started"] and record["seconds"] >= 0
    table = stage_times.table(stage_times.read(tmp_path, since=record["started"] - 1))
    assert "evaluate@demo" in table and "all stages" in table
    assert stage_times.read(tmp_path, since=record["started"] + 3600) == []


def test_configure_stamps_a_stage_only_under_dvc(tmp_path: Path):
    root = Path(__file__).resolve().parents[1]
    code = f"from pathlib import Path; from flows import _env; _env.configure(Path({str(tmp_path)!r}))"
    env = {k: v for k, v in os.environ.items() if k != "DVC_STAGE"}
    plain = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root, env=env)
    assert plain.stdout == "" and not (tmp_path / stage_times.FOLDER).exists()
    staged = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root,
                            env={**env, "DVC_STAGE": "construct@demo"})
    assert "construct@demo: started" in staged.stdout and "construct@demo: ended after" in staged.stdout
    assert (tmp_path / stage_times.FOLDER / "construct@demo.json").is_file()

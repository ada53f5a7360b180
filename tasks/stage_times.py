"""Each stage's start and end, stamped in the log and recorded, and the table ``make run`` prints at its end.

Under ``dvc repro`` every flow's set-up (``flows._env.configure``) calls :func:`begin` with the stage DVC names in
``$DVC_STAGE``: that prints ``[12:01:02] evaluate@swe: started`` on stdout and, when the process exits,
``[12:03:10] evaluate@swe: ended after 128.0 s`` and the record ``data/metrics/timings/stages/<stage>.json`` (start,
end and seconds from the process's own start, imports included). Stdout, not stderr: a refused input keeps its one
``error:`` line on stderr.
The folder is git-ignored and declared by no stage: wall-clock figures never reach tracked metrics.

``python -m tasks.stage_times [--since EPOCH] [--out FILE]`` prints the stages recorded since ``EPOCH`` (the start
of a ``make run``) in the order they ran, with their share of the total, and writes them as JSON to ``FILE``.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import sys
import time
from datetime import datetime
from pathlib import Path

FOLDER = Path("data") / "metrics" / "timings" / "stages"


def stamp(at: float | None = None) -> str:
    return datetime.fromtimestamp(time.time() if at is None else at).strftime("%H:%M:%S")


def process_start() -> float:
    """When this process started (Linux: ``/proc/self/stat``); now where that cannot be read."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return time.time() - uptime + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return time.time()


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def begin(root: Path, stage: str) -> None:
    """Stamp the stage's start now and its end (with the record) when the process exits."""
    started = process_start()
    _say(f"[{stamp()}] {stage}: started")

    def finish() -> None:
        ended = time.time()
        seconds = round(ended - started, 1)
        _say(f"[{stamp(ended)}] {stage}: ended after {seconds} s")
        folder = root / FOLDER
        try:
            folder.mkdir(parents=True, exist_ok=True)
            record = {"stage": stage, "started": round(started, 3), "ended": round(ended, 3), "seconds": seconds}
            tmp = folder / f".{stage}.json.tmp"
            tmp.write_text(json.dumps(record) + "\n")
            tmp.replace(folder / f"{stage}.json")
        except OSError:
            pass  # a timing record is never worth failing a stage for

    atexit.register(finish)


def read(root: Path, since: float | None = None) -> list[dict]:
    rows = []
    for path in sorted((root / FOLDER).glob("*.json")):
        try:
            row = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if since is None or row.get("started", 0) >= since:
            rows.append(row)
    return sorted(rows, key=lambda r: r["started"])


def table(rows: list[dict]) -> str:
    total = sum(r["seconds"] for r in rows) or 1.0
    width = max([len("stage"), *(len(r["stage"]) for r in rows)])
    lines = [f"{'stage':<{width}}  {'start':>8}  {'seconds':>8}  {'share':>6}"]
    lines += [f"{r['stage']:<{width}}  {stamp(r['started']):>8}  {r['seconds']:>8.1f}  {r['seconds'] / total:>6.1%}"
              for r in rows]
    lines.append(f"{'all stages':<{width}}  {'':>8}  {sum(r['seconds'] for r in rows):>8.1f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tasks.stage_times", description=__doc__.splitlines()[0])
    parser.add_argument("--since", type=float, default=None, help="only stages started at or after this epoch time")
    parser.add_argument("--out", default=None, help="also write the rows as JSON to this file")
    args = parser.parse_args(argv)
    rows = read(Path.cwd(), args.since)
    if not rows:
        print("no stage ran (every stage was up to date)")
        return 0
    print(table(rows))
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"stages": rows, "seconds": round(sum(r["seconds"] for r in rows), 1)},
                                  indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

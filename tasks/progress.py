"""Progress a person can follow in a terminal and in a plain log alike: one line every few seconds.

``Progress("evaluate@optimization", "episodes")`` is called as ``progress(done, total, group=..., group_done=...,
group_total=...)`` by the loops that play units; it writes, at most every ``every_s`` seconds and always for the
first and the last unit::

    [12:01:02] evaluate@optimization: 357/1071 episodes (33%), 4.2/s, 2 min 50 s left | 1 of 3 finished, mc::mc 51/102

on stderr (past Prefect's ``log_prints``; see ``tasks.training.progress``). No carriage returns or bars, so a log file
reads the same as the terminal. Groups (methods) that are finished are counted, the ones in progress are named.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from tasks.stage_times import stamp


def duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


class Progress:
    def __init__(self, what: str, unit: str, *, every_s: float = 10.0, stream: TextIO | None = None):
        self.what, self.unit, self.every_s = what, unit, every_s
        self.stream = stream
        self.started: float | None = None
        self.first_done = 0
        self.last_line: float | None = None
        self.groups: dict[str, tuple[int, int]] = {}
        self.lines: list[str] = []

    def __call__(self, done: int, total: int, group: str | None = None, group_done: int | None = None,
                 group_total: int | None = None) -> None:
        now = time.monotonic()
        if self.started is None:
            self.started, self.first_done = now, done  # units found in a store are not counted in the rate
        if group is not None:
            seen = self.groups.get(group, (0, group_total or 0))
            self.groups[group] = (group_done if group_done is not None else seen[0] + 1, group_total or seen[1])
        if done < total and self.last_line is not None and now - self.last_line < self.every_s:
            return
        self.last_line = now
        self.write(self.line(done, total, now))

    def line(self, done: int, total: int, now: float) -> str:
        elapsed = now - (now if self.started is None else self.started)
        rate = (done - self.first_done) / elapsed if elapsed > 0 else 0.0
        text = f"[{stamp()}] {self.what}: {done}/{total} {self.unit} ({done / max(total, 1):.0%})"
        if done >= total:
            text += f", done in {duration(elapsed)}"
        elif rate > 0:
            text += f", {rate:.3g}/s, {duration((total - done) / rate)} left"
        if self.groups:
            finished = [g for g, (d, t) in self.groups.items() if t and d >= t]
            running = [f"{g} {d}/{t}" for g, (d, t) in self.groups.items() if not t or d < t]
            parts = ([f"{len(finished)} of {len(self.groups)} finished"] if finished else []) + running[-3:]
            text += " | " + ", ".join(parts)
        return text

    def write(self, text: str) -> None:
        self.lines.append(text)
        stream = self.stream or sys.stderr
        stream.write(text + "\n")
        stream.flush()

"""``episodes.jsonl``: every episode of an evaluation in one file, the packed form of the per-episode run folders.

One :class:`EpisodeRecord` per unit, in unit order: the episode, the judge's verdict, the judge's rendered input and
the two derived records the run folder holds (``statistics.json``, ``run_health.json``). It carries everything a run
folder (``runs.write_run_dir``) would, so the folders are written only on request
(``params.yaml: evaluate.<domain>.run_folders``) and the Inspect log (``inspect_log``) is built from the same
records.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from tasks.episodes.records import Episode, JudgeResult

if TYPE_CHECKING:
    from tasks.domain_context import DomainContext
    from tasks.evaluation.runs import UnitResult
    from tasks.records import Case

FILE = "episodes.jsonl"


class EpisodeRecord(BaseModel):
    """One line of ``episodes.jsonl``."""

    model_config = ConfigDict(extra="forbid")

    unit: str
    """The run folder's path relative to the evaluation folder, ``runs/<protocol>/<method>/run_<KK>/<case_id>``."""
    key: str
    """The unit's store key (``runs.unit_key``)."""
    episode: Episode
    judge: JudgeResult
    judge_input: str
    """The judge's user message (``judge_prompt_user_message.md`` of the run folder)."""
    statistics: dict[str, Any]
    run_health: dict[str, Any]


def episode_records(results: Sequence[UnitResult], cases: Sequence[Case], *,
                    domain: DomainContext) -> list[EpisodeRecord]:
    """One record per result, the judge's input rendered in ``domain``."""
    from tasks.evaluation.judge import judge_input_markdown
    from tasks.evaluation.runs import Unit, run_health, statistics

    by_id = {c.case_id: c for c in cases}
    records = []
    for r in results:
        e = r.episode
        unit = Unit(case_id=e.case_id, method=e.method, protocol=e.protocol, repeat=e.repeat, persona=e.persona)
        records.append(EpisodeRecord(unit=unit.rel_dir, key=r.key, episode=e, judge=r.judge,
                                     judge_input=judge_input_markdown(by_id[e.case_id], e, r.judge, domain=domain),
                                     statistics=statistics(e, r.judge), run_health=run_health(e, r.judge)))
    return records


def write_episodes(path: Path, records: Sequence[EpisodeRecord]) -> None:
    """Atomically write ``records`` as JSONL, without wall-clock fields (``latency_s``): the file is a DVC output and
    an identical rerun must write identical bytes (the figures are in ``data/metrics/timings/``)."""
    from tasks.stage_metrics import without_wall_clock
    from tasks.store import atomic_write_text

    atomic_write_text(path, "".join(json.dumps(without_wall_clock(r.model_dump(mode="json")), ensure_ascii=False)
                                    + "\n" for r in records))


def read_episodes(path: Path) -> list[EpisodeRecord]:
    """The records of an ``episodes.jsonl``; ``InputError`` naming the file and line when one does not parse."""
    from tasks.store import read_jsonl

    return read_jsonl(Path(path), EpisodeRecord)


def write_run_folders(out: Path, records: Sequence[EpisodeRecord]) -> None:
    """The per-episode run folders (``runs/...``), from the records (``run_folders: true``)."""
    from tasks.evaluation.runs import write_run_dir

    for r in records:
        write_run_dir(out / r.unit, r.episode, r.judge, r.judge_input)

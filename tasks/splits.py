"""The held-out discipline: one seeded train/heldout split per domain by source id, and the checks that keep it.

``construct@<domain>`` assigns every case the split of its source id (issue, problem or request id), so all variants
of one source share a split (``Case.metadata.split``). ``sft_data`` keeps the split of each case; SFT and GRPO train
on ``train`` rows only and record the source ids they saw next to the adapter (:data:`TRAINING_SOURCES`).
Evaluation plays trained policies on held-out cases only and refuses, with one line, any case whose source id is
among the adapter's recorded training ids (:func:`check_no_overlap`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tasks.errors import InputError
from tasks.records import Case

Split = Literal["train", "heldout"]
SPLITS: tuple[Split, ...] = ("train", "heldout")
EvalSplit = Literal["heldout", "train", "all"]
TRAINING_SOURCES = "training_sources.json"
"""Written next to an adapter folder (``data/models/<stage>/training_sources.json``), atomically with it."""


def split_of(source_id: str, heldout_fraction: float, seed: int) -> Split:
    """``heldout`` for about ``heldout_fraction`` of source ids: a stable hash of ``seed`` and the id alone."""
    digest = hashlib.sha256(f"{seed}:{source_id}".encode()).digest()
    return "heldout" if int.from_bytes(digest[:8], "big") / 2**64 < heldout_fraction else "train"


def assign_splits(cases: Sequence[Case], heldout_fraction: float, seed: int) -> list[Case]:
    """Each case with the split of its source id."""
    return [c.model_copy(update={"metadata": c.metadata.model_copy(
        update={"split": split_of(c.metadata.source_id, heldout_fraction, seed)})}) for c in cases]


def split_counts(cases: Iterable[Case]) -> dict[str, dict[str, int]]:
    """Cases and distinct source ids per split (``none``: cases without a split, only when there are some)."""
    cases_of: dict[str, int] = {}
    sources_of: dict[str, set[str]] = {}
    for case in cases:
        name = case.metadata.split or "none"
        cases_of[name] = cases_of.get(name, 0) + 1
        sources_of.setdefault(name, set()).add(case.metadata.source_id)
    names = [*SPLITS, *(["none"] if "none" in cases_of else [])]
    return {n: {"cases": cases_of.get(n, 0), "source_ids": len(sources_of.get(n, ()))} for n in names}


def construct_split(cases: Sequence[Case], heldout_fraction: float, seed: int) -> tuple[list[Case], dict]:
    """The cases with their splits and the stage metrics' ``split`` entry."""
    cases = assign_splits(cases, heldout_fraction, seed)
    return cases, {"heldout_fraction": heldout_fraction, "split_seed": seed, **split_counts(cases)}


def select(cases: Sequence[Case], split: EvalSplit) -> list[Case]:
    """The cases of ``split`` (``all``: every case). Cases without a split (OR-Clarify TOML, workbook rewrites)
    were never trained on by construction, so they count as held out."""
    if split == "all":
        return list(cases)
    return [c for c in cases if (c.metadata.split or "heldout") == split]


def split_frame(cases: Sequence[Case]):
    """One row per case for the ``case_splits`` gate: its split, and whether its source id has only that split."""
    import pandas as pd

    splits_of: dict[str, set] = {}
    for case in cases:
        splits_of.setdefault(case.metadata.source_id, set()).add(case.metadata.split)
    return pd.DataFrame([{"case_id": c.case_id, "source_id": c.metadata.source_id, "split": c.metadata.split,
                          "one_split_per_source": len(splits_of[c.metadata.source_id]) == 1} for c in cases],
                        columns=["case_id", "source_id", "split", "one_split_per_source"])


# ---- what an adapter was trained on --------------------------------------------------------------------------------


class TrainingSources(BaseModel):
    """The source ids (and cases) one adapter was trained on; GRPO's include the SFT adapter's it continues."""

    model_config = ConfigDict(extra="forbid")

    stage: Literal["sft", "grpo"]
    split: Split = "train"
    source_ids: list[str] = Field(min_length=1)
    case_ids: list[str] = []
    """The cases of this stage's own rows (GRPO: its prompts); the SFT stage's are in its own record."""


def training_record(stage: Literal["sft", "grpo"], rows: Iterable, inherited: Iterable[str] = ()) -> dict:
    """The record for ``rows`` (``SftRow``-like: ``case_id``, ``instance_id``, ``split``); refuses a held-out row."""
    rows = list(rows)
    bad = [r.case_id for r in rows if r.split != "train"]
    if bad:
        raise InputError("data/sft/train.jsonl", f"{len(bad)} rows are not in the train split (first: {bad[0]}); "
                         "rerun sft_data", field="split")
    ids = sorted({r.instance_id for r in rows} | set(inherited))
    return TrainingSources(stage=stage, source_ids=ids, case_ids=sorted(r.case_id for r in rows)).model_dump()


def record_path(adapter_dir: Path | str) -> Path:
    return Path(adapter_dir).parent / TRAINING_SOURCES


def read_training_sources(adapter_dir: Path | str) -> TrainingSources:
    """The record next to ``adapter_dir``; an adapter without one cannot be checked, so it is refused."""
    from tasks.store import read_text_utf8

    path = record_path(adapter_dir)
    if not path.is_file():
        raise InputError(path, "file not found: the adapter records no training source ids (retrain it with the "
                         "sft / grpo stage)")
    try:
        return TrainingSources.model_validate_json(read_text_utf8(path))
    except ValueError as err:
        raise InputError(path, f"not a training-sources record: {str(err).splitlines()[0]}") from None


def check_no_overlap(method: str, adapter_dir: Path | str, source_ids: Iterable[str]) -> dict[str, int]:
    """Raise when any evaluated source id of trained policy ``method`` is among its training ids; else the counts
    for the report (``trained_on_source_ids``, ``overlap`` = 0)."""
    record = read_training_sources(adapter_dir)
    trained = set(record.source_ids)
    overlap = sorted(trained & set(source_ids))
    if overlap:
        raise InputError(record_path(adapter_dir), f"method {method!r} would be evaluated on {len(overlap)} source "
                         f"ids it was trained on (first: {overlap[0]}); evaluate held-out cases only "
                         "(cases built before the split existed: rerun construct)", field="source_ids")
    return {"trained_on_source_ids": len(trained), "overlap": 0}

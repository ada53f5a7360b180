"""The cases an evaluation reads, for both kinds: a cases JSONL checked record by record, then the ``case_ids`` and
``limit`` of its settings. Bad input is an ``InputError``: one line naming the file, the record and the field.

The episode kind (``tasks.evaluation.runs.load_cases``) also reads a folder of OR-Clarify TOML files; the question
kind (``tasks.evaluation.question_inputs``) also reads the CLARITI workbook's rewrite-3 cases and selects a split
first.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tasks.errors import InputError
from tasks.records import Case


def read_cases(path: Path, *, missing: str, domain: str | None = None) -> list[Case]:
    """The Case records of a JSONL file (``missing``: the message when there is none), in file order. Every record's
    unit ids are checked (``tasks.records.check_case_units``), its domain when ``domain`` is given, and case ids
    must be unique."""
    from tasks.records import check_case_units
    from tasks.store import read_jsonl

    if not path.is_file():
        raise InputError(path, missing)
    cases = read_jsonl(path, Case)
    seen: set[str] = set()
    for i, case in enumerate(cases, start=1):
        record = f"{i} ({case.case_id})"
        check_case_units(case, path=path, record=record)
        if domain is not None and case.metadata.domain != domain:
            raise InputError(path, f"not a {domain} case (domain {case.metadata.domain!r})", record=record,
                             field="metadata.domain")
        if case.case_id in seen:
            raise InputError(path, f"duplicate case id {case.case_id!r}", record=record, field="metadata.case_id")
        seen.add(case.case_id)
    return cases


def select_cases(cases: Sequence[Case], *, case_ids: Sequence[str] | None, limit: int | None, where: object,
                 section: str, among: str = "") -> list[Case]:
    """``cases`` restricted to ``case_ids`` (each must be one of them), then the first ``limit``; at least one must
    remain. Errors name ``where`` and the field ``<section>.case_ids`` / ``<section>.cases``; ``among`` says which
    cases were looked in (e.g. `` in split 'heldout'``)."""
    if case_ids is not None:
        wanted = set(case_ids)
        known = {c.case_id for c in cases}
        unknown = [c for c in case_ids if c not in known]
        if unknown:
            raise InputError(where, f"unknown case ids{among}: {', '.join(unknown[:5])}", field=f"{section}.case_ids")
        cases = [c for c in cases if c.case_id in wanted]
    if limit is not None:
        cases = cases[:limit]
    if not cases:
        raise InputError(where, f"no cases to evaluate{among}", field=f"{section}.cases")
    return list(cases)

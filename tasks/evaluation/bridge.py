"""Downstream bridge: clarified issues out to a real coding agent as SWE-bench-style JSONL, harness results back in.

Export (:func:`export_clarified`): per method, one row per evaluated case::

    {"instance_id": <SWE-bench instance id>, "problem_statement": <clarified issue>, "repo": ..., "version": ...,
     "base_commit": ..., "environment_setup_commit": ... (each when known), "hints_text": <the issue's hints>,
     "clarifyflow_case_id": ..., "clarifyflow_method": ...}

The clarified issue is the incomplete issue followed by a delimited section with every question and the simulated
user's reply (unanswered ones included, as "I don't have that information."); :func:`split_clarified` reverses it.
``hints_text`` is the SWE-bench field as given; CLARITI ran its agent with hints off, so pass it on only on purpose.

A harness needs unique instance ids per run, but ``construct@swe`` writes several variants per issue. Variants are
therefore spread over *rounds*: round r holds each issue's r-th variant (case-id order). A method whose cases
have one variant per issue is written to ``<method>.jsonl``; otherwise to ``<method>__r<k>.jsonl``, one file per
round. ``manifest.json`` lists every file with its case ids.

Import (:func:`read_harness`): a SWE-bench harness report for one exported file (the run report
``{"resolved_ids": [...], "submitted_ids": [...]}``, a ``{"resolved": [...]}`` summary, a plain list of resolved
ids, or per-instance reports ``{id: {"resolved": bool}}``: the shapes ``tasks.infovalue.runs`` reads). Instance
ids map back to case ids through that export file; with ``submitted_ids`` (or per-instance reports) only the
submitted rows count, errors and empty patches as unresolved, as in the harness's own resolve rate.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from tasks.errors import InputError
from tasks.records import SAFE_ID, Case
from tasks.store import atomic_write_json, atomic_write_text

BEGIN = "<!-- clarifyflow:clarifications -->"
END = "<!-- /clarifyflow:clarifications -->"
HEADING = "### Clarifications from the issue reporter"
_QA = re.compile(r"^\*\*(Q|A)(\d+)\.\*\* ?", re.MULTILINE)


class ExportRow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    instance_id: str = Field(pattern=SAFE_ID)
    problem_statement: str
    repo: str = ""
    version: str = ""
    base_commit: str | None = None
    environment_setup_commit: str | None = None
    hints_text: str = ""
    clarifyflow_case_id: str = Field(pattern=SAFE_ID)
    clarifyflow_method: str = Field(pattern=SAFE_ID)
    clarifyflow_warning: str | None = None
    """``information insufficient`` when the questioner abstained (``questions.abstain``); absent otherwise."""


def clarified_issue(brief: str, qa: Sequence[tuple[str, str]]) -> str:
    """The incomplete issue plus the Q/A section (the issue alone when nothing was asked)."""
    if not qa:
        return brief
    lines = [brief.rstrip(), "", BEGIN, HEADING, ""]
    for n, (question, answer) in enumerate(qa, start=1):
        lines += [f"**Q{n}.** {question}", "", f"**A{n}.** {answer}", ""]
    lines.append(END)
    return "\n".join(lines) + "\n"


def split_clarified(text: str) -> tuple[str, list[tuple[str, str]]]:
    """Inverse of :func:`clarified_issue`: (incomplete issue, [(question, answer), ...])."""
    start = text.rfind(BEGIN)
    if start < 0:
        return text, []
    brief = text[:start].rstrip("\n")
    body = text[start + len(BEGIN): text.rfind(END)].strip("\n")
    body = body.removeprefix(HEADING)
    marks = list(_QA.finditer(body))
    pieces = {(m.group(1), int(m.group(2))): body[m.end(): marks[i + 1].start() if i + 1 < len(marks) else len(body)]
              .strip("\n") for i, m in enumerate(marks)}
    n = max((num for _, num in pieces), default=0)
    return brief, [(pieces.get(("Q", i), ""), pieces.get(("A", i), "")) for i in range(1, n + 1)]


def rounds(case_ids: Sequence[str], source_of: Mapping[str, str]) -> list[list[str]]:
    """Case ids split so no round holds two variants of one issue (round r = each issue's r-th variant)."""
    by_issue: dict[str, list[str]] = defaultdict(list)
    for cid in sorted(case_ids):
        by_issue[source_of[cid]].append(cid)
    depth = max((len(v) for v in by_issue.values()), default=0)
    return [sorted(v[r] for v in by_issue.values() if len(v) > r) for r in range(depth)]


def has_repositories(cases: Iterable[Case], meta: Mapping[str, Mapping[str, str]] | None = None) -> bool:
    """Whether the cases are issues of code repositories, so a SWE-bench-style export applies: some case names its
    repository (``extra.repo``, or the workbook's ``repo`` for its source id). A question-list domain of other
    reports (a scaffolded one) has none: it gets no ``bridge/`` folder and no bridge gate."""
    meta = meta or {}
    return any(case.extra.get("repo") or meta.get(case.metadata.source_id, {}).get("repo") for case in cases)


def export_clarified(units: Sequence[Any], cases: Mapping[str, Case], folder: Path,
                     meta: Mapping[str, Mapping[str, str]] | None = None) -> dict[str, Any]:
    """Write one JSONL per method (per round when issues have several variants) and ``manifest.json``.

    ``units``: evaluated ``QuestionUnit`` records (skipped ones are ignored); ``meta``: instance id -> SWE-bench fields
    (``base_commit``, ``repo``, ``version``) where known (e.g. from the CLARITI workbook). Returns the manifest.
    """
    meta = meta or {}
    by_method: dict[str, dict[str, Any]] = defaultdict(dict)
    for unit in units:
        if unit.skipped is None:
            by_method[unit.method][unit.case_id] = unit
    manifest: dict[str, Any] = {"format": "SWE-bench-style JSONL (see tasks/evaluation/bridge.py)",
                                "methods": {}}
    for method in sorted(by_method):
        chosen = by_method[method]
        parts = rounds(list(chosen), {cid: cases[cid].metadata.source_id for cid in chosen})
        files = {}
        for r, ids in enumerate(parts, start=1):
            name = f"{method}.jsonl" if len(parts) == 1 else f"{method}__r{r}.jsonl"
            rows = [export_row(cases[cid], chosen[cid], meta) for cid in ids]
            atomic_write_text(Path(folder) / name, "".join(r.model_dump_json(exclude_none=True) + "\n" for r in rows))
            files[name] = ids
        manifest["methods"][method] = files
    atomic_write_json(Path(folder) / "manifest.json", manifest)
    return manifest


def export_row(case: Case, unit: Any, meta: Mapping[str, Mapping[str, str]]) -> ExportRow:
    iid = case.metadata.source_id
    known = meta.get(iid, {})
    qa = [(q.question, q.answer) for q in unit.questions]
    return ExportRow(
        instance_id=iid,
        problem_statement=clarified_issue(case.brief.content, qa),
        repo=known.get("repo") or str(case.extra.get("repo", "") or ""),
        version=known.get("version") or str(case.extra.get("version", "") or ""),
        base_commit=known.get("base_commit") or case.extra.get("base_commit") or None,
        environment_setup_commit=(known.get("environment_setup_commit")
                                  or case.extra.get("environment_setup_commit") or None),
        hints_text=case.hints,
        clarifyflow_case_id=case.case_id,
        clarifyflow_method=unit.method,
        clarifyflow_warning="information insufficient" if getattr(unit, "information_insufficient", False) else None,
    )


def read_export(path: Path) -> list[ExportRow]:
    from tasks.store import read_jsonl

    if not Path(path).is_file():
        raise InputError(path, "file not found (the export written by evaluate@swe under bridge/)")
    return read_jsonl(Path(path), ExportRow)


class Measured(BaseModel):
    """Measured resolution of one exported file's cases."""

    model_config = ConfigDict(extra="forbid")

    method: str
    resolved: dict[str, bool]
    """Case id -> resolved, for the submitted rows."""
    source: str
    not_submitted: int = 0
    unmatched_ids: int = 0


def read_harness(export_jsonl: Path, report_json: Path) -> Measured:
    """Case-level results of a harness run over one exported file (see the module docstring)."""
    from tasks.infovalue.runs import _report_ids  # the accepted report shapes, read one way everywhere

    rows = read_export(export_jsonl)
    if not rows:
        raise InputError(export_jsonl, "no rows")
    methods = {r.clarifyflow_method for r in rows}
    if len(methods) != 1:
        raise InputError(export_jsonl, "rows of several methods in one export file", field="clarifyflow_method")
    by_instance: dict[str, str] = {}
    for i, row in enumerate(rows, start=1):
        if row.instance_id in by_instance:
            raise InputError(export_jsonl, f"instance {row.instance_id!r} twice; a harness run needs unique ids "
                                           "(export one round per file)", record=i, field="instance_id")
        by_instance[row.instance_id] = row.clarifyflow_case_id
    if not Path(report_json).is_file():
        raise InputError(report_json, "file not found (the SWE-bench harness report for this export)")
    resolved_ids, submitted = _report_ids(Path(report_json))
    mentioned = set(resolved_ids) | set(submitted or [])
    if mentioned and not mentioned & set(by_instance):
        raise InputError(report_json, f"none of its {len(mentioned)} ids is an instance of {Path(export_jsonl).name}",
                         field="resolved_ids")
    evaluated = set(by_instance) if submitted is None else set(submitted) & set(by_instance)
    winners = set(resolved_ids)
    return Measured(
        method=methods.pop(),
        resolved={by_instance[i]: i in winners for i in sorted(evaluated)},
        source=f"SWE-bench harness report {Path(report_json).name} for {Path(export_jsonl).name}",
        not_submitted=len(set(by_instance) - evaluated),
        unmatched_ids=len(mentioned - set(by_instance)),
    )


def merge_measured(parts: Sequence[Measured]) -> dict[str, Measured]:
    """Per method, the union of its files' results (rounds of one method merge)."""
    out: dict[str, Measured] = {}
    for part in parts:
        if part.method in out:
            seen = out[part.method]
            out[part.method] = Measured(method=part.method, resolved={**seen.resolved, **part.resolved},
                                        source=f"{seen.source}; {part.source}",
                                        not_submitted=seen.not_submitted + part.not_submitted,
                                        unmatched_ids=seen.unmatched_ids + part.unmatched_ids)
        else:
            out[part.method] = part
    return out


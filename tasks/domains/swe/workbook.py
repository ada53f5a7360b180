"""The CLARITI workbook as evaluation input: its rewrite-3 variants as cases, its published question lists, and the
SWE-bench fields (``base_commit``, ``version``) the downstream bridge exports.

Rewrite-3 cases (``case_source: workbook_rewrite3``): the brief is the workbook's own ``rewrite_3`` (the text the
published question sets were written for), the hidden categories are the named ones in ``hidden_categories_3``,
the full issue is ``original issue`` with ``hints_text``. Units are the ``category_mapping`` spans; a hidden
category without a span gets one unit from its evidence in ``hidden_info_3``. The unnamed seventh probe ("where in
the codebase…") is ignored, as in ``construct@swe``; rows whose rewrite 3 hides no named category are skipped and
counted. Nothing from the workbook is written into the repository: cases are built in memory.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from tasks.categories import Category
from tasks.errors import InputError

BENCHMARK = "clariti-rewrite-3"
PUBLISHED_COLUMNS = {
    "clariti_grpo": "clarification_questions_grpo_3",
    "gpt5_nano": "clarification_questions_gpt5_nano_3",
    "gpt5": "clarification_questions_gpt5_3",
}
"""The three published question sets for rewrite 3 (CLARITI's GRPO model, GPT-5-nano, GPT-5)."""


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def read_workbook(path: Path, columns: list[str] | tuple[str, ...]) -> Any:
    """The workbook's ``columns`` as strings (missing cells ""); InputError naming a missing column."""
    import pandas as pd

    path = Path(path)
    if not path.is_file():
        raise InputError(path, "file not found (set evaluate.swe.published.workbook)")
    try:
        frame = pd.read_excel(path, dtype=str, usecols=lambda name: name in set(columns))
    except Exception as err:  # noqa: BLE001 (openpyxl raises many types for a damaged workbook)
        raise InputError(path, f"cannot read workbook: {err}") from None
    for name in columns:
        if name not in frame.columns:
            raise InputError(path, "missing column", field=name)
    return frame.fillna("")


def published_lists(path: Path, column: str) -> dict[str, str]:
    """Instance id -> its published numbered question list (issues without one are absent)."""
    frame = read_workbook(path, ["instance_id", column])
    return {iid.strip(): text for iid, text in zip(frame["instance_id"], frame[column])
            if iid.strip() and text.strip()}


def instance_meta(path: Path) -> dict[str, dict[str, str]]:
    """Instance id -> the SWE-bench fields the bridge exports (``repo``, ``base_commit``, ``version``)."""
    frame = read_workbook(path, ["instance_id", "repo", "base_commit", "version"])
    return {row["instance_id"].strip(): {k: row[k].strip() for k in ("repo", "base_commit", "version")}
            for row in frame.to_dict("records") if row["instance_id"].strip()}


def _hidden_evidence(info: str) -> dict[Category, str]:
    """``hidden_info_3``: ``"<Category>: <probe> | Examples: <a>; <b> || <next>"`` -> category -> evidence text."""
    out: dict[Category, str] = {}
    for part in info.split("||"):
        name, _, rest = part.partition(":")
        try:
            category = Category.parse(name.strip())
        except ValueError:
            continue  # the unnamed probe, or noise
        _, _, examples = rest.partition("Examples:")
        if examples.strip():
            out[category] = examples.strip()
    return out


def rewrite3_cases(path: Path) -> tuple[list[Any], dict[str, int]]:
    """Cases for the workbook's rewrite 3 (one per row), plus counts of the rows left out and why."""
    from tasks.domains.swe.domain import parse_category_mapping
    from tasks.records import Brief, Case, CaseMetadata, HiddenSlot, Unit
    from tasks.text import normalise_ws

    frame = read_workbook(path, ["instance_id", "repo", "version", "original issue", "hints_text", "category_mapping",
                                 "rewrite_3", "hidden_categories_3", "hidden_info_3"])
    cases, notes = [], Counter()
    for idx, row in enumerate(frame.to_dict("records"), start=2):
        iid = row["instance_id"].strip()
        brief, full = _text(row["rewrite_3"]), _text(row["original issue"])
        if not (iid and brief.strip() and full.strip()):
            notes["rows_without_rewrite_3"] += 1
            continue
        hidden: list[Category] = []
        for name in row["hidden_categories_3"].split(","):
            try:
                category = Category.parse(name.strip()) if name.strip() else None
            except ValueError:
                category = None
            if category is not None and category not in hidden:
                hidden.append(category)
        if not hidden:
            notes["rows_without_named_hidden_category"] += 1
            continue
        spans, present = ([], [])
        if row["category_mapping"].strip():
            spans, present = parse_category_mapping(row["category_mapping"], path=Path(path), record=f"row {idx}")
        evidence = _hidden_evidence(row["hidden_info_3"])
        pairs = list(dict.fromkeys((s.category, s.text) for s in spans))
        for category in hidden:
            if not any(c == category for c, _ in pairs) and category in evidence:
                pairs.append((category, evidence[category]))
        if not all(any(c == cat for c, _ in pairs) for cat in hidden):
            notes["rows_with_hidden_category_without_evidence"] += 1
            continue
        units = [Unit(id=f"U{i}", kind=c.key, content=t, category=c) for i, (c, t) in enumerate(pairs, start=1)]
        slots = [HiddenSlot(slot_id=f"H{n}", name=c.key, category=c, unit_ids=[u.id for u in units if u.category == c],
                            simulator_answer="\n\n".join(u.content for u in units if u.category == c))
                 for n, c in enumerate(hidden, start=1)]
        present_all = [c for c in Category if c in set(present) | set(hidden)]
        norm_brief = normalise_ws(brief)
        cases.append(Case(
            metadata=CaseMetadata(benchmark=BENCHMARK, case_id=f"{iid}__rewrite3", domain="swe", source_id=iid),
            units=units,
            hidden_slots=slots,
            brief=Brief(content=brief, visible_unit_ids=[u.id for u in units if u.category not in hidden
                                                         and normalise_ws(u.content) in norm_brief]),
            full_text=full,
            hints=_text(row["hints_text"]),
            present_categories=present_all,
            hidden_categories=hidden,
            visible_categories=[c for c in present_all if c not in hidden],
            extra={"repo": row["repo"], "version": row["version"], "source": "clariti workbook rewrite 3"},
        ))
    return sorted(cases, key=lambda c: c.case_id), dict(notes)

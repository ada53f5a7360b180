"""Reader of the published OR-Clarify case format (TOML, schema 0.3) into the unified ``Case``.

The mapping is lossless: every TOML field lands in a ``Case`` field or in ``Case.extra`` (the ``[simulator]`` and
``[solver_verification]`` tables, plus any unknown top-level table), so a writer can rebuild the file.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tasks.errors import InputError
from tasks.records import Brief, Case, CaseMetadata, HiddenSlot, Unit

BENCHMARK = "OR-Clarify"
DOMAIN = "or"
KNOWN_TABLES = ("metadata", "problem_units", "hidden_slots", "initial_brief")
SEVERITIES = ("P0", "P1", "P2")


def _require(table: dict, key: str, kind: type | tuple[type, ...], path: Path, where: str) -> Any:
    """``table[key]`` checked for presence and type; ``where`` is the dotted field path used in the error."""
    if key not in table:
        raise InputError(path, "missing field", field=where)
    value = table[key]
    if not isinstance(value, kind):
        expected = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise InputError(path, f"expected {expected}, got {type(value).__name__}", field=where)
    return value


def _text(table: dict, key: str, path: Path, where: str, *, allow_empty: bool = False) -> str:
    value = _require(table, key, str, path, where)
    if not allow_empty and not value.strip():
        raise InputError(path, "is empty", field=where)
    return value


def _str_list(table: dict, key: str, path: Path, where: str) -> list[str]:
    values = _require(table, key, list, path, where)
    for i, value in enumerate(values):
        if not isinstance(value, str):
            raise InputError(path, f"expected a string, got {type(value).__name__}", field=f"{where}.{i}")
    return values


def _tables(data: dict, key: str, path: Path) -> list[dict]:
    rows = _require(data, key, list, path, key)
    if not rows:
        raise InputError(path, "needs at least one entry", field=key)
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise InputError(path, "expected a table", field=f"{key}.{i}")
    return rows


def _units(data: dict, path: Path) -> list[Unit]:
    units: list[Unit] = []
    seen: set[str] = set()
    for i, row in enumerate(_tables(data, "problem_units", path)):
        where = f"problem_units.{i}"
        unit_id = _text(row, "id", path, f"{where}.id")
        if unit_id in seen:
            raise InputError(path, f"duplicate unit id {unit_id!r}", field=f"{where}.id")
        seen.add(unit_id)
        units.append(Unit(id=unit_id, kind=_text(row, "kind", path, f"{where}.kind"),
                          content=_text(row, "content", path, f"{where}.content")))
    return units


def _slots(data: dict, path: Path, unit_ids: set[str]) -> list[HiddenSlot]:
    slots: list[HiddenSlot] = []
    seen: set[str] = set()
    for i, row in enumerate(_tables(data, "hidden_slots", path)):
        where = f"hidden_slots.{i}"
        slot_id = _text(row, "slot_id", path, f"{where}.slot_id")
        if slot_id in seen:
            raise InputError(path, f"duplicate slot id {slot_id!r}", field=f"{where}.slot_id")
        seen.add(slot_id)
        severity = _text(row, "severity", path, f"{where}.severity")
        if severity not in SEVERITIES:
            raise InputError(path, f"unknown severity {severity!r} (expected P0, P1 or P2)", field=f"{where}.severity")
        unit_id = _text(row, "problem_unit_id", path, f"{where}.problem_unit_id")
        if unit_id not in unit_ids:
            raise InputError(path, f"unit {unit_id!r} is not among problem_units", field=f"{where}.problem_unit_id")
        slots.append(HiddenSlot(
            slot_id=slot_id,
            name=_text(row, "name", path, f"{where}.name"),
            severity=severity,
            severity_reason=_text(row, "severity_reason", path, f"{where}.severity_reason", allow_empty=True),
            unit_ids=[unit_id],
            simulator_answer=_text(row, "simulator_answer", path, f"{where}.simulator_answer"),
            reference_questions=_str_list(row, "reference_acceptable_questions", path,
                                          f"{where}.reference_acceptable_questions"),
            semantic_hit_rule=_text(row, "semantic_hit_rule", path, f"{where}.semantic_hit_rule", allow_empty=True),
            failure_modes=_str_list(row, "failure_modes", path, f"{where}.failure_modes"),
        ))
    return slots


def _brief(data: dict, path: Path, unit_ids: set[str]) -> Brief:
    table = _require(data, "initial_brief", dict, path, "initial_brief")
    visible = _str_list(table, "visible_unit_ids", path, "initial_brief.visible_unit_ids")
    for i, unit_id in enumerate(visible):
        if unit_id not in unit_ids:
            raise InputError(path, f"unit {unit_id!r} is not among problem_units",
                             field=f"initial_brief.visible_unit_ids.{i}")
    return Brief(content=_text(table, "content", path, "initial_brief.content"), visible_unit_ids=visible)


def _metadata(data: dict, path: Path) -> CaseMetadata:
    table = _require(data, "metadata", dict, path, "metadata")
    case_id = _text(table, "case_id", path, "metadata.case_id")
    try:
        return CaseMetadata(
            schema_version=_text(table, "schema_version", path, "metadata.schema_version"),
            benchmark=_text(table, "benchmark", path, "metadata.benchmark"),
            case_id=case_id,
            domain=DOMAIN,
            source_id=case_id,
        )
    except ValidationError:
        raise InputError(path, f"unsafe id {case_id!r} (letters, digits, '_.+-' only)", field="metadata.case_id") from None


def case_from_toml(data: dict, path: Path) -> Case:
    """The parsed TOML document of one case -> ``Case``; ``path`` names the source in errors."""
    metadata = _metadata(data, path)
    units = _units(data, path)
    unit_ids = {u.id for u in units}
    slots = _slots(data, path, unit_ids)
    brief = _brief(data, path, unit_ids)
    hidden_units = {s.unit_ids[0] for s in slots}
    shown = hidden_units & set(brief.visible_unit_ids)
    if shown:
        raise InputError(path, f"hidden unit(s) {sorted(shown)} are also listed as visible",
                         field="initial_brief.visible_unit_ids")
    extra = {key: value for key, value in data.items() if key not in KNOWN_TABLES}
    return Case(
        metadata=metadata,
        units=units,
        hidden_slots=slots,
        brief=brief,
        full_text="\n\n".join(u.content for u in units),
        extra=extra,
    )


def read_case(path: Path | str) -> Case:
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise InputError(path, f"cannot read file ({err.strerror})") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise InputError(path, "not UTF-8 text") from None
    except tomllib.TOMLDecodeError as err:
        raise InputError(path, f"malformed TOML ({err})") from None
    return case_from_toml(data, path)


def read_cases(folder: Path | str) -> list[Case]:
    """Every ``*.toml`` in ``folder`` (sorted by name); duplicate case ids are an error."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(folder, "folder not found")
    files = sorted(folder.glob("*.toml"))
    if not files:
        raise InputError(folder, "no .toml case files found")
    cases: list[Case] = []
    seen: dict[str, Path] = {}
    for path in files:
        case = read_case(path)
        if case.case_id in seen:
            raise InputError(path, f"duplicate case id {case.case_id!r} (also in {seen[case.case_id].name})",
                             field="metadata.case_id")
        seen[case.case_id] = path
        cases.append(case)
    return cases

"""The published OR-Clarify case format (TOML, schema 0.3): reader into the unified ``Case`` and writer back.

The mapping is lossless. Every TOML field lands in a ``Case`` field or in ``Case.extra``: the ``[simulator]`` and
``[solver_verification]`` tables and any other top-level key under their own name, and unknown keys inside the
known tables under ``extra[TABLE_EXTRAS]`` (``{"metadata": {...}, "problem_units": {unit_id: {...}},
"hidden_slots": {slot_id: {...}}, "initial_brief": {...}}``). ``[metadata]`` may also carry ``domain``,
``source_id`` and ``seed``; the writer adds them only when they differ from what the reader derives otherwise.
``Case.full_text`` is derived (the unit contents joined by blank lines) and is not written.

The writer lays a case out exactly as the published files do (table order, key order, single-line basic strings
with ``\\n`` escapes, inline arrays, one blank line between tables), so reading and re-writing a published case
gives back its original bytes, and two writes of the same case are byte-identical.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import tomllib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tasks import store
from tasks.domains.optimization.problems import ProblemRecord, check_unique
from tasks.domains.optimization.vocabulary import SEVERITIES, UNIT_KINDS
from tasks.errors import InputError
from tasks.records import Brief, Case, CaseMetadata, HiddenSlot, Unit

BENCHMARK = "OR-Clarify"
DOMAIN = "optimization"
KNOWN_TABLES = ("metadata", "problem_units", "hidden_slots", "initial_brief")
TABLE_EXTRAS = "or_toml_unknown_keys"
"""``Case.extra`` key holding unknown keys found inside the known tables (reserved: no TOML table may use it)."""

METADATA_KEYS = ("schema_version", "benchmark", "case_id")
SCHEMA_VERSIONS = ("0.3",)
"""The OR-Clarify schema versions this reader understands; any other is refused (never rewritten as another)."""
OPTIONAL_METADATA_KEYS = ("domain", "source_id", "seed")
"""Written only when they differ from what the reader derives (domain "optimization", source_id = case_id, no seed)."""
UNIT_KEYS = ("id", "kind", "content")
SLOT_KEYS = ("slot_id", "name", "severity", "severity_reason", "problem_unit_id", "reference_acceptable_questions",
             "semantic_hit_rule", "failure_modes", "simulator_answer")
BRIEF_KEYS = ("visible_unit_ids", "content")
EXTRA_TABLE_ORDER = {
    "simulator": ("business_role", "knowledge_boundary"),
    "solver_verification": ("status", "solver_script", "verified_at", "objective_value", "solution", "notes"),
}
"""Known extra tables, written in this order and with these keys first; other tables follow sorted by name."""

_TYPE_NAMES = {str: "a string", list: "an array", dict: "a table", int: "an integer", bool: "a boolean",
               float: "a float"}


# ---- reader ---------------------------------------------------------------------------------------------------------


def _type_name(kind: type) -> str:
    return _TYPE_NAMES.get(kind, kind.__name__)


def _require(table: dict, key: str, kind: type | tuple[type, ...], path: Path, where: str) -> Any:
    """``table[key]`` checked for presence and type; ``where`` is the dotted field path used in the error."""
    if key not in table:
        raise InputError(path, "missing field", field=where)
    value = table[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        expected = " or ".join(_type_name(k) for k in kinds)
        raise InputError(path, f"expected {expected}, got {_type_name(type(value))}", field=where)
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
            raise InputError(path, f"expected a string, got {_type_name(type(value))}", field=f"{where}.{i}")
    return values


def _tables(data: dict, key: str, path: Path) -> list[dict]:
    rows = _require(data, key, list, path, key)
    if not rows:
        raise InputError(path, "needs at least one entry", field=key)
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise InputError(path, "expected a table", field=f"{key}.{i}")
    return rows


def _unknown(table: dict, known: tuple[str, ...]) -> dict[str, Any]:
    return {key: value for key, value in table.items() if key not in known}


def _new_id(row: dict, key: str, path: Path, where: str, seen: set[str], what: str) -> str:
    """``row[key]``, a text not in ``seen`` (added to it); an InputError naming the field otherwise."""
    value = _text(row, key, path, f"{where}.{key}")
    if value in seen:
        raise InputError(path, f"duplicate {what} {value!r}", field=f"{where}.{key}")
    seen.add(value)
    return value


def _one_of(row: dict, key: str, path: Path, where: str, allowed: tuple[str, ...], what: str) -> str:
    """``row[key]``, one of ``allowed``; an InputError naming the field otherwise."""
    value = _text(row, key, path, f"{where}.{key}")
    if value not in allowed:
        raise InputError(path, f"unknown {what} {value!r} (expected one of: {', '.join(allowed)})",
                         field=f"{where}.{key}")
    return value


def _units(data: dict, path: Path, extras: dict) -> list[Unit]:
    units: list[Unit] = []
    seen: set[str] = set()
    for i, row in enumerate(_tables(data, "problem_units", path)):
        where = f"problem_units.{i}"
        unit_id = _new_id(row, "id", path, where, seen, "unit id")
        kind = _one_of(row, "kind", path, where, UNIT_KINDS, "unit kind")
        units.append(Unit(id=unit_id, kind=kind, content=_text(row, "content", path, f"{where}.content")))
        if unknown := _unknown(row, UNIT_KEYS):
            extras.setdefault("problem_units", {})[unit_id] = unknown
    return units


def _slots(data: dict, path: Path, unit_ids: set[str], extras: dict) -> list[HiddenSlot]:
    slots: list[HiddenSlot] = []
    seen: set[str] = set()
    for i, row in enumerate(_tables(data, "hidden_slots", path)):
        where = f"hidden_slots.{i}"
        slot_id = _new_id(row, "slot_id", path, where, seen, "slot id")
        severity = _one_of(row, "severity", path, where, SEVERITIES, "severity")
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
        if unknown := _unknown(row, SLOT_KEYS):
            extras.setdefault("hidden_slots", {})[slot_id] = unknown
    return slots


def _brief(data: dict, path: Path, unit_ids: set[str], extras: dict) -> Brief:
    table = _require(data, "initial_brief", dict, path, "initial_brief")
    visible = _str_list(table, "visible_unit_ids", path, "initial_brief.visible_unit_ids")
    for i, unit_id in enumerate(visible):
        if unit_id not in unit_ids:
            raise InputError(path, f"unit {unit_id!r} is not among problem_units",
                             field=f"initial_brief.visible_unit_ids.{i}")
    if unknown := _unknown(table, BRIEF_KEYS):
        extras["initial_brief"] = unknown
    return Brief(content=_text(table, "content", path, "initial_brief.content"), visible_unit_ids=visible)


def _metadata(data: dict, path: Path, extras: dict) -> CaseMetadata:
    table = _require(data, "metadata", dict, path, "metadata")
    case_id = _text(table, "case_id", path, "metadata.case_id")
    optional: dict[str, Any] = {"domain": DOMAIN, "source_id": case_id, "seed": None}
    for key in ("domain", "source_id"):
        if key in table:
            optional[key] = _text(table, key, path, f"metadata.{key}")
    if "seed" in table:
        optional["seed"] = _require(table, "seed", int, path, "metadata.seed")
    if unknown := _unknown(table, METADATA_KEYS + OPTIONAL_METADATA_KEYS):
        extras["metadata"] = unknown
    version = _text(table, "schema_version", path, "metadata.schema_version")
    if version not in SCHEMA_VERSIONS:
        raise InputError(path, f"unsupported schema version {version!r} (this reader knows: "
                               f"{', '.join(SCHEMA_VERSIONS)})", field="metadata.schema_version")
    try:
        return CaseMetadata(
            schema_version=version,
            benchmark=_text(table, "benchmark", path, "metadata.benchmark"),
            case_id=case_id,
            **optional,
        )
    except ValidationError:
        raise InputError(path, f"unsafe id {case_id!r} (letters, digits, '_.+-' only)",
                         field="metadata.case_id") from None


def case_from_toml(data: dict, path: Path) -> Case:
    """The parsed TOML document of one case -> ``Case``; ``path`` names the source in errors."""
    if TABLE_EXTRAS in data:
        raise InputError(path, "reserved name, cannot be used as a table", field=TABLE_EXTRAS)
    extras: dict[str, Any] = {}
    metadata = _metadata(data, path, extras)
    units = _units(data, path, extras)
    unit_ids = {u.id for u in units}
    slots = _slots(data, path, unit_ids, extras)
    brief = _brief(data, path, unit_ids, extras)
    hidden_units = {s.unit_ids[0] for s in slots}
    shown = hidden_units & set(brief.visible_unit_ids)
    if shown:
        raise InputError(path, f"hidden unit(s) {sorted(shown)} are also listed as visible",
                         field="initial_brief.visible_unit_ids")
    extra = {key: value for key, value in data.items() if key not in KNOWN_TABLES}
    if extras:
        extra[TABLE_EXTRAS] = {table: extras[table] for table in KNOWN_TABLES if table in extras}
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
        store.check_file_size(path)
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


def load_problems_from_toml(folder: Path) -> list[ProblemRecord]:
    """Every OR-Clarify case in ``folder`` as a complete problem: all its units, visible and hidden."""
    problems = [
        ProblemRecord(problem_id=case.case_id, text=case.full_text, units=list(case.units))
        for case in read_cases(folder)
    ]
    check_unique(problems, folder)
    return problems


# ---- writer ---------------------------------------------------------------------------------------------------------


def _ordered(table: dict, first: tuple[str, ...]) -> dict:
    """``table`` with the keys of ``first`` (those present) leading, then the rest in their own order."""
    return {**{k: table[k] for k in first if k in table}, **{k: v for k, v in table.items() if k not in first}}


def _check_representable(case: Case, label: str) -> None:
    """Fields of the unified ``Case`` that OR-Clarify 0.3 has no place for must be empty."""
    problems = [
        ("hints", bool(case.hints)),
        ("present_categories", bool(case.present_categories)),
        ("hidden_categories", bool(case.hidden_categories)),
        ("visible_categories", bool(case.visible_categories)),
        *((f"units.{i}.category", u.category is not None) for i, u in enumerate(case.units)),
        *((f"hidden_slots.{i}.category", s.category is not None) for i, s in enumerate(case.hidden_slots)),
    ]
    for field, bad in problems:
        if bad:
            raise InputError(label, "has no place in OR-Clarify 0.3 TOML (must be empty)", field=field)
    for i, slot in enumerate(case.hidden_slots):
        if len(slot.unit_ids) != 1:
            raise InputError(label, f"OR-Clarify slots hide exactly one unit, got {len(slot.unit_ids)}",
                             field=f"hidden_slots.{i}.unit_ids")
        if slot.severity is None:
            raise InputError(label, "missing severity (P0, P1 or P2)", field=f"hidden_slots.{i}.severity")


def _inner_extras(case: Case, label: str) -> dict[str, Any]:
    """``extra[TABLE_EXTRAS]`` checked: known tables only, existing ids only, no key that shadows a schema key."""
    inner = case.extra.get(TABLE_EXTRAS, {})
    where = f"extra.{TABLE_EXTRAS}"
    if not isinstance(inner, dict):
        raise InputError(label, "expected a dict", field=where)
    rows = {"problem_units": ({u.id for u in case.units}, UNIT_KEYS),
            "hidden_slots": ({s.slot_id for s in case.hidden_slots}, SLOT_KEYS)}
    flat = {"metadata": METADATA_KEYS + OPTIONAL_METADATA_KEYS, "initial_brief": BRIEF_KEYS}
    for table, value in inner.items():
        if table not in KNOWN_TABLES:
            raise InputError(label, f"expected one of: {', '.join(KNOWN_TABLES)}", field=f"{where}.{table}")
        if not isinstance(value, dict):
            raise InputError(label, "expected a dict", field=f"{where}.{table}")
        groups = value.items() if table in rows else [(None, value)]
        for row_id, keys in groups:
            spot = f"{where}.{table}" if row_id is None else f"{where}.{table}.{row_id}"
            if row_id is not None and row_id not in rows[table][0]:
                raise InputError(label, f"no such id in {table}", field=spot)
            if not isinstance(keys, dict):
                raise InputError(label, "expected a dict", field=spot)
            known = rows[table][1] if table in rows else flat[table]
            if clash := [k for k in keys if k in known]:
                raise InputError(label, f"shadows schema key(s) {clash}", field=spot)
    return inner


def case_document(case: Case) -> dict[str, Any]:
    """``case`` as the TOML document (a dict in the published table and key order)."""
    label = f"case {case.case_id}"
    _check_representable(case, label)
    inner = _inner_extras(case, label)
    extra = {k: v for k, v in case.extra.items() if k != TABLE_EXTRAS}
    if clash := [k for k in extra if k in KNOWN_TABLES]:
        raise InputError(label, "a schema table cannot be kept in extra", field=f"extra.{clash[0]}")
    meta = case.metadata
    metadata: dict[str, Any] = {"schema_version": meta.schema_version, "benchmark": meta.benchmark,
                                "case_id": meta.case_id}
    if meta.domain != DOMAIN:
        metadata["domain"] = meta.domain
    if meta.source_id != meta.case_id:
        metadata["source_id"] = meta.source_id
    if meta.seed is not None:
        metadata["seed"] = meta.seed
    metadata.update(inner.get("metadata", {}))
    units = [{"id": u.id, "kind": u.kind, "content": u.content, **inner.get("problem_units", {}).get(u.id, {})}
             for u in case.units]
    slots = [{
        "slot_id": s.slot_id,
        "name": s.name,
        "severity": s.severity,
        "severity_reason": s.severity_reason,
        "problem_unit_id": s.unit_ids[0],
        "reference_acceptable_questions": list(s.reference_questions),
        "semantic_hit_rule": s.semantic_hit_rule,
        "failure_modes": list(s.failure_modes),
        "simulator_answer": s.simulator_answer,
        **inner.get("hidden_slots", {}).get(s.slot_id, {}),
    } for s in case.hidden_slots]
    brief = {"visible_unit_ids": list(case.brief.visible_unit_ids), "content": case.brief.content,
             **inner.get("initial_brief", {})}
    root_values = {k: v for k, v in extra.items() if not _is_table(v) and not _is_table_array(v)}
    tables = {k: v for k, v in extra.items() if k not in root_values}
    later = [k for k in EXTRA_TABLE_ORDER if k in tables] + sorted(k for k in tables if k not in EXTRA_TABLE_ORDER)
    return {
        **{k: root_values[k] for k in sorted(root_values)},
        "metadata": metadata,
        "problem_units": units,
        "hidden_slots": slots,
        "initial_brief": brief,
        **{k: _ordered(tables[k], EXTRA_TABLE_ORDER.get(k, ())) if isinstance(tables[k], dict) else tables[k]
           for k in later},
    }


def case_to_toml(case: Case) -> str:
    """``case`` as OR-Clarify 0.3 TOML text; the same case always gives the same bytes, and the text reads back."""
    label = f"case {case.case_id}"
    try:
        text = dumps(case_document(case))
    except EmitError as err:
        raise InputError(label, err.message, field=err.field) from None
    case_from_toml(tomllib.loads(text), Path(label))  # what cannot be read back is never written
    return text


def write_case(case: Case, folder: Path | str) -> Path:
    """Write ``case`` atomically to ``folder/<case_id>.toml`` and return that path."""
    path = Path(folder) / f"{case.case_id}.toml"
    store.atomic_write_text(path, case_to_toml(case))
    return path


# ---- a small TOML emitter in the published layout -------------------------------------------------------------------

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


class EmitError(ValueError):
    """A value TOML cannot hold; ``field`` is its dotted key in the document."""

    def __init__(self, field: str, message: str):
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")

_ESCAPES = {"\\": "\\\\", '"': '\\"', "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def _is_table(value: Any) -> bool:
    return isinstance(value, dict)


def _is_table_array(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _key(key: str) -> str:
    if not isinstance(key, str):
        raise TypeError(f"cannot write a {type(key).__name__} key as TOML")
    return key if _BARE_KEY.match(key) else _string(key)


def _string(text: str) -> str:
    out = []
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _value(value: Any) -> str:
    """One inline TOML value: strings, numbers, booleans, dates, inline arrays and inline tables."""
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


def _blocks(table: dict, path: tuple[str, ...], header: str | None, where: str = "") -> list[str]:
    """``table`` as text blocks: its own header and plain keys, then its sub-tables and arrays of tables.

    ``path`` names the table in headers; ``where`` is its dotted field (with row numbers) for errors.
    """
    lines = [] if header is None else [header]
    for key, value in table.items():
        if not _is_table(value) and not _is_table_array(value):
            try:
                lines.append(f"{_key(key)} = {_value(value)}")
            except TypeError as err:
                raise EmitError(f"{where}{key}", str(err)) from None
    blocks = ["\n".join(lines)] if lines else []
    for key, value in table.items():
        try:
            name = ".".join(_key(p) for p in (*path, key))
        except TypeError as err:
            raise EmitError(f"{where}{key}", str(err)) from None
        if _is_table(value):
            blocks += _blocks(value, (*path, key), f"[{name}]", f"{where}{key}.")
        elif _is_table_array(value):
            for i, row in enumerate(value):
                blocks += _blocks(row, (*path, key), f"[[{name}]]", f"{where}{key}.{i}.")
    return blocks


def dumps(document: dict[str, Any]) -> str:
    """A TOML document in the published OR-Clarify layout: tables separated by one blank line, one key a line."""
    return "\n\n".join(_blocks(document, (), None)) + "\n"

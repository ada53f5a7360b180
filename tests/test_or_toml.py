"""OR-Clarify TOML: byte-stable writer, lossless reader, round trip of the published cases, bad input."""

from __future__ import annotations

import datetime as dt
import tomllib
from pathlib import Path

import pytest

from tasks.domains.optimization import or_toml
from tasks.domains.optimization.or_toml import (
    TABLE_EXTRAS,
    case_to_toml,
    dumps,
    read_case,
    read_cases,
    write_case,
)
from tasks.errors import InputError
from tasks.records import Brief, Case, CaseMetadata, HiddenSlot, Unit
from tests.conftest import SHARED

TRICKY_TABLE = (
    "Crossing times (minutes):\n"
    "| Route | Day | Night |\n"
    "|-------|-----|-------|\n"
    "| A–B   | 35  | 40    |\n"
    "| B‑C   | 50  | 55    |"
)
TRICKY_TEXT = (
    'Tickets are "flex" or "fixed"; the path is C:\\ferries\\plan.xlsx, a tab\there, and """ or \'\'\' too.\n\n'
)


def ferry_case(**extra) -> Case:
    """A hand-written mini case (not from the benchmark) whose units hold awkward strings."""
    units = [
        Unit(id="U1", kind="context", content="A ferry company plans crossings on two routes next week."),
        Unit(id="U2", kind="data", content=TRICKY_TABLE),
        Unit(id="U3", kind="data", content=TRICKY_TEXT),
        Unit(id="U4", kind="constraint", content="Each boat may sail at most 9 hours a day — crew rules ✓."),
        Unit(id="U5", kind="assumption", content="Night crossings start after 22:00.\n"),
        Unit(id="U6", kind="objective", content="Minimise total fuel cost."),
    ]
    slots = [
        HiddenSlot(slot_id="H1", name="daily_sailing_limit", severity="P1", severity_reason="",
                   unit_ids=["U4"], simulator_answer='At most 9 hours a day per boat ("hard" rule).',
                   reference_questions=["Is there a daily limit on sailing hours?", "How long may a boat sail?"],
                   semantic_hit_rule="Asks about a cap on daily sailing time.", failure_modes=[]),
        HiddenSlot(slot_id="H2", name="minimise_fuel_cost", severity="P0", severity_reason="No goal, no model.",
                   unit_ids=["U6"], simulator_answer="We want the lowest fuel bill.",
                   reference_questions=["What should the plan optimise?", "Is fuel cost the goal?"],
                   semantic_hit_rule="Asks what to optimise.", failure_modes=["Maximising crossings instead"]),
    ]
    return Case(
        metadata=CaseMetadata(benchmark="OR-Clarify", case_id="ferry_007", domain="optimization",
                              source_id="ferry_007"),
        units=units,
        hidden_slots=slots,
        brief=Brief(content="A ferry company plans crossings.\n\n" + TRICKY_TABLE + "\n\n" + TRICKY_TEXT,
                    visible_unit_ids=["U1", "U2", "U3", "U5"]),
        full_text="\n\n".join(u.content for u in units),
        extra={"simulator": {"knowledge_boundary": "Only the case facts.", "business_role": "fleet manager"},
               "solver_verification": {"notes": "", "status": "not_run"}, **extra},
    )


# ---- writer ---------------------------------------------------------------------------------------------------------


def test_writer_reproduces_the_published_layout():
    text = case_to_toml(ferry_case())
    headers = [line for line in text.splitlines() if line.startswith("[")]
    assert headers == ["[metadata]", *["[[problem_units]]"] * 6, "[[hidden_slots]]", "[[hidden_slots]]",
                       "[initial_brief]", "[simulator]", "[solver_verification]"]
    slot = text.split("[[hidden_slots]]\n")[1].split("\n\n")[0]
    assert [line.split(" = ")[0] for line in slot.splitlines()] == list(or_toml.SLOT_KEYS)
    assert text.startswith('[metadata]\nschema_version = "0.3"\nbenchmark = "OR-Clarify"\ncase_id = "ferry_007"\n\n')
    assert '[simulator]\nbusiness_role = "fleet manager"\n' in text  # fixed key order, whatever the dict order
    assert '[solver_verification]\nstatus = "not_run"\nnotes = ""\n' in text
    assert text.endswith('notes = ""\n') and "\n\n\n" not in text
    questions = '["Is there a daily limit on sailing hours?", "How long may a boat sail?"]'
    assert f"reference_acceptable_questions = {questions}" in text
    assert "failure_modes = []" in text


def test_tricky_strings_survive_and_writes_are_byte_identical(tmp_path):
    case = ferry_case()
    first = case_to_toml(case)
    assert case_to_toml(case) == first
    assert "‑" in first and "✓" in first  # unicode stays readable, not escaped
    path = write_case(case, tmp_path)
    assert path == tmp_path / "ferry_007.toml" and path.read_text(encoding="utf-8") == first
    back = read_case(path)
    assert back == case
    assert back.units[1].content == TRICKY_TABLE and back.units[2].content == TRICKY_TEXT
    assert back.units[4].content.endswith("\n")
    assert case_to_toml(back) == first


def test_write_case_is_atomic_and_overwrites(tmp_path):
    write_case(ferry_case(), tmp_path)
    changed = ferry_case().model_copy(update={"brief": Brief(content="Shorter brief.", visible_unit_ids=["U1"])})
    path = write_case(changed, tmp_path / "nested")
    path = write_case(changed, tmp_path)
    assert read_case(path).brief.content == "Shorter brief."
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ferry_007.toml", "nested"]


def test_extras_of_every_shape_round_trip():
    extra = {
        "version_note": "root scalar",
        "zeta": {"when": dt.date(2025, 3, 1), "at": dt.datetime(2025, 3, 1, 8, 30), "ratio": 0.25, "on": True,
                 "inf": float("inf"), "big": 10**12, "nested": {"deep key": [1, 2], "rows": [{"a": 1}, {"a": 2}]}},
        "alpha": {"mixed": [1, "two", [3.5]], "inline": [{"x": "y"}, 4], "empty": {}},
        "reviews": [{"by": "ana", "ok": True}, {"by": "li", "ok": False}],
        TABLE_EXTRAS: {
            "metadata": {"created": "2025-03-01"},
            "problem_units": {"U2": {"source": "crew handbook", "tags": ["table"]}},
            "hidden_slots": {"H2": {"reviewed": True}},
            "initial_brief": {"style": "fluent"},
        },
    }
    case = ferry_case(**extra)
    text = case_to_toml(case)
    data = tomllib.loads(text)
    assert data["version_note"] == "root scalar" and data["zeta"]["nested"]["rows"] == [{"a": 1}, {"a": 2}]
    assert data["problem_units"][1]["source"] == "crew handbook" and data["hidden_slots"][1]["reviewed"] is True
    assert data["metadata"]["created"] == "2025-03-01" and data["initial_brief"]["style"] == "fluent"
    assert text.startswith('version_note = "root scalar"\n\n[metadata]\n')
    headers = [line for line in text.splitlines() if line.startswith("[")]
    assert headers[headers.index("[initial_brief]") + 1:] == [
        "[simulator]", "[solver_verification]", "[alpha]", "[alpha.empty]", "[[reviews]]", "[[reviews]]", "[zeta]",
        "[zeta.nested]", "[[zeta.nested.rows]]", "[[zeta.nested.rows]]"]
    back = or_toml.case_from_toml(data, Path("mem.toml"))
    assert back == case
    assert case_to_toml(back) == text


def test_metadata_provenance_round_trips():
    meta = CaseMetadata(benchmark="OR-Clarify", case_id="opt_ferry_001_v2", domain="logistics",
                        source_id="opt_ferry_001", seed=13)
    case = ferry_case().model_copy(update={"metadata": meta})
    text = case_to_toml(case)
    assert 'case_id = "opt_ferry_001_v2"\ndomain = "logistics"\nsource_id = "opt_ferry_001"\nseed = 13\n' in text
    assert or_toml.case_from_toml(tomllib.loads(text), Path("x.toml")) == case
    assert "source_id" not in case_to_toml(ferry_case())  # defaults stay out of the published layout


@pytest.mark.parametrize(
    ("update", "field"),
    [
        ({"hints": "a hint"}, "hints"),
        ({"units": [Unit(id="U1", kind="context", content="x", category="Error Information")]}, "units.0.category"),
    ],
)
def test_writer_refuses_what_the_format_cannot_hold(update, field):
    with pytest.raises(InputError, match=f"field '{field}'"):
        case_to_toml(ferry_case().model_copy(update=update))


def test_writer_refuses_a_multi_unit_slot_and_an_unknown_kind():
    case = ferry_case()
    two = case.hidden_slots[0].model_copy(update={"unit_ids": ["U4", "U5"]})
    with pytest.raises(InputError, match=r"field 'hidden_slots\.0\.unit_ids'"):
        case_to_toml(case.model_copy(update={"hidden_slots": [two, case.hidden_slots[1]]}))
    odd = [*case.units[:5], Unit(id="U6", kind="goal", content="Minimise fuel.")]
    with pytest.raises(InputError, match=r"case ferry_007: field 'problem_units\.5\.kind'"):
        case_to_toml(case.model_copy(update={"units": odd}))


def test_dumps_quotes_keys_and_escapes_control_characters():
    text = dumps({"a b": "x\x01y\r", "t": {"é": 1}})
    assert text == '"a b" = "x\\u0001y\\r"\n\n[t]\n"é" = 1\n'
    assert tomllib.loads(text) == {"a b": "x\x01y\r", "t": {"é": 1}}


# ---- reader: bad input ----------------------------------------------------------------------------------------------


def _base() -> dict:
    return tomllib.loads(case_to_toml(ferry_case()))


def _write(tmp_path: Path, document: dict | str) -> Path:
    path = tmp_path / "broken.toml"
    path.write_text(document if isinstance(document, str) else dumps(document), encoding="utf-8")
    return path


def _drop(*keys):
    def edit(doc: dict) -> None:
        target = doc
        for key in keys[:-1]:
            target = target[key]
        del target[keys[-1]]
    return edit


def _set(value, *keys):
    def edit(doc: dict) -> None:
        target = doc
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value
    return edit


@pytest.mark.parametrize(
    ("edit", "field", "words"),
    [
        (_drop("metadata"), "metadata", "missing field"),
        (_drop("problem_units"), "problem_units", "missing field"),
        (_drop("hidden_slots"), "hidden_slots", "missing field"),
        (_drop("initial_brief"), "initial_brief", "missing field"),
        (_set([], "hidden_slots"), "hidden_slots", "at least one"),
        (_set("x", "metadata"), "metadata", "expected a table, got a string"),
        (_drop("metadata", "schema_version"), "metadata.schema_version", "missing field"),
        (_drop("problem_units", 2, "content"), "problem_units.2.content", "missing field"),
        (_drop("hidden_slots", 1, "simulator_answer"), "hidden_slots.1.simulator_answer", "missing field"),
        (_drop("initial_brief", "content"), "initial_brief.content", "missing field"),
        (_set("goal", "problem_units", 5, "kind"), "problem_units.5.kind", "unknown unit kind 'goal'"),
        (_set("P3", "hidden_slots", 0, "severity"), "hidden_slots.0.severity", "unknown severity 'P3'"),
        (_set("U99", "hidden_slots", 1, "problem_unit_id"), "hidden_slots.1.problem_unit_id", "'U99' is not among"),
        (_set(["U1", "U77"], "initial_brief", "visible_unit_ids"), "initial_brief.visible_unit_ids.1", "'U77'"),
        (_set("../../etc/ferry", "metadata", "case_id"), "metadata.case_id", "unsafe id"),
        (_set("ferry 007", "metadata", "case_id"), "metadata.case_id", "unsafe id"),
        (_set(True, "metadata", "seed"), "metadata.seed", "expected an integer, got a boolean"),
        (_set(["ok", 3], "hidden_slots", 0, "failure_modes"), "hidden_slots.0.failure_modes.1", "expected a string"),
        (_set("  ", "problem_units", 0, "content"), "problem_units.0.content", "is empty"),
        (_set("U1", "problem_units", 1, "id"), "problem_units.1.id", "duplicate unit id"),
        (_set({"x": 1}, TABLE_EXTRAS), TABLE_EXTRAS, "reserved name"),
    ],
)
def test_reader_names_the_file_and_the_field(tmp_path, edit, field, words):
    document = _base()
    edit(document)
    with pytest.raises(InputError) as err:
        read_case(_write(tmp_path, document))
    message = str(err.value)
    assert message.startswith(str(tmp_path / "broken.toml") + ": ")
    assert f"field '{field}'" in message and words in message and "\n" not in message


@pytest.mark.parametrize(
    "text",
    ['[metadata]\ncase_id = "unterminated\n', "[metadata]\n[metadata]\n", "x = 1\nx = 2\n", "[[problem_units]\n"],
)
def test_reader_rejects_malformed_toml_in_one_line(tmp_path, text):
    with pytest.raises(InputError) as err:
        read_case(_write(tmp_path, text))
    assert "broken.toml: malformed TOML" in str(err.value) and "\n" not in str(err.value)


def test_reader_rejects_non_utf8_and_a_missing_file(tmp_path):
    path = tmp_path / "latin.toml"
    path.write_bytes(case_to_toml(ferry_case()).encode("utf-8").replace("—".encode(), b"\xe9"))
    with pytest.raises(InputError, match=r"latin\.toml: not UTF-8"):
        read_case(path)
    with pytest.raises(InputError, match=r"absent\.toml: cannot read file"):
        read_case(tmp_path / "absent.toml")


def test_read_cases_rejects_duplicate_ids(tmp_path):
    write_case(ferry_case(), tmp_path)
    (tmp_path / "copy.toml").write_text(case_to_toml(ferry_case()), encoding="utf-8")
    with pytest.raises(InputError, match=r"ferry_007\.toml: field 'metadata\.case_id': duplicate case id"):
        read_cases(tmp_path)


# ---- the published cases --------------------------------------------------------------------------------------------

OR_CLARIFY = SHARED / "data" / "or-clarify"


@pytest.mark.realdata
def test_published_cases_round_trip_exactly():
    files = sorted(OR_CLARIFY.glob("orclarify_*.toml"))
    if not files:
        pytest.skip(f"{OR_CLARIFY} holds no case files")
    assert len(files) == 100
    slots = 0
    for path in files:
        original = path.read_text(encoding="utf-8")
        case = read_case(path)
        written = case_to_toml(case)
        assert tomllib.loads(written) == tomllib.loads(original), path.name
        assert written == original, path.name  # the layout matches the published files byte for byte
        assert case_to_toml(or_toml.case_from_toml(tomllib.loads(written), path)) == written, path.name
        assert TABLE_EXTRAS not in case.extra
        slots += len(case.hidden_slots)
    assert slots == 178


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"metadata": {"x": 1}}, "extra.metadata"),
        ({TABLE_EXTRAS: {"problem_units": {"U9": {"note": "x"}}}}, f"extra.{TABLE_EXTRAS}.problem_units.U9"),
        ({TABLE_EXTRAS: {"hidden_slots": {"H1": {"severity": "P2"}}}}, f"extra.{TABLE_EXTRAS}.hidden_slots.H1"),
        ({TABLE_EXTRAS: {"simulator": {}}}, f"extra.{TABLE_EXTRAS}.simulator"),
        ({TABLE_EXTRAS: {"problem_units": {"U1": {"note": None}}}}, "problem_units.0.note"),
        ({"simulator": {"business_role": "x", "tags": [{1, 2}]}}, "simulator.tags"),
        ({"audit": [{"ok": True}, {"by": None}]}, "audit.1.by"),
    ],
)
def test_writer_refuses_extras_it_cannot_write_faithfully(extra, field):
    with pytest.raises(InputError) as err:
        case_to_toml(ferry_case(**extra))
    assert str(err.value).startswith(f"case ferry_007: field '{field}': ")

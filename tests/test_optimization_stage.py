"""construct@optimization: decompose -> filter -> mask -> annotate into OR-Clarify TOML, gated and cached."""

from __future__ import annotations

import json
import tomllib

import pytest

from tasks.construction.brief import choose_hidden, join_units
from tasks.domains import ConstructResult
from tasks.domains.optimization import DOMAIN, build_chunk, load_problems
from tasks.domains.optimization.or_toml import read_case
from tasks.domains.optimization.vocabulary import SEVERITIES
from tasks.errors import GateError
from tasks.params import OptimizationConstructParams
from tasks.records import Case, Unit
from tasks.roles.config import RolesParams
from tests.conftest import ROOT, SHARED, python, tiny_params, write_params

ROLES = {name: RolesParams().get(name).model_dump(mode="json") for name in ("decomposer", "slot_annotator", "rewriter")}


@pytest.fixture(scope="module")
def built():
    cfg = OptimizationConstructParams(limit=4)
    problems = [p.model_dump(mode="json") for p in load_problems(cfg, ROOT)]
    return problems, build_chunk(problems, cfg.model_dump(mode="json"), ROLES)


def test_samples_become_valid_cases(built):
    problems, out = built
    assert out["failures"] == [] and len(out["cases"]) == len(problems) == 4
    for raw in out["cases"]:
        case = Case.model_validate(raw)
        hidden = {uid for s in case.hidden_slots for uid in s.unit_ids}
        assert 1 <= len(hidden) <= 3
        assert hidden.isdisjoint(case.brief.visible_unit_ids)
        assert hidden | set(case.brief.visible_unit_ids) == {u.id for u in case.units}
        kinds = {u.id: u.kind for u in case.units}
        assert all(kinds[uid] in ("objective", "constraint", "assumption") for uid in hidden)
        for slot in case.hidden_slots:
            assert slot.severity in SEVERITIES and len(slot.reference_questions) >= 2 and slot.failure_modes
            unit = next(u for u in case.units if u.id == slot.unit_ids[0])
            assert unit.content not in case.brief.content
        eligibility = case.extra["construction"]["eligibility"]
        assert [e["unit_id"] for e in eligibility] == [u.id for u in case.units]
        assert all(e["reason"] for e in eligibility)


def test_construction_is_deterministic(built):
    problems, out = built
    again = build_chunk(problems, OptimizationConstructParams(limit=4).model_dump(mode="json"), ROLES)
    assert json.dumps(again["cases"], sort_keys=True) == json.dumps(out["cases"], sort_keys=True)
    other_seed = build_chunk(problems, OptimizationConstructParams(limit=4, seed=5).model_dump(mode="json"), ROLES)
    assert [c["brief"] for c in other_seed["cases"]] != [c["brief"] for c in out["cases"]]


def test_written_toml_is_the_published_format_and_reads_back(built, tmp_path):
    _, out = built
    cases = [Case.model_validate(c) for c in out["cases"]]
    result = ConstructResult(cases=cases, metrics={})
    DOMAIN.write(result, tmp_path / "a")
    DOMAIN.write(result, tmp_path / "b")
    for case in cases:
        first = (tmp_path / "a" / "toml" / f"{case.case_id}.toml").read_bytes()
        assert first == (tmp_path / "b" / "toml" / f"{case.case_id}.toml").read_bytes()
        data = tomllib.loads(first.decode())
        assert list(data) == ["metadata", "problem_units", "hidden_slots", "initial_brief", "simulator",
                              "solver_verification"]
        assert "seed" not in data["metadata"] and "construction" not in data
        back = read_case(tmp_path / "a" / "toml" / f"{case.case_id}.toml")
        assert back.units == case.units and back.hidden_slots == case.hidden_slots and back.brief == case.brief
    index = (tmp_path / "a" / "cases.jsonl").read_text().splitlines()
    assert [json.loads(line)["metadata"]["case_id"] for line in index] == [c.case_id for c in cases]


def test_gate_accepts_the_cases_and_rejects_a_leaking_brief(built):
    from tasks.validation import gate

    _, out = built
    cases = [Case.model_validate(c) for c in out["cases"]]
    suite, table = DOMAIN.validation_table(ConstructResult(cases=cases, metrics={}))
    gate(suite, table, artifact="data/cases/optimization")
    first = cases[0]
    hidden_unit = next(u for u in first.units if u.id == first.hidden_slots[0].unit_ids[0])
    leaking = first.model_copy(update={"brief": first.brief.model_copy(
        update={"content": first.brief.content + "\n\n" + hidden_unit.content})})
    suite, table = DOMAIN.validation_table(ConstructResult(cases=[leaking, *cases[1:]], metrics={}))
    with pytest.raises(GateError, match="leak_free"):
        gate(suite, table, artifact="data/cases/optimization")


def test_hidden_choice_follows_the_params():
    eligible = [f"U{i}" for i in range(1, 9)]
    half = choose_hidden("p", 0, eligible, fraction=0.5, min_hidden=1, max_hidden=10)
    assert len(half) == 4 and half == sorted(half, key=eligible.index)
    assert choose_hidden("p", 0, eligible, fraction=0.5, min_hidden=1, max_hidden=10) == half
    assert len(choose_hidden("p", 0, eligible, fraction=0.5, min_hidden=1, max_hidden=2)) == 2
    assert len(choose_hidden("p", 0, eligible[:1], fraction=0.1, min_hidden=1, max_hidden=3)) == 1
    assert choose_hidden("p", 0, [], fraction=0.5, min_hidden=1, max_hidden=3) == []


def test_local_brief_joins_prose_and_keeps_tables_apart():
    units = [Unit(id="U1", kind="context", content="We bake bread."),
             Unit(id="U2", kind="data", content="Rye sells for 3 euros."),
             Unit(id="U3", kind="data", content="Stock:\n\n| a | b |\n|---|---|\n| 1 | 2 |"),
             Unit(id="U4", kind="objective", content="Maximise profit.")]
    assert join_units(units) == ("We bake bread. Rye sells for 3 euros.\n\nStock:\n\n| a | b |\n|---|---|\n| 1 | 2 |"
                                 "\n\nMaximise profit.")


@pytest.mark.prefect
def test_stage_cli_writes_byte_stable_toml_and_reruns_from_cache(project, prefect_api):
    first = python(project, "-m", "flows.construct", "--domain", "optimization").stdout
    assert "construct@optimization: 4 cases" in first, first
    folder = project / "data" / "cases" / "optimization" / "toml"
    snapshot = {p.name: p.read_bytes() for p in folder.glob("*.toml")}
    assert len(snapshot) == 4
    again = python(project, "-m", "flows.construct", "--domain", "optimization").stdout
    assert "(0 task(s) executed" in again, again
    metrics_path = project / "data" / "metrics" / "stages" / "construct" / "optimization.json"
    first_metrics = metrics_path.read_bytes()
    fresh = python(project, "-m", "flows.construct", "--domain", "optimization", "--refresh-cache").stdout
    assert "0 from cache" in fresh, fresh
    # computed again, not replayed: the same TOML and metrics bytes; wall time only in the timings, never a DVC file
    assert {p.name: p.read_bytes() for p in folder.glob("*.toml")} == snapshot
    assert metrics_path.read_bytes() == first_metrics
    assert b"latency_s" not in first_metrics and b"seconds" not in first_metrics
    timings = json.loads((project / "data" / "metrics" / "timings" / "construct" / "optimization.json").read_text())
    assert set(timings["roles"]["decomposer"]) == {"latency_s"}
    assert "data/metrics/timings" not in (project / "dvc.yaml").read_text()
    metrics = json.loads(first_metrics)
    assert metrics["cases"] == 4 and metrics["roles"]["decomposer"]["backend"] == "local"


@pytest.mark.parametrize(
    "content, message",
    [
        ('{"problem_id": "a b", "text": "x"}\n', "field 'problem_id'"),
        ('{"problem_id": "p1", "text": "Minimise cost."\n', "malformed JSON"),
        ('{"problem_id": "p1"}\n', "field 'text': Field required"),
    ],
)
def test_bad_samples_fail_with_one_line_and_write_nothing(project, content, message):
    (project / "data" / "samples" / "optimization" / "problems.jsonl").write_text(content)
    proc = python(project, "-m", "flows.construct", "--domain", "optimization", check=False)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and message in proc.stderr and "problems.jsonl" in proc.stderr
    assert not (project / "data" / "cases" / "optimization").exists()


def test_bad_toml_source_fails_with_the_file_and_field(project):
    folder = project / "cases_in"
    folder.mkdir()
    (folder / "bad.toml").write_text('[metadata]\nschema_version = "0.3"\nbenchmark = "OR-Clarify"\ncase_id = "bad"\n')
    params = tiny_params()
    params["construct"]["optimization"].update({"source": "orclarify", "orclarify_path": "cases_in"})
    write_params(project, params)
    proc = python(project, "-m", "flows.construct", "--domain", "optimization", check=False)
    assert proc.returncode == 2
    assert "bad.toml" in proc.stderr and "problem_units" in proc.stderr and proc.stderr.strip().count("\n") == 0
    assert not (project / "data" / "cases" / "optimization").exists()


@pytest.mark.realdata
def test_published_cases_can_be_reconstructed():
    cfg = OptimizationConstructParams(source="orclarify", orclarify_path=str(SHARED / "data" / "or-clarify"), limit=10)
    problems = [p.model_dump(mode="json") for p in load_problems(cfg, ROOT)]
    out = build_chunk(problems, cfg.model_dump(mode="json"), ROLES)
    assert out["failures"] == [] and len(out["cases"]) == 10
    for raw, problem in zip(out["cases"], problems):
        case = Case.model_validate(raw)
        assert [u.model_dump(mode="json") for u in case.units] == problem["units"]

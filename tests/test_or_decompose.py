"""The decomposer role: segmentation and typing on small hand-written problems, prompts, and one realdata floor."""

from __future__ import annotations

import re

import pytest
from pydantic import ValidationError

from tasks.domains.optimization.decompose import (
    SPEC,
    DecomposedUnit,
    DecomposeInput,
    DecomposeOutput,
    local,
    to_units,
)
from tasks.domains.optimization.vocabulary import UNIT_KINDS
from tasks.llm.records import RoleConfig
from tasks.roles.base import run_role
from tests.conftest import OR_CLARIFY, load_benchmark

BAKERY = """I need help planning next week's baking for a small bakery. Flour on hand: 120 kg. Each loaf of rye uses \
0.5 kg of flour and each baguette uses 0.3 kg. The ovens run at most 40 hours per week. Maximise total profit.

Profit per item (euros):

| Item     | Profit |
|----------|--------|
| Rye      | 2.10   |
| Baguette | 1.40   |

At least 30 rye loaves must be baked for the café contract. Assume every baked item is sold."""

HEADINGS = """# Delivery planning

We are a courier firm that serves six shops from one depot.

## Constraints

- Every shop is visited exactly once per day.
- A van can carry no more than 80 parcels.
- Drivers cannot work after 18:00.

## Objective

Minimise the total distance driven."""


def _kinds(text: str) -> list[tuple[str, str]]:
    return [(u.kind, u.content) for u in local(DecomposeInput(text=text)).units]


def _squash(text: str) -> str:
    return " ".join(text.split())


def test_sentences_split_and_kinds() -> None:
    units = _kinds(BAKERY)
    contents = [c for _, c in units]
    assert contents[0] == "I need help planning next week's baking for a small bakery."
    assert "Flour on hand: 120 kg." in contents
    assert "Each loaf of rye uses 0.5 kg of flour and each baguette uses 0.3 kg." in contents
    kinds = {c: k for k, c in units}
    assert kinds["I need help planning next week's baking for a small bakery."] == "context"
    assert kinds["Flour on hand: 120 kg."] == "data"
    assert kinds["The ovens run at most 40 hours per week."] == "constraint"
    assert kinds["Maximise total profit."] == "objective"
    assert kinds["At least 30 rye loaves must be baked for the café contract."] == "constraint"
    assert kinds["Assume every baked item is sold."] == "assumption"


def test_table_stays_one_unit_with_its_lead_in() -> None:
    units = _kinds(BAKERY)
    tables = [(k, c) for k, c in units if "|" in c]
    assert len(tables) == 1
    kind, content = tables[0]
    assert kind == "data"
    assert content.startswith("Profit per item (euros):\n\n| Item")
    assert content.endswith("| 1.40   |")
    assert "Profit per item (euros):" not in [c for _, c in units if c != content]


def test_table_caption_without_colon_joins_the_table() -> None:
    text = "I need help with a transport plan.\n\nTable 3.1\n| From | To | Cost |\n|---|---|---|\n| A | B | 4 |"
    units = _kinds(text)
    assert len(units) == 2
    assert units[1] == ("data", "Table 3.1\n| From | To | Cost |\n|---|---|---|\n| A | B | 4 |")


def test_bullets_split_under_headings_and_headings_dropped() -> None:
    units = _kinds(HEADINGS)
    contents = [c for _, c in units]
    assert contents == [
        "We are a courier firm that serves six shops from one depot.",
        "Every shop is visited exactly once per day.",
        "A van can carry no more than 80 parcels.",
        "Drivers cannot work after 18:00.",
        "Minimise the total distance driven.",
    ]
    assert [k for k, _ in units] == ["context", "constraint", "constraint", "constraint", "objective"]


def test_list_of_values_with_lead_in_stays_whole() -> None:
    text = "I need help choosing snacks.\n\nCalories per bar:\n- Oat bar: 190 kcal\n- Nut bar: 230 kcal\n\n" \
           "Eat at most two bars."
    units = _kinds(text)
    assert units[1] == ("data", "Calories per bar:\n- Oat bar: 190 kcal\n- Nut bar: 230 kcal")
    assert units[2] == ("constraint", "Eat at most two bars.")


def test_bare_value_lines_split_and_abbreviations_do_not() -> None:
    text = "I need help staffing a call centre.\nAgents available: 14\nShift length: 8 hours\n" \
           "Calls arrive evenly, e.g. about 30 per hour. Minimize overtime."
    contents = [c for _, c in _kinds(text)]
    assert contents == [
        "I need help staffing a call centre.",
        "Agents available: 14",
        "Shift length: 8 hours",
        "Calls arrive evenly, e.g. about 30 per hour.",
        "Minimize overtime.",
    ]


def test_contents_are_verbatim_and_in_order() -> None:
    for text in (BAKERY, HEADINGS):
        squashed = _squash(text)
        cursor = 0
        for unit in local(DecomposeInput(text=text)).units:
            at = squashed.find(_squash(unit.content), cursor)
            assert at >= cursor, unit.content
            cursor = at + len(_squash(unit.content))
            assert unit.kind in UNIT_KINDS


def test_deterministic_and_batch_equals_single() -> None:
    inputs = [DecomposeInput(problem_id="a", text=BAKERY), DecomposeInput(problem_id="b", text=HEADINGS)]
    first = SPEC.run_local(inputs)
    assert first == SPEC.run_local(inputs)
    assert first == [local(i) for i in inputs]


def test_run_role_local_and_to_units() -> None:
    [out] = run_role(SPEC, [DecomposeInput(problem_id="p1", text=BAKERY)], RoleConfig())
    assert isinstance(out, DecomposeOutput)
    units = to_units(out)
    assert [u.id for u in units] == [f"U{i}" for i in range(1, len(units) + 1)]
    assert [(u.kind, u.content) for u in units] == [(u.kind, u.content) for u in out.units]


def test_bad_input_and_output_rejected() -> None:
    with pytest.raises(ValidationError):
        DecomposeInput(text="   \n ")
    with pytest.raises(ValidationError):
        DecomposedUnit(kind="requirement", content="x")


def test_prompts_render_with_schema_and_text() -> None:
    inp = DecomposeInput(problem_id="p7", text=BAKERY)
    system, user = SPEC.messages(inp)
    assert system["role"] == "system" and user["role"] == "user"
    assert '"units"' in system["content"] and "JSON" in system["content"]
    for kind in UNIT_KINDS:
        assert f'"{kind}"' in system["content"]
    assert BAKERY in user["content"] and "p7" in user["content"]
    [_, user_no_id] = SPEC.messages(DecomposeInput(text="Minimise cost."))
    assert re.search(r"<problem>\s*Minimise cost\.\s*</problem>", user_no_id["content"])


def _benchmark():
    return load_benchmark("or_decompose")


@pytest.mark.realdata
def test_boundary_f1_floor_on_first_cases() -> None:
    if not OR_CLARIFY.is_dir():
        pytest.skip("OR-Clarify data absent")
    bench = _benchmark()
    cases = bench.read_cases(OR_CLARIFY)[:20]
    rows = bench.evaluate(cases)
    summary = bench.summarise(rows)
    assert summary["unit"]["f1"] >= 0.95, summary["unit"]
    assert summary["kind_acc_all"] >= 0.88, summary["kind_acc_all"]
    assert summary["not_verbatim"] == 0


def test_section_label_lines_give_kind_hints_and_vanish() -> None:
    text = "I need help routing two vans.\n\nRules:\nVans leave the depot at 7.\nVans return before noon.\n\n" \
           "**Distances**\n| From | To | km |\n|---|---|---|\n| D | A | 12 |"
    units = _kinds(text)
    assert [c for _, c in units] == [
        "I need help routing two vans.",
        "Vans leave the depot at 7.",
        "Vans return before noon.",
        "**Distances**\n| From | To | km |\n|---|---|---|\n| D | A | 12 |",
    ]
    assert [k for k, _ in units] == ["context", "constraint", "constraint", "data"]


def test_llm_backend_round_trip_with_a_scripted_model(tmp_path) -> None:
    """A mock model replaying the local answer comes back as the same typed output through ``run_role``."""
    import time

    from tasks.llm.cache import CallCache
    from tasks.llm.client import LLMClient
    from tasks.llm.providers import ensure_registered
    from tasks.llm.records import RoleFailure

    ensure_registered()
    from tasks.llm.providers.mock import MockScript, register

    inp = DecomposeInput(problem_id="p2", text=HEADINGS)
    [expected] = run_role(SPEC, [inp], RoleConfig())
    script = MockScript(rule=lambda messages: expected.model_dump_json())
    model = register(f"decomposer-replay-{time.time_ns()}", script)
    client = LLMClient(CallCache(tmp_path / "calls.sqlite"))
    [got] = run_role(SPEC, [inp], RoleConfig(backend="llm", model=model, max_tokens=2048), client=client)
    assert not isinstance(got, RoleFailure), got
    assert got == expected
    assert script.requests[-1] == SPEC.messages(inp)

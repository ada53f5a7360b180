"""Filter (hide eligibility) and the local ``slot_annotator`` on small hand-written problems."""

from __future__ import annotations

import re

import pytest
from pydantic import ValidationError

from tasks.domains.optimization.annotate import (
    SPEC,
    SlotAnnotateInput,
    SlotAnnotation,
    local,
    topic,
)
from tasks.domains.optimization.eligibility import eligibility, numbers
from tasks.llm.records import RoleConfig
from tasks.records import Unit
from tasks.roles.base import run_role
from tests.conftest import OR_CLARIFY

BAKERY = [
    Unit(id="U1", kind="context", content="We run a small bakery and want a daily baking plan."),
    Unit(id="U2", kind="data", content="Oven capacity: 240 loaves per day."),
    Unit(id="U3", kind="data", content="Profit per loaf: rye 0.80 euros, spelt 1.10 euros."),
    Unit(id="U4", kind="constraint", content="No more than 240 loaves can be baked per day."),
    Unit(id="U5", kind="constraint", content="Each delivery van can carry at most 12 crates of bread."),
    Unit(id="U6", kind="assumption", content="Plan quantities are reported rounded to the nearest whole crate."),
    Unit(id="U7", kind="objective", content="Maximize total daily profit."),
]


def verdicts(units):
    return {v.unit_id: v for v in eligibility(units)}


def annotate(unit_id: str, units=BAKERY) -> SlotAnnotation:
    unit = next(u for u in units if u.id == unit_id)
    return local(SlotAnnotateInput(problem_id="bakery", unit=unit, units=units))


# ---- filter ---------------------------------------------------------------------------------------------------------

def test_data_and_context_never_eligible():
    v = verdicts(BAKERY)
    assert not v["U1"].eligible and v["U1"].reason == "context"
    assert not v["U2"].eligible and v["U2"].reason == "data"
    assert not v["U3"].eligible and v["U3"].reason == "data"


def test_objective_and_rules_eligible():
    v = verdicts(BAKERY)
    assert v["U7"].eligible and v["U7"].reason == "objective"
    assert v["U5"].eligible and v["U5"].reason == "constraint"
    assert v["U6"].eligible and v["U6"].reason == "assumption"


def test_constraint_implied_by_data_is_dropped_with_reason():
    v = verdicts(BAKERY)
    assert not v["U4"].eligible
    assert v["U4"].reason == "implied by U2 (same limit 240)"


def test_a_floor_is_not_implied_by_a_capacity_with_the_same_number():
    units = [
        Unit(id="U1", kind="data", content="Warehouse space available: 300 pallets."),
        Unit(id="U2", kind="constraint", content="At least 300 pallets must be kept in the warehouse."),
    ]
    assert verdicts(units)["U2"].eligible


def test_near_duplicate_restatement_is_dropped_but_swapped_roles_are_kept():
    units = [
        Unit(id="U1", kind="constraint", content="Each nurse works at most 5 shifts per week."),
        Unit(id="U2", kind="constraint", content="Every nurse works no more than 5 shifts in a week."),
        Unit(id="U3", kind="constraint", content="Each ward gets exactly one head nurse."),
        Unit(id="U4", kind="constraint", content="Each head nurse gets exactly one ward."),
    ]
    v = verdicts(units)
    assert v["U1"].eligible
    assert not v["U2"].eligible and v["U2"].reason.startswith("restates U1")
    assert v["U3"].eligible and v["U4"].eligible


def test_identifiers_are_not_limits():
    assert numbers("Machine 2 runs after machine 1 (see Table 3-4), for at most 1,500 hours.") == {"1500"}


# ---- annotate -------------------------------------------------------------------------------------------------------

def test_severity_levels():
    assert annotate("U7").severity == "P0"
    assert annotate("U5").severity == "P1"
    assert annotate("U6").severity == "P2"


def test_forcing_rule_under_minimisation_is_p0():
    units = [
        Unit(id="U1", kind="data", content="Shipping cost per crate from each farm to each market is listed below."),
        Unit(id="U2", kind="constraint", content="The demand of every market must be fully met."),
        Unit(id="U3", kind="objective", content="Minimize total shipping cost."),
    ]
    assert annotate("U2", units).severity == "P0"


def test_secondary_objective_is_p1():
    units = [
        Unit(id="U1", kind="objective", content="Maximize weekly profit."),
        Unit(id="U2", kind="objective", content="Overtime hours should also be minimized."),
    ]
    assert annotate("U2", units).severity == "P1"


def test_rubric_shape_and_fact_bounded_answer():
    out = annotate("U5")
    assert len(out.reference_questions) >= 2 and len(out.failure_modes) >= 1
    assert all(q.endswith("?") for q in out.reference_questions)
    assert not any("12" in q for q in out.reference_questions), "a question gives the hidden number away"
    assert "12" in out.simulator_answer and "crates" in out.simulator_answer
    assert re.fullmatch(r"[a-z0-9]+(_[a-z0-9]+){0,5}", out.name)
    assert "van" in out.name.split("_")
    assert out.semantic_hit_rule and out.severity_reason


def test_objective_questions_ask_for_the_goal():
    out = annotate("U7")
    assert any("objective" in q.lower() or "goal" in q.lower() for q in out.reference_questions)
    assert "profit" in out.simulator_answer
    assert out.name.startswith("maximize")


def test_topic_keeps_entity_identifiers_and_drops_numbers():
    assert topic("Product II cannot be made on line B in the first 3 weeks.") == \
        "product II line B first weeks"


def test_validators_reject_bad_rubrics():
    good = annotate("U5").model_dump()
    with pytest.raises(ValidationError):
        SlotAnnotation(**{**good, "name": "Not Snake Case"})
    with pytest.raises(ValidationError):
        SlotAnnotation(**{**good, "name": "one_two_three_four_five_six_seven"})
    with pytest.raises(ValidationError):
        SlotAnnotation(**{**good, "reference_questions": ["Only one?"]})
    with pytest.raises(ValidationError):
        SlotAnnotation(**{**good, "failure_modes": []})
    with pytest.raises(ValidationError):
        SlotAnnotation(**{**good, "simulator_answer": "  "})


def test_deterministic_and_run_role():
    inputs = [SlotAnnotateInput(problem_id="bakery", unit=u, units=BAKERY)
              for u in BAKERY if u.id in ("U5", "U6", "U7")]
    first = run_role(SPEC, inputs, RoleConfig())
    second = run_role(SPEC, inputs, RoleConfig())
    assert [o.model_dump() for o in first] == [o.model_dump() for o in second]
    assert [o.model_dump() for o in first] == [local(i).model_dump() for i in inputs]
    assert all(isinstance(o, SlotAnnotation) for o in first)


def test_prompts_render():
    inp = SlotAnnotateInput(problem_id="bakery", unit=BAKERY[4], units=BAKERY, visible_brief="We bake bread.")
    system, user = SPEC.messages(inp)
    assert "JSON" in system["content"] and '"reference_questions"' in system["content"]
    assert "12 crates" in user["content"] and "We bake bread." in user["content"] and "[U2, data]" in user["content"]


# ---- real data ------------------------------------------------------------------------------------------------------

@pytest.mark.realdata
def test_real_cases_1_to_20_floors():
    from tasks.domains.optimization.or_toml import read_cases

    if not OR_CLARIFY.is_dir():
        pytest.skip("../shared/data/or-clarify is absent")
    cases = read_cases(OR_CLARIFY)[:20]
    kept = hidden = correct = 0
    inputs, gold = [], []
    for case in cases:
        units = {u.id: u for u in case.units}
        v = verdicts(list(case.units))
        for slot in case.hidden_slots:
            unit_id = slot.unit_ids[0]
            hidden += 1
            kept += v[unit_id].eligible
            inputs.append(SlotAnnotateInput(problem_id=case.case_id, unit=units[unit_id], units=list(case.units)))
            gold.append(slot.severity)
    outputs = run_role(SPEC, inputs, RoleConfig())
    correct = sum(o.severity == g for o, g in zip(outputs, gold))
    assert kept / hidden >= 0.97
    assert correct / len(gold) >= 0.80

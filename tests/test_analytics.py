"""The analytics domain: samples, decomposition, construction, the gap inventory, episodes and its two stages."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from tasks.domains import ConstructResult, domain_context, get_domain
from tasks.domains.analytics.decompose import HIDEABLE_KINDS, classify, decompose_text
from tasks.domains.analytics.gaps import analytics_gaps
from tasks.domains.analytics.statements import stated_aspects
from tasks.domains.api import check_domain
from tasks.domains.units import build_unit_chunk
from tasks.records import Case
from tasks.roles.config import RolesParams
from tests.conftest import ROOT

DOMAIN = get_domain("analytics")
ROLES = {"rewriter": RolesParams().rewriter.model_dump(mode="json")}


@pytest.fixture(scope="module")
def requests():
    return DOMAIN.load_records(DOMAIN.params_model(), ROOT)


@pytest.fixture(scope="module")
def cases(requests) -> list[Case]:
    cfg = DOMAIN.params_model().model_dump(mode="json")
    out = build_unit_chunk("analytics", [r.model_dump(mode="json") for r in requests], cfg, ROLES)
    assert out["failures"] == []
    return [Case.model_validate(c) for c in out["cases"]]


def test_the_domain_satisfies_the_api():
    assert check_domain(DOMAIN) == []
    assert DOMAIN.evaluation == "episodes" and DOMAIN.gap_inventory is not None
    assert set(DOMAIN.taxonomy.hideable) == set(HIDEABLE_KINDS) and "schema" not in DOMAIN.taxonomy.hideable


def test_samples_are_complete_requests(requests):
    assert len(requests) >= 20
    assert len({r.id for r in requests}) == len(requests)
    for r in requests:
        kinds = Counter(u.kind for u in decompose_text(r.text))
        assert kinds["context"] >= 1 and kinds["schema"] == 1, (r.id, kinds)
        assert len(set(kinds) & set(HIDEABLE_KINDS)) >= 5, (r.id, kinds)


@pytest.mark.parametrize(("text", "kind"), [
    ("Pull the visits from the `web_sessions` table joined to `campaigns` on campaign_id.", "data_source"),
    ("Bounce rate is the share of sessions with a single page view.", "metric"),
    ("Cover the visits between 3 February and 2 March 2025.", "time_window"),
    ("Leave out traffic from our own office network.", "filter"),
    ("Break the rate down by landing page and device.", "grouping"),
    ("Return a CSV sorted by bounce rate, rounded to one decimal.", "output_format"),
])
def test_sentences_get_their_kind(text, kind):
    assert classify(text) == kind


def test_construction_hides_only_hideable_units_and_leaks_nothing(cases):
    assert len(cases) >= 20
    hidden_kinds = Counter()
    for case in cases:
        assert case.metadata.domain == "analytics" and 1 <= len(case.hidden_slots) <= 3
        units = {u.id: u for u in case.units}
        for slot in case.hidden_slots:
            unit = units[slot.unit_ids[0]]
            hidden_kinds[unit.kind] += 1
            assert unit.kind in HIDEABLE_KINDS
            assert " ".join(unit.content.split()) not in " ".join(case.brief.content.split())
            assert len(slot.reference_questions) >= 2 and slot.failure_modes and slot.simulator_answer.endswith(
                " ".join(unit.content.split()))
            if unit.kind == "metric":
                assert slot.severity == "P0"
        assert any(u.kind == "schema" for u in case.units if u.id in case.brief.visible_unit_ids)
    assert set(hidden_kinds) == set(HIDEABLE_KINDS), hidden_kinds  # every kind gets hidden somewhere


def test_construction_is_deterministic_and_the_gate_passes(cases, requests):
    from tasks.validation import gate

    cfg = DOMAIN.params_model().model_dump(mode="json")
    raw = [r.model_dump(mode="json") for r in requests[:5]]
    first = build_unit_chunk("analytics", raw, cfg, ROLES)
    assert build_unit_chunk("analytics", raw, cfg, ROLES)["cases"] == first["cases"]
    other = build_unit_chunk("analytics", raw, {**cfg, "seed": 7}, ROLES)
    assert [c["hidden_slots"] for c in other["cases"]] != [c["hidden_slots"] for c in first["cases"]]
    suite, table = DOMAIN.validation_table(ConstructResult(cases=cases, metrics={}))
    assert suite == "unit_cases" and gate(suite, table, artifact="data/cases/analytics").success


def test_reference_questions_never_state_the_hidden_fact(cases):
    for case in cases:
        units = {u.id: u for u in case.units}
        for slot in case.hidden_slots:
            fact = units[slot.unit_ids[0]].content
            numbers = set(re.findall(r"\d+", fact))
            for question in slot.reference_questions:
                assert not numbers & set(re.findall(r"\d+", question)), (question, fact)


def test_the_inventory_asks_specific_questions_about_what_the_brief_leaves_open(cases):
    case = next(c for c in cases if c.case_id == "ana_ecommerce_001")
    hidden = {u.kind for u in case.units if any(u.id in s.unit_ids for s in case.hidden_slots)}
    gaps = analytics_gaps(case.brief.content)
    asked = {g.key for g in gaps}
    assert hidden <= asked  # every hidden kind is an open gap ...
    stated = set(stated_aspects(case.brief.content))
    assert not stated & set(HIDEABLE_KINDS) & asked  # ... and nothing stated is asked
    text = " ".join(g.question for g in gaps)
    assert "`orders`" in text or "orders" in text  # built from the request's own entities
    assert not re.search(r"\b(optimi[sz]e|the plan)\b", text)
    for gap in gaps:
        assert gap.question.endswith("?") and len(gap.options) == 3 and len(set(gap.options.values())) == 3


def test_local_agents_recover_hidden_analytics_facts(cases, tmp_path):
    from tasks.evaluation.evaluate import play
    from tasks.evaluation.runs import EvalSettings, episode_store

    picked = [c for c in cases if c.case_id in ("ana_clinic_001", "ana_hotel_001", "ana_marketing_001")]
    settings = EvalSettings(methods=[{"name": "freeqa", "protocols": ["open"]}, {"name": "mc_d"}], repeats=1,
                            bootstrap=200, task_runner="serial", max_turns=8)
    results, _ = play(picked, settings, RolesParams(), episode_store(tmp_path), domain=domain_context("analytics"),
                      runner="serial")
    disclosed = sum(bool(t.disclosed_slot_ids) for r in results for t in r.episode.question_turns)
    hits = Counter(s.hit for r in results for s in r.judge.slot_scores)
    assert disclosed >= 4, disclosed  # the simulated user answers the questions that target a hidden fact
    assert hits["yes"] >= len(results), hits
    for r in results:
        for turn in r.episode.question_turns:
            assert not re.search(r"\b(optimi[sz]e|plan)\b", turn.question), turn.question


@pytest.mark.parametrize(("lines", "message"), [
    (['{"id": "a1", "text": "Count the orders."}', '{"id": "a1", "text": "Count the refunds."}'], "duplicate id 'a1'"),
    (['{"id": "a1", "text": "  "}'], "text is empty"),
    (['{"id": "a/1", "text": "Count the orders."}'], "field 'id'"),
    (['{"id": "a1", "text": "x", "units": [{"id": "U1", "kind": "objective", "content": "x"}]}'],
     "unknown unit kind 'objective'"),
])
def test_bad_requests_are_rejected_with_the_file_and_field(tmp_path, lines, message):
    from tasks.errors import InputError

    path = tmp_path / "requests.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=re.escape(message)) as err:
        DOMAIN.check_inputs(DOMAIN.params_model(samples_path=str(path)), ROOT)
    assert str(path) in str(err.value) and "\n" not in str(err.value)

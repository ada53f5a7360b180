"""evaluate@swe under simulated-user personas and its questions-vs-recovery frontier (docs/personas.md)."""

from __future__ import annotations

import importlib.util
import json

import pytest

from tasks.categories import Category
from tasks.evaluation.question_personas import facts_received, persona_answers, persona_outcome
from tasks.evaluation.question_units import QuestionRecord, QuestionUnit
from tasks.roles.personas import CORRECTION, DONT_KNOW, Persona
from tests.test_swe_eval import METHODS, FakePolicy, make_case, project, run

LIMIT = "The cache may hold at most 512 MB per worker."
VERSION = "Environment: toylib 2.1.0, Python 3.11 on Ubuntu 22.04."
SPANS = {Category.EXPECTED: LIMIT, Category.VERSION_ENV: VERSION}
WEIGHTS = {c.key: 1.0 for c in Category}


def case():
    return make_case("toy__toy-1", "toy/toy", ["Title", LIMIT, VERSION], SPANS, [Category.EXPECTED])


def unit(*answers: str | None) -> QuestionUnit:
    """One question per answer (None: the user had no information), each classified as expected behaviour."""
    return QuestionUnit(key="k", method="m", case_id=case().case_id, source_id="toy__toy-1", questions=[
        QuestionRecord(question=f"Question {n}?", label="expected_behavior", answered=a is not None,
                       answer=a or "I don't have that information.", redundant=False, answerable=True, intent=n)
        for n, a in enumerate(answers)])


def test_cooperative_answers_are_the_users_own_and_recover_the_category():
    answers = persona_answers(unit(LIMIT), Persona(name="cooperative"))
    assert [(a.answer, a.true) for a in answers] == [(LIMIT, True)]
    got = persona_outcome(case(), unit(LIMIT), Persona(name="cooperative"), WEIGHTS)
    assert got.recall == 1.0 and got.facts == 1.0


def test_terse_drops_the_unit_and_the_qualifier_and_loses_the_fact_but_not_the_category():
    (answer,) = persona_answers(unit(LIMIT), Persona(name="terse"))
    assert "512" in answer.answer and "MB" not in answer.answer and "at most" not in answer.answer
    assert answer.true
    got = persona_outcome(case(), unit(LIMIT), Persona(name="terse"), WEIGHTS)
    assert got.recall == 1.0  # the category still counts: a terse answer answers
    assert got.facts == 0.0   # but fewer than half of the answer key's words reached the agent


def test_vague_approximates_numbers_and_partial_keeps_one_sentence():
    (vague,) = persona_answers(unit(LIMIT), Persona(name="vague"))
    assert "512" not in vague.answer and "roughly 500" in vague.answer
    (partial,) = persona_answers(unit(f"{LIMIT} It was 256 MB before.\n{VERSION}"), Persona(name="partial"))
    assert partial.answer == LIMIT


def test_mistaken_gives_the_wrong_value_then_corrects_it_when_asked_again():
    mistaken = Persona(name="mistaken", probability=1.0)
    first, second = persona_answers(unit(LIMIT, LIMIT), mistaken)
    assert "1024" in first.answer and "512" not in first.answer and not first.true and first.answered
    assert second.answer == CORRECTION + LIMIT and second.true and second.corrected
    # asked once, the misstated category is not recovered (scored against the true fact); asked twice, it is
    assert persona_outcome(case(), unit(LIMIT), mistaken, WEIGHTS).recall == 0.0
    twice = persona_outcome(case(), unit(LIMIT, LIMIT), mistaken, WEIGHTS)
    assert twice.recall == 1.0 and twice.corrected and twice.misstated


def test_uncooperative_refuses_and_recovers_nothing():
    answers = persona_answers(unit(LIMIT, LIMIT), Persona(name="uncooperative", probability=1.0))
    assert [(a.answer, a.answered, a.true) for a in answers] == [(DONT_KNOW, False, False)] * 2
    assert persona_outcome(case(), unit(LIMIT), Persona(name="uncooperative", probability=1.0), WEIGHTS).recall == 0


def test_draws_are_fixed_by_case_persona_and_position():
    persona = Persona(name="uncooperative", probability=0.5)
    many = unit(*[LIMIT] * 20)
    first = [a.answered for a in persona_answers(many, persona)]
    assert first == [a.answered for a in persona_answers(many, persona)]
    assert 0 < sum(first) < 20  # some refused, some answered
    other = [a.answered for a in persona_answers(many, Persona(name="other", kind="uncooperative", probability=0.5))]
    assert other != first


def test_facts_received_weights_slots_by_category_and_ignores_untrue_answers():
    answers = persona_answers(unit(LIMIT), Persona(name="mistaken", probability=1.0))
    assert facts_received(case(), answers, WEIGHTS) == 0.0
    assert facts_received(case(), answers, {c.key: 0.0 for c in Category}) is None


PERSONAS = [{"name": "cooperative"}, {"name": "terse"}, {"name": "mistaken", "probability": 1.0},
            {"name": "uncooperative", "probability": 1.0}]


def test_the_stage_writes_the_robustness_table_and_the_frontier(tmp_path):
    root, settings = project(tmp_path, METHODS, personas=PERSONAS)
    summary = run(root, settings, tmp_path / "out", FakePolicy())
    out = tmp_path / "out"
    robust = json.loads((out / "robustness.json").read_text())
    assert robust["personas"] == ["cooperative", "terse", "mistaken", "uncooperative"]
    assert set(robust["rows"]) == set(summary["method_order"])  # ranked rows only by default
    assert "local rules" in robust["source"]
    for name, cells in robust["rows"].items():
        main = summary["methods"][name]
        # the cooperative persona is the main table's user
        assert cells["cooperative"]["weighted_recovery"] == pytest.approx(main["weighted_recovery"])
        assert cells["cooperative"]["hidden_recall"] == pytest.approx(main["hidden_recall"])
        assert cells["uncooperative"]["hidden_recall"] == 0
        assert cells["uncooperative"]["drop"] == pytest.approx(main["weighted_recovery"])
        assert cells["terse"]["hidden_recall"] == pytest.approx(main["hidden_recall"])
        assert cells["terse"]["facts_received"] <= cells["cooperative"]["facts_received"]
        assert cells["mistaken"]["hidden_recall"] <= main["hidden_recall"]
    assert robust["rows"]["ask_everything"]["terse"]["facts_received"] < \
        robust["rows"]["ask_everything"]["cooperative"]["facts_received"]
    frontier = json.loads((out / "frontier.json").read_text())
    rows = frontier["rows"]
    assert set(rows) == set(summary["method_order"]) | set(summary["reference_order"])
    assert rows["no_questions"]["reference"] and not rows["ask_everything"]["reference"]
    for name, row in rows.items():
        main = {**summary["methods"], **summary["reference_methods"]}[name]
        assert row["recall"][0] == 0
        assert all(a <= b for a, b in zip(row["recall"], row["recall"][1:]))
        assert row["recall"][-1] == pytest.approx(main["hidden_recall"])  # every list is shorter than the budget
        assert row["low"][-1] <= row["recall"][-1] <= row["high"][-1]
    for png in ("robustness.png", "frontier.png"):
        assert (out / png).read_bytes()[:4] == b"\x89PNG"
    report = (out / "report.md").read_text()
    assert "## Robustness to simulated-user personas" in report and "## Questions-vs-recovery frontier" in report
    if importlib.util.find_spec("inspect_ai"):  # one Inspect log per further persona, persona in every sample
        from inspect_ai.log import read_eval_log

        log = read_eval_log(str(out / "persona_uncooperative.eval"))
        ranked = [m for m in summary["method_order"] if summary["methods"][m]["cases"]]
        assert len(log.samples) == sum(summary["methods"][m]["cases"] for m in ranked)
        assert {s.metadata["persona"] for s in log.samples} == {"uncooperative"}
        assert all(s.scores["recall"].value == 0 for s in log.samples)
        assert not (out / "persona_cooperative.eval").exists()


def test_one_persona_writes_the_frontier_only_and_bad_settings_fail(tmp_path):
    root, settings = project(tmp_path, METHODS)
    run(root, settings, tmp_path / "out", FakePolicy())
    assert (tmp_path / "out" / "frontier.json").exists() and not (tmp_path / "out" / "robustness.json").exists()
    with pytest.raises(ValueError, match="first one cooperative"):
        project(tmp_path / "b", METHODS, personas=[{"name": "terse"}])
    with pytest.raises(ValueError, match="not a method row: nope"):
        project(tmp_path / "c", METHODS, personas=PERSONAS, persona_methods=["nope"])


# ---- the SWE value-of-information questioner ---------------------------------------------------------------------


def evpi_setup(tmp_path, **options):
    from tasks.clarifiers.question_methods import EvpiOptions, EvpiQuestioner, QuestionContext
    from tasks.roles.config import RolesParams
    from tests.test_swe_eval import cases

    def with_split(case, split):
        return case.model_copy(update={"metadata": case.metadata.model_copy(update={"split": split})})

    toy = cases()  # toylib: [E, X, V] and [R] hidden; gizmo: [I] and [X, I, F]
    train = [with_split(c, "train") for c in toy if c.metadata.source_id.startswith("toylib")]
    heldout = [with_split(c, "heldout") for c in toy if c.metadata.source_id.startswith("gizmo")]
    path = tmp_path / "cases.jsonl"
    path.write_text("".join(c.model_dump_json() + "\n" for c in [*train, *heldout]))
    weights = {c.key: 1.0 for c in Category} | {Category.VERSION_ENV.key: 0.2}
    ctx = QuestionContext(roles=RolesParams(), weights=weights, root=tmp_path)
    return EvpiQuestioner("evpi", ctx, EvpiOptions(prior_cases=str(path), **options)), train, heldout


def test_evpi_asks_the_categories_worth_their_cost_most_valuable_first(tmp_path):
    evpi, _, heldout = evpi_setup(tmp_path, question_cost=0.3)
    # belief: the training split's hidden rate (error, expected, version: 1 of 2 toylib cases; reproduction 1 of 2)
    assert evpi.belief[Category.ERROR.key] == 0.5 and evpi.belief[Category.IMPLEMENTATION.key] == 0.0
    assert evpi.values[Category.VERSION_ENV.key] == pytest.approx(0.1)  # 0.5 x weight 0.2: below the cost
    asked = evpi.categories(heldout[0])
    assert asked == [Category.ERROR, Category.REPRODUCTION, Category.EXPECTED]  # value 0.5 each, canonical order
    assert evpi.categories(heldout[0]) == evpi.categories(heldout[1])  # a prior: the same for every case
    (text,) = [c.text for c in evpi.complete(heldout[:1])]
    assert text.count("\n") == 2 and text.startswith("1. ")


def test_evpi_stops_before_the_first_question_when_the_cost_exceeds_every_value(tmp_path):
    evpi, _, heldout = evpi_setup(tmp_path, question_cost=0.6)
    assert max(evpi.values.values()) == 0.5 and evpi.categories(heldout[0]) == []
    assert [c.text for c in evpi.complete(heldout)] == ["", ""]


def test_evpi_refuses_the_cases_its_belief_was_estimated_on(tmp_path):
    evpi, train, heldout = evpi_setup(tmp_path)
    done = evpi.complete([train[0], heldout[0]])
    assert "training split" in done[0].failure and done[1].failure is None and done[1].text

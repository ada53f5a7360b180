"""InterOPT (or-clarify.md §6, §7) and our aligned / cost-aware variants: the gap ledger's rules, each stage's
failure handling through scripted mock models, the ablations' call counts, both protocols, the roles' LLM
backends, end-to-end episodes on a hand-made case, and a check on the published cases."""

from __future__ import annotations

import json
import time

import pytest
from pydantic import ValidationError

from tasks.clarifiers import interopt_roles as R
from tasks.clarifiers.base import MethodContext, get_method, reference_of
from tasks.clarifiers.ledger import GapUpdate, Ledger
from tasks.domains.optimization.context import OPTIMIZATION_CONTEXT
from tasks.domains.optimization.gaps import OPTIMIZATION
from tasks.episodes.records import USER_PREFIX, AgentView, TranscriptRow
from tasks.errors import InputError
from tasks.llm.records import RoleConfig, RoleFailure
from tasks.roles.config import RolesParams
from tasks.roles.or_user import NEEDS_CONFIRMATION
from tests.conftest import OR_CLARIFY
from tests.role_round_trip import local_example, run_with_llm


def opt_ctx(**kw) -> MethodContext:
    """A method context in the optimisation domain (given explicitly: a MethodContext has no default domain)."""
    return MethodContext(domain=OPTIMIZATION_CONTEXT, **kw)

VARIANTS = ("interopt", "interopt_wo_stage1", "interopt_wo_stage2", "interopt_aligned", "interopt_cost_aware")

BRIEF = """A cider press turns apples into three drinks and wants a monthly production plan.

| Drink | Apples per barrel (kg) | Price per barrel (EUR) |
|---|---|---|
| Dry cider | 120 | 210 |
| Sweet cider | 100 | 190 |
| Apple juice | 90 | 150 |

Shops order cider and juice every month. Growers deliver 30 tonnes of apples per month, and the press runs at most
160 hours per month."""

CASE_TOML = '''# A hand-written mini case in the OR-Clarify 0.3 format (InterOPT test fixture; not from the benchmark).
[metadata]
schema_version = "0.3"
benchmark = "OR-Clarify"
case_id = "creamery_001"

[[problem_units]]
id = "U1"
kind = "context"
content = "A village creamery plans how many crates of yogurt, kefir and quark to make each week."

[[problem_units]]
id = "U2"
kind = "data"
content = "| Product | Milk per crate (litres) | Margin per crate (EUR) |\\n|---|---|---|\\n| Yogurt | 40 | 18 |\\n| Kefir | 35 | 22 |\\n| Quark | 60 | 30 |"

[[problem_units]]
id = "U3"
kind = "data"
content = "The farm co-operative delivers 3000 litres of milk per week."

[[problem_units]]
id = "U4"
kind = "data"
content = "The filling line can run 60 hours per week and fills one crate in 0.5 hours."

[[problem_units]]
id = "U5"
kind = "constraint"
content = "A school contract requires at least 20 crates of kefir every week."

[[problem_units]]
id = "U6"
kind = "objective"
content = "Maximise the total weekly margin."

[[hidden_slots]]
slot_id = "H1"
name = "kefir_school_contract_minimum"
severity = "P1"
severity_reason = "Without the contract floor the plan may drop kefir whenever quark earns more per litre of milk."
problem_unit_id = "U5"
reference_acceptable_questions = ["Is there a minimum number of kefir crates you must make each week?", "Do any contracts oblige you to produce a certain amount of kefir?"]
semantic_hit_rule = "The agent asks whether kefir has a weekly minimum, for example from a customer contract."
failure_modes = ["Letting the plan make no kefir", "Treating kefir output as free"]
simulator_answer = "Yes, our school contract needs at least 20 crates of kefir every week."

[[hidden_slots]]
slot_id = "H2"
name = "maximise_weekly_margin"
severity = "P0"
severity_reason = "Without a goal the plan has nothing to optimise."
problem_unit_id = "U6"
reference_acceptable_questions = ["What should the weekly plan optimise?", "Is the goal to maximise the total weekly margin?"]
semantic_hit_rule = "The agent asks what the plan's objective is, e.g. whether to maximise margin."
failure_modes = ["Maximising the number of crates instead of margin"]
simulator_answer = "We want the plan with the largest total margin per week."

[initial_brief]
visible_unit_ids = ["U1", "U2", "U3", "U4"]
content = "A village creamery plans how many crates of yogurt, kefir and quark to make each week.\\n\\n| Product | Milk per crate (litres) | Margin per crate (EUR) |\\n|---|---|---|\\n| Yogurt | 40 | 18 |\\n| Kefir | 35 | 22 |\\n| Quark | 60 | 30 |\\n\\nThe farm co-operative delivers 3000 litres of milk per week. The filling line can run 60 hours per week and fills one crate in 0.5 hours."

[simulator]
business_role = "creamery manager"
knowledge_boundary = "Knows the hidden facts when asked; invents nothing else."

[solver_verification]
status = "not_run"
notes = ""
'''  # noqa: E501 - TOML fixture written to disk verbatim; its long values stay on one line


# ---- helpers ------------------------------------------------------------------------------------------------------


def view(transcript=(), protocol="mc_d", max_turns=20):
    rows = list(transcript)
    turn = max((r.turn for r in rows), default=0) + 1
    return AgentView(case_id="cider_001", brief=BRIEF, protocol=protocol, transcript=rows, turn=turn,
                     max_turns=max_turns)


def agent_row(turn, action):
    return TranscriptRow(turn=turn, speaker="agent", content=action.public_text(),
                         structured={"action": "question", **({"options": action.options} if action.options else {})})


def pick(letter):
    return lambda turn, action: TranscriptRow(turn=turn, speaker="user", structured={"choice": letter},
                                              content=f"Business user selected option {letter}.")


def say(text):
    return lambda turn, action: TranscriptRow(turn=turn, speaker="user", content=USER_PREFIX + text)


def drive(agent, reply, protocol="mc_d", max_turns=20):
    transcript, actions = [], []
    for turn in range(1, max_turns + 1):
        action = agent.act(view(transcript, protocol, max_turns))
        actions.append(action)
        if action.kind != "ask":
            break
        transcript += [agent_row(turn, action), reply(turn, action)]
    return actions, transcript


def new_agent(name="interopt", protocol="mc_d", ctx=None, **options):
    method = get_method(name, options=options)
    return method.new_agent("cider_001", BRIEF, protocol, seed=0, ctx=ctx or opt_ctx())


def mock_model(**script):
    from tasks.llm.providers import ensure_registered
    from tasks.llm.providers.mock import MockScript, register

    ensure_registered()
    script = MockScript(**script)
    return register(f"interopt-{time.time_ns()}", script), script


def llm_ctx(tmp_path, **roles):
    from tasks.llm.cache import CallCache
    from tasks.llm.client import LLMClient

    configs = {name: RoleConfig(backend="llm", model=model, max_retries=0, max_regenerations=0)
               for name, model in roles.items()}
    return opt_ctx(roles=RolesParams(**configs), client=LLMClient(CallCache(tmp_path / "calls.sqlite")))


STATE = {"confirmed_business_goal": "Not confirmed yet: the goal", "confirmed_decision_scope": ["barrels per drink"],
         "confirmed_constraints_and_rules": ["apple supply"], "known_inputs_entities_and_indices": ["three drinks"],
         "unresolved_business_assumptions": ["the goal"]}


def candidates_json(frontier: str) -> str:
    q = {"question": "What should the monthly plan optimise?", "allow_other": True, "frontier_gap_id": frontier,
         "options": {"A": "Maximise revenue", "B": "Minimise apple waste", "C": "Maximise barrels pressed"}}
    return json.dumps({"decision": "ASK", "C1": STATE, "C2": STATE, "C3": STATE, "Q1": q, "Q2": q, "Q3": q,
                       "deep_search_decision_evidence": "The goal is open."})


# ---- the ledger ---------------------------------------------------------------------------------------------------


def upd(description, category="constraint_set"):
    return GapUpdate(category=category, description=description, evidence_quote="quote")


def test_ledger_adds_at_most_three_per_turn_and_records_the_overflow():
    ledger = Ledger()
    result = ledger.apply([upd(f"Limit on drink {i} is unknown.") for i in range(5)], turn=1)
    assert [r.gap_id for r in result.added] == ["G001", "G002", "G003"]
    assert len(result.dropped_over_limit) == 2 and result.error
    assert ledger.counters()["ledger_update_limit_error_count"] == 1 and ledger.counters()["ledger_add_count"] == 3
    assert all(r.status == "OPEN" and r.created_turn == 1 for r in ledger.rows)
    ledger.apply([upd("Another gap.")], turn=2)
    assert ledger.rows[-1].gap_id == "G004" and ledger.rows[-1].created_turn == 2


def test_ledger_skips_and_counts_duplicates_after_normalising_case_and_spaces():
    ledger = Ledger()
    ledger.apply([upd("Whether demand must be met in full is not stated.")], turn=1)
    result = ledger.apply([upd("whether  demand must be MET in full\nis not stated."), upd("New gap."),
                           upd("new   GAP.")], turn=2)
    assert [r.description for r in result.added] == ["New gap."]
    assert len(result.duplicates) == 2
    assert ledger.counters()["ledger_duplicate_skipped_count"] == 2 and ledger.counters()["ledger_final_size"] == 2


def test_mark_asked_moves_open_to_asked_and_bad_ids_are_counted_not_raised():
    ledger = Ledger()
    ledger.apply([upd("Gap one."), upd("Gap two.")], turn=1)
    assert ledger.mark_asked("G002", turn=3)
    row = ledger.get("G002")
    assert (row.status, row.asked_turn, row.updated_turn, row.ask_count) == ("ASKED", 3, 3, 1)
    assert not ledger.mark_asked("G009", turn=3)  # unknown id
    assert not ledger.mark_asked("G002", turn=4)  # not OPEN any more
    assert not ledger.mark_resolved("G002", turn=4)  # RESOLVED only in aligned mode
    counters = ledger.counters()
    assert counters["ledger_consume_error_count"] == 3 and counters["ledger_asked_count"] == 1
    assert counters["ledger_final_open_count"] == 1
    aligned = Ledger(allow_resolved=True)
    aligned.apply([upd("Gap one.")], turn=1)
    aligned.mark_asked("G001", turn=1)
    assert aligned.mark_resolved("G001", turn=2) and aligned.get("G001").status == "RESOLVED"


def test_gap_search_output_rules():
    with pytest.raises(ValidationError, match="NO_NEW_GAP"):
        R.GapSearchOutput(decision="NO_NEW_GAP", search_summary="none", updates=[upd("x")])
    with pytest.raises(ValidationError):
        GapUpdate(operation="DELETE", category="objective", description="x")
    with pytest.raises(ValidationError):
        GapUpdate(category="budget", description="x")
    with pytest.raises(ValidationError, match="at least one gap"):
        R.OpenGapSearchOutput(search_summary="", ready_to_model=False, gaps=[])


def test_local_gap_search_adds_inventory_gaps_three_at_a_time_without_repeats():
    out = R.gap_search_local(R.GapSearchInput(brief=BRIEF), OPTIMIZATION_CONTEXT)
    assert out.decision == "CONTINUE" and len(out.updates) == 3
    assert out.updates[0].category == "objective" and "Dry cider" in " ".join(u.description for u in out.updates)
    ledger = Ledger()
    seen = []
    for turn in range(1, 10):
        out = R.gap_search_local(R.GapSearchInput(brief=BRIEF, ledger=list(ledger.rows)), OPTIMIZATION_CONTEXT)
        if out.decision == "NO_NEW_GAP":
            break
        seen += ledger.apply(out.updates, turn).added
    assert out.decision == "NO_NEW_GAP" and out.updates == []
    assert len(seen) == len(R.all_gaps(OPTIMIZATION, BRIEF)) >= 6 and ledger.duplicate_skipped_count == 0


# ---- choice InterOPT ----------------------------------------------------------------------------------------------


def test_factories_build_methods_with_the_fixed_attributes():
    for name in VARIANTS:
        method = get_method(name)
        assert (method.name, method.protocols, method.uses_detector) == (name, ("open", "mc_d"), True)
        assert reference_of(name) is None  # ranked with the methods
        with pytest.raises(ValueError):
            method.new_agent("x", BRIEF, "mc", seed=0, ctx=opt_ctx())
    with pytest.raises(InputError, match="question_budegt"):
        get_method("interopt_cost_aware", options={"question_budegt": 3})
    assert get_method("interopt_cost_aware", options={"question_cost": 1.5}).options.question_cost == 1.5


def test_choice_interopt_asks_bound_questions_by_priority_and_ends_ready():
    agent = new_agent()
    actions, transcript = drive(agent, pick("A"))
    asks = [a for a in actions if a.kind == "ask"]
    # every gap of the brief, and the link the first confirmed one revealed (Dry cider - Apple juice)
    revealed = R.revealed_gaps(OPTIMIZATION, BRIEF, transcript)
    assert [g.key for g in revealed] == ["relation:dry cider|apple juice"]
    assert actions[-1].kind == "ready" and len(asks) == len(R.all_gaps(OPTIMIZATION, BRIEF)) + 1
    assert "optimise" in asks[0].question and "Maximise the total profit" in asks[0].options.values()
    assert all(sorted(a.options) == ["A", "B", "C"] for a in asks)
    assert len({a.question for a in asks}) == len(asks)
    c = agent.counters()
    assert c["ledger_asked_count"] == len(asks) == c["selector_calls"] and c["ledger_final_open_count"] == 0
    assert c["gap_search_calls"] == c["candidate_calls"] == len(actions)
    assert c["binding_regen_count"] == c["selector_fallbacks"] == c["ledger_consume_error_count"] == 0
    assert c["ledger_unbound_turn_count"] == 0 and c["ready_with_open_gaps_count"] == 0
    events = agent.event_logs()["ledger_events"]
    assert len(events) == len(actions)
    first = events[0]
    assert first["gap_search"]["ledger_before"] == [] and len(first["gap_search"]["applied_updates"]) == 3
    assert set(first["candidates"]) == {"Q1", "Q2", "Q3"} and first["selected_question_id"] == "Q1"
    assert first["ledger_consumed"] == "G001" and first["visibility"]["ledger"] == "private"
    # the READY summary reads the chosen options back
    assert asks[0].options["A"] in actions[-1].summary


def test_unbound_candidates_regenerate_then_fail_as_deep_search_format_invalid(tmp_path):
    model, script = mock_model(outputs=[candidates_json("G999")])
    agent = new_agent(ctx=llm_ctx(tmp_path, or_candidate_agent=model))
    action = agent.act(view())
    assert action.kind == "invalid" and action.failure == "deep_search_agent_format_invalid"
    c = agent.counters()
    assert c["binding_regen_count"] == 3 and c["candidate_calls"] == 3 and script.calls == 3
    assert c["selector_calls"] == 0 and c["ledger_asked_count"] == 0
    # every regeneration carried the binding feedback to the model
    assert "not bound to an OPEN gap" in script.requests[-1][-1]["content"]
    [event] = agent.event_logs()["ledger_events"]
    assert [a["unbound"] for a in event["agent_attempts"]] == [["Q1", "Q2", "Q3"]] * 3


def test_a_regenerated_bound_candidate_is_accepted(tmp_path):
    model, _ = mock_model(outputs=[candidates_json("G999"), candidates_json("G001")])
    agent = new_agent(ctx=llm_ctx(tmp_path, or_candidate_agent=model))
    action = agent.act(view())
    assert action.kind == "ask" and action.question == "What should the monthly plan optimise?"
    c = agent.counters()
    assert c["binding_regen_count"] == 1 and c["candidate_calls"] == 2 and c["ledger_asked_count"] == 1
    assert agent.ledger.get("G001").status == "ASKED"


def test_unparseable_candidates_three_times_fail_the_run(tmp_path):
    model, _ = mock_model(outputs=["I will just chat instead."])
    agent = new_agent(ctx=llm_ctx(tmp_path, or_candidate_agent=model))
    action = agent.act(view())
    assert action.failure == "deep_search_agent_format_invalid"
    assert agent.counters()["deep_search_format_errors"] == 3 and agent.counters()["binding_regen_count"] == 0


def test_selector_garbage_three_times_falls_back_to_q1(tmp_path):
    model, script = mock_model(outputs=["Q2 looks best to me"])
    agent = new_agent(ctx=llm_ctx(tmp_path, or_question_selector=model))
    action = agent.act(view())
    assert action.kind == "ask"
    c = agent.counters()
    assert c["selector_calls"] == 3 and c["selector_fallbacks"] == 1 and script.calls == 3
    [event] = agent.event_logs()["ledger_events"]
    assert event["fallback"] == "selector_failed_after_3_attempts" and event["selected_question_id"] == "Q1"
    assert action.question == event["candidates"]["Q1"]["question"] and "optimise" in action.question
    assert len(event["selector_attempts"]) == 3 and all("error" in a for a in event["selector_attempts"])


def test_a_valid_llm_selector_choice_is_used(tmp_path):
    model, _ = mock_model(outputs=[json.dumps({"evaluation_process": "Q2 targets a hard rule.",
                                               "selected_question_id": "Q2"})])
    agent = new_agent(ctx=llm_ctx(tmp_path, or_question_selector=model))
    action = agent.act(view())
    [event] = agent.event_logs()["ledger_events"]
    assert event["selected_question_id"] == "Q2" and action.question == event["candidates"]["Q2"]["question"]
    assert agent.ledger.get(event["candidates"]["Q2"]["frontier_gap_id"]).status == "ASKED"


def test_gap_search_failure_is_recorded_and_the_agent_goes_on(tmp_path):
    model, _ = mock_model(outputs=["no json here"])
    agent = new_agent(ctx=llm_ctx(tmp_path, or_gap_search=model))
    action = agent.act(view())
    assert action.kind == "ask" and "optimise" in action.question
    c = agent.counters()
    assert c["gap_search_errors"] == 1 and c["ledger_final_size"] == 0 and c["ledger_unbound_turn_count"] == 1
    [event] = agent.event_logs()["ledger_events"]
    assert "error" in event["gap_search"] and event["candidates"]["Q1"]["frontier_gap_id"] == "NONE"


def test_without_stage1_no_gap_search_runs_and_candidates_bind_to_none(tmp_path):
    model, script = mock_model(raise_always=RuntimeError("gap search must not run"))
    agent = new_agent("interopt_wo_stage1", ctx=llm_ctx(tmp_path, or_gap_search=model))
    actions, _ = drive(agent, pick("B"))
    # every picked option settles its gap, so the transcript reading closes each gap after one question
    assert actions[-1].kind == "ready" and len(actions) - 1 == len(R.all_gaps(OPTIMIZATION, BRIEF))
    c = agent.counters()
    assert c["gap_search_calls"] == 0 and script.calls == 0
    assert c["ledger_final_size"] == 0 and c["ledger_unbound_turn_count"] == len(actions) - 1
    assert c["selector_calls"] == len(actions) - 1
    events = agent.event_logs()["ledger_events"]
    assert all(q["frontier_gap_id"] == "NONE" for e in events[:-1] for q in e["candidates"].values())
    assert all("gap_search" not in e for e in events)


def d_comment(text):
    return lambda turn, action: TranscriptRow(turn=turn, speaker="user", structured={"choice": "D", "comment": text},
                                              content=f"Business user response: none of the offered options match. "
                                                      f"{text}")


def by_question(replies):
    """A scripted user: the first reply whose key occurs in the question, else option A."""
    def reply(turn, action):
        return next((r for key, r in replies.items() if key in action.question), pick("A"))(turn, action)
    return reply


ABLATION_USER = by_question({
    "met in full": d_comment("Late delivery is fine, and Apple juice is limited to 40 barrels a month."),
    "rule on Sweet cider": d_comment("Dry cider is capped at 50 barrels a month."),
})
"""The demand reply settles the Apple juice limit in passing; the Sweet cider reply is about Dry cider."""


def asked(actions):
    return [a.question for a in actions if a.kind == "ask"]


def test_without_stage1_the_transcript_reading_reasks_and_skips_what_the_ledger_would_track():
    runs = {name: drive(new_agent(name), ABLATION_USER) for name in ("interopt", "interopt_wo_stage1")}
    actions = {name: run[0] for name, run in runs.items()}
    full, wo1 = asked(actions["interopt"]), asked(actions["interopt_wo_stage1"])
    # the ledger asks every gap once, whatever the reply (and the gap search adds the ones the replies reveal)
    transcript = runs["interopt"][1]
    assert len(full) == len(set(full)) == len(R.stage1_gaps(OPTIMIZATION, BRIEF, transcript))
    assert sum("Apple juice that the request" in q for q in full) == 1
    # without it: the reply about Dry cider leaves Sweet cider open (asked again, narrower), and the Apple juice
    # limit stated in passing is never asked
    assert sum("Sweet cider that the request" in q for q in wo1) == 1
    assert sum("practice on rules on Sweet cider" in q for q in wo1) == 1
    assert not any("rule on Apple juice" in q or "rules on Apple juice" in q for q in wo1)
    assert wo1 != full and actions["interopt_wo_stage1"][-1].kind == "ready"
    # and it is not the generic MC-D agent, which covers each gap category once and stops
    mc_d = asked(drive(get_method("mc_d").new_agent("cider_001", BRIEF, "mc_d", seed=0, ctx=opt_ctx()),
                       ABLATION_USER)[0])
    assert len(mc_d) == len({g.category for g in R.all_gaps(OPTIMIZATION, BRIEF)}) < len(wo1) and mc_d != wo1


def test_transcript_reading_lets_a_gap_go_after_two_unsettled_asks():
    agent = new_agent("interopt_wo_stage1")
    actions, _ = drive(agent, d_comment("I don't have that information."))
    questions = asked(actions)
    assert actions[-1].kind == "ready" and len(questions) == 2 * len(R.all_gaps(OPTIMIZATION, BRIEF))
    assert agent.counters()["gap_search_calls"] == 0
    for gap in R.all_gaps(OPTIMIZATION, BRIEF):
        assert questions.count(gap.question) == 1 and questions.count(R.narrow_question(gap, "mc_d")) == 1


def test_open_without_stage1_reasks_unconfirmed_points_that_interopt_asks_once():
    full = asked(drive(new_agent(protocol="open"), say(NEEDS_CONFIRMATION), protocol="open")[0])
    agent = new_agent("interopt_wo_stage1", protocol="open")
    wo1 = asked(drive(agent, say(NEEDS_CONFIRMATION), protocol="open")[0])
    gaps = R.all_gaps(OPTIMIZATION, BRIEF)
    checks = [g for g in gaps if g.category in R.ASSUMPTION_CATEGORIES]  # Stage 2's readiness review, once each
    assert len(full) == len(gaps) + len(checks) and len(wo1) == 2 * len(gaps)
    assert sum(q.startswith("For now, may I assume") for q in wo1) == len(gaps)
    assert agent.counters()["gap_search_calls"] == 0


def test_without_stage2_one_direct_call_per_turn_and_no_candidates_or_selector(tmp_path):
    cand, cand_script = mock_model(raise_always=RuntimeError("no candidates without stage 2"))
    sel, sel_script = mock_model(raise_always=RuntimeError("no selector without stage 2"))
    agent = new_agent("interopt_wo_stage2", ctx=llm_ctx(tmp_path, or_candidate_agent=cand, or_question_selector=sel))
    actions, _ = drive(agent, pick("C"))
    assert actions[-1].kind == "ready"
    c = agent.counters()
    assert c["candidate_calls"] == c["selector_calls"] == 0 == cand_script.calls == sel_script.calls
    assert c["direct_question_calls"] == len(actions) and c["ledger_asked_count"] == len(actions) - 1
    logs = agent.event_logs()
    assert "ledger_events" not in logs and len(logs["ledger_direct_question_events"]) == len(actions)
    assert logs["ledger_direct_question_events"][0]["selected_gap_ref"] == "N1"
    assert agent.ledger.get("G001").status == "ASKED"


def test_without_stage2_asks_in_discovery_order_not_the_selectors_priority():
    full_agent, direct_agent = new_agent(), new_agent("interopt_wo_stage2")
    full, direct = asked(drive(full_agent, pick("A"))[0]), asked(drive(direct_agent, pick("A"))[0])
    # the direct question is the oldest OPEN gap: the ledger's order of discovery (the gap search's own order)
    rows = sorted(direct_agent.ledger.rows, key=lambda r: r.asked_turn)
    assert [r.gap_id for r in rows] == sorted(r.gap_id for r in rows)
    assert direct == [R.template_for(OPTIMIZATION, r, BRIEF).question for r in rows]
    # the selector ranks rules above relations: it asks the third drink's limit before the first relation
    limit, relation = "rule on Apple juice", "Do Dry cider and Sweet cider"
    first = {name: next(i for i, q in enumerate(qs) if limit in q or relation in q)
             for name, qs in (("full", full), ("direct", direct))}
    assert limit in full[first["full"]] and relation in direct[first["direct"]]
    assert sorted(full) == sorted(direct)  # the same gaps, asked once each, in another order
    c = direct_agent.counters()
    assert c["selector_calls"] == c["candidate_calls"] == 0 and c["gap_search_calls"] == 0
    assert c["direct_question_calls"] == len(direct) + 1


def test_direct_question_bound_to_a_missing_new_gap_is_a_consume_error(tmp_path):
    payload = {"decision": "ASK", "search_summary": "one gap", "selected_gap_ref": "N3",
               "updates": [{"operation": "ADD", "category": "objective", "description": "The goal is open.",
                            "evidence_quote": "wants a monthly production plan"}],
               "question": "What should the plan optimise?", "allow_other": True,
               "options": {"A": "Revenue", "B": "Apple use", "C": "Barrels"}}
    model, _ = mock_model(outputs=[json.dumps(payload)])
    agent = new_agent("interopt_wo_stage2", ctx=llm_ctx(tmp_path, or_direct_question=model))
    action = agent.act(view())
    assert action.kind == "ask"
    c = agent.counters()
    assert c["ledger_consume_error_count"] == 1 and c["ledger_unbound_turn_count"] == 1
    assert c["ledger_add_count"] == 1 and agent.ledger.get("G001").status == "OPEN"


def test_ready_with_open_gaps_is_accepted_and_counted(tmp_path):
    ready = {"decision": "READY", "C1": STATE, "C2": STATE, "C3": STATE, "evidence": "enough",
             "summary": "Maximise revenue subject to apples and press hours."}
    model, _ = mock_model(outputs=[json.dumps(ready)])
    agent = new_agent(ctx=llm_ctx(tmp_path, or_candidate_agent=model))
    action = agent.act(view())
    assert action.kind == "ready" and action.summary == ready["summary"]  # the published variant keeps the summary
    assert agent.counters()["ready_with_open_gaps_count"] == 1 and agent.counters()["ledger_final_open_count"] == 3


# ---- our variants -------------------------------------------------------------------------------------------------


def test_aligned_mode_keeps_an_unanswered_gap_unresolved_and_reasks_it_once():
    unsure = "Business user response: none of the offered options match. That still needs internal confirmation."

    def reply(turn, action):
        if "optimise" in action.question or "practice on the goal" in action.question:
            return TranscriptRow(turn=turn, speaker="user", content=unsure)
        return pick("A")(turn, action)

    agent = new_agent("interopt_aligned")
    actions, _ = drive(agent, reply)
    asks = [a.question for a in actions if a.kind == "ask"]
    assert actions[-1].kind == "ready"
    objective = agent.ledger.get("G001")
    assert objective.category == "objective" and objective.status == "ASKED" and objective.ask_count == 2
    assert sum("optimise" in q for q in asks) == 1 and sum("current practice on the goal" in q for q in asks) == 1
    assert all(r.status == "RESOLVED" for r in agent.ledger.rows if r.gap_id != "G001")
    c = agent.counters()
    assert c["gap_reask_count"] == 1 and c["ledger_resolved_count"] == len(agent.ledger.rows) - 1
    assert c["alignment_calls"] == len(asks)
    assert f"Still needs confirmation: {objective.description}" in actions[-1].summary


PRODUCTS = """A workshop makes Product 1 and Product 2 on one lathe and wants a weekly plan.

| Product | Lathe hours per unit | Profit per unit (EUR) |
|---|---|---|
| Product 1 | 2 | 30 |
| Product 2 | 3 | 45 |"""


def settles(reply, question="Is there any limit or rule on Product 2 that the request does not mention?",
            category="constraint_set", description="Limits or rules on Product 2 are not stated.", options=None):
    out = R.alignment_local(R.AlignmentInput(
        brief=PRODUCTS, gap_category=category, gap_description=description, question=question,
        options={"A": "Product 2 has an upper limit", "B": "Product 2 has a minimum requirement",
                 "C": "No extra rule applies to Product 2"} if options is None else options, reply=reply),
        OPTIMIZATION_CONTEXT)
    return out.settled


D = "Business user response: none of the offered options match. "


def test_alignment_settles_a_picked_option_or_a_rule_for_the_asked_subject():
    assert settles("Business user selected option B.")
    assert not settles("Business user selected option C.", options={"A": "x", "B": "y"})  # not offered
    assert settles(D + "Product 2 can be made at most 12 times a week.")
    assert settles(USER_PREFIX + "Yes, Product 2 needs at least 5 units for a standing order.")
    assert settles(USER_PREFIX + "No.")  # a clear no to a yes/no question


def test_alignment_leaves_the_gap_open_after_i_dont_have_that_information():
    assert not settles(USER_PREFIX + "I don't have that information.")
    assert not settles(D + "I don't have that information.")
    assert not settles(USER_PREFIX + NEEDS_CONFIRMATION)
    assert settles(USER_PREFIX + "We don't have a minimum for Product 2, only a maximum of 12.")


def test_alignment_leaves_the_gap_open_after_a_d_comment_that_does_not_answer():
    objective = {"question": "What is the goal the plan should optimise?", "category": "objective",
                 "description": "The request never says what the plan should optimise.",
                 "options": {"A": "Maximise the total profit", "B": "Minimise the total cost", "C": "Maximise output"}}
    assert not settles(D + "Only weekdays count.", **objective)
    assert settles(D + "We want the largest total profit per week.", **objective)
    assert not settles(D + "Product 2 is popular with our customers.")  # names the subject, states no rule
    assert not settles(D + "The lathe is old.")  # never names Product 2


def test_alignment_leaves_the_gap_open_after_a_reply_about_another_entity():
    assert not settles(D + "Product 1 can be made at most 10 times a week.")
    assert not settles(USER_PREFIX + "Yes, Product 1 has a cap of 10 units.")
    assert settles(USER_PREFIX + "Product 1 has a cap of 10 units and Product 2 of 8.")


def test_alignment_accepts_a_reply_about_the_whole_list_a_selection_question_names():
    listed = "Dry cider, Sweet cider and Apple juice"
    out = R.alignment_local(R.AlignmentInput(
        brief=BRIEF, gap_category="constraint_set", question=f"When choosing among {listed}, must a certain number "
                                                             f"of them be chosen?",
        gap_description=f"How many of {listed} may or must be chosen is not stated.",
        options={"A": "Exactly one", "B": "At least two", "C": "Any number"},
        reply=D + "We always press at least two different drinks from the list."), OPTIMIZATION_CONTEXT)
    assert out.settled
    # one about a single entity still has to name it
    assert not settles(D + "We always press at least two different drinks from the list.")


def test_aligned_mode_reasks_after_i_dont_have_that_information_where_interopt_moves_on():
    user = by_question({"on Dry cider": d_comment("I don't have that information.")})  # the re-ask too
    full = asked(drive(new_agent(), user)[0])
    agent = new_agent("interopt_aligned")
    actions, _ = drive(agent, user)
    aligned = asked(actions)
    assert len(aligned) == len(full) + 1 and "practice on rules on Dry cider" in " ".join(aligned)
    row = agent.ledger.find("Limits or rules on Dry cider are not stated.")
    assert row.status == "ASKED" and row.ask_count == 2
    c = agent.counters()
    assert c["gap_reask_count"] == 1 and c["alignment_calls"] == len(aligned)
    assert c["ledger_resolved_count"] == len(agent.ledger.rows) - 1
    assert f"Still needs confirmation: {row.description}" in actions[-1].summary


def test_aligned_mode_reasks_a_limit_answered_for_another_entity():
    agent = new_agent("interopt_aligned")
    actions, transcript = drive(agent, ABLATION_USER)
    row = agent.ledger.find("Limits or rules on Sweet cider are not stated.")
    assert row.ask_count == 2 and agent.counters()["gap_reask_count"] == 1
    revealed = R.revealed_gaps(OPTIMIZATION, BRIEF, transcript)
    assert len(asked(actions)) == len(R.all_gaps(OPTIMIZATION, BRIEF)) + len(revealed) + 1


def test_aligned_mode_sends_a_premature_ready_back_once(tmp_path):
    ready = {"decision": "READY", "C1": STATE, "C2": STATE, "C3": STATE, "evidence": "e", "summary": "Done."}
    model, script = mock_model(outputs=[json.dumps(ready), candidates_json("G001")])
    agent = new_agent("interopt_aligned", ctx=llm_ctx(tmp_path, or_candidate_agent=model))
    action = agent.act(view())
    assert action.kind == "ask" and agent.counters()["ready_overridden_count"] == 1 and script.calls == 2
    assert "READY is premature" in script.requests[-1][-1]["content"]


def test_cost_aware_stops_when_the_budget_is_spent():
    agent = new_agent("interopt_cost_aware", question_budget=2)
    actions, _ = drive(agent, pick("A"))
    assert [a.kind for a in actions] == ["ask", "ask", "ready"]
    c = agent.counters()
    assert c["cost_aware_stops"] == 1 and c["ready_with_open_gaps_count"] == 1 and c["candidate_calls"] == 2
    open_rows = agent.ledger.open_rows()
    assert open_rows and all(f"Still needs confirmation: {r.description}" in actions[-1].summary for r in open_rows)
    assert agent.event_logs()["ledger_events"][-1]["cost_aware"]["questions_asked"] == 2


def test_cost_aware_asks_a_gap_only_while_its_expected_value_exceeds_the_question_cost():
    agent = new_agent("interopt_cost_aware")
    drive(agent, pick("A"))  # every reply settles the gap asked
    events = agent.event_logs()["ledger_events"]
    for event in events:
        if event.get("ledger_consumed"):
            category = agent.ledger.get(event["ledger_consumed"]).category
            record = event["cost_aware"]
            value = agent.opts.risk(category) * (record["replies_settled"] + 1) / (record["replies_judged"] + 2)
            assert value > 0.75, (category, record)
    asked = [agent.ledger.get(e["ledger_consumed"]).category for e in events if e.get("ledger_consumed")]
    # before any reply the chance is 1/2: weight-1 gaps (value 0.5) wait until three replies have settled (0.8)
    assert all(agent.opts.risk(c) >= 2 for c in asked[:3])
    assert agent.counters()["alignment_calls"] == len(asked)


def test_cost_aware_stops_earlier_when_replies_do_not_settle_anything():
    full = new_agent("interopt")
    costly = new_agent("interopt_cost_aware")
    unanswered = say("I don't have that information.")
    full_actions, _ = drive(full, unanswered)
    costly_actions, _ = drive(costly, unanswered)
    n_full = sum(a.kind == "ask" for a in full_actions)
    n_costly = sum(a.kind == "ask" for a in costly_actions)
    assert costly_actions[-1].kind == "ready" and n_costly < n_full
    stop = costly.event_logs()["ledger_events"][-1]["cost_aware"]
    assert stop["replies_settled"] == 0 and all(v <= 0.75 for v in stop["values"].values())
    cheap = new_agent("interopt_cost_aware", question_cost=0.0, question_budget=50)
    cheap_actions, _ = drive(cheap, unanswered)
    # free questions: never stops for cost, so it asks every gap (the full method adds its readiness checks)
    assert sum(a.kind == "ask" for a in cheap_actions) >= len(R.all_gaps(OPTIMIZATION, BRIEF))


# ---- open InterOPT ------------------------------------------------------------------------------------------------


def test_open_interopt_asks_single_questions_once_each_and_stops_with_a_confidence():
    from tasks.roles.question_detector import split_questions

    agent = new_agent(protocol="open")
    actions, _ = drive(agent, say(NEEDS_CONFIRMATION), protocol="open")
    asks = [a.question for a in actions if a.kind == "ask"]
    assert actions[-1].kind == "ready" and 0.0 <= actions[-1].confidence < 0.5
    gaps = R.all_gaps(OPTIMIZATION, BRIEF)
    checks = [g for g in gaps if g.category in R.ASSUMPTION_CATEGORIES]
    # non-answers never make it loop: each gap once, then one assumption check each for the goal and the demand
    # policy (Stage 2's readiness review), then READY
    assert len(set(asks)) == len(asks) == len(gaps) + len(checks)
    assert all(q.startswith("For now, may I assume") for q in asks[len(gaps):])
    assert all(len(split_questions(q)) == 1 for q in asks) and not any(a.options for a in actions)
    assert "optimise" in asks[0]
    c = agent.counters()
    assert c["gap_search_calls"] == c["candidate_calls"] == len(actions)
    events = agent.event_logs()["gap_search_events"]
    assert len(events) == len(actions) and events[0]["gap_search"]["gaps"][0]["category"] == "objective"
    answered = new_agent(protocol="open")
    actions, _ = drive(answered, say("We want the most revenue."), protocol="open")
    assert actions[-1].confidence > 0.8 and "We want the most revenue." in actions[-1].summary


def test_open_gap_search_failure_fails_the_run(tmp_path):
    model, _ = mock_model(outputs=["{\"gaps\": \"many\"}"])
    agent = new_agent(protocol="open", ctx=llm_ctx(tmp_path, or_open_gap_search=model))
    action = agent.act(view(protocol="open"))
    assert action.kind == "invalid" and action.failure == "gap_search_error"
    assert agent.counters()["gap_search_errors"] == 1 and agent.counters()["candidate_calls"] == 0


def test_open_candidate_format_failures_end_as_agent_format_invalid(tmp_path):
    model, script = mock_model(outputs=[json.dumps({"decision": "ASK", "candidates": [], "public_question": "?"})])
    agent = new_agent(protocol="open", ctx=llm_ctx(tmp_path, or_open_candidate_agent=model))
    action = agent.act(view(protocol="open"))
    assert action.failure == "agent_format_invalid" and script.calls == 3
    assert agent.counters()["candidate_format_errors"] == 3


def test_open_ablations_skip_their_stage(tmp_path):
    gap_model, gap_script = mock_model(raise_always=RuntimeError("no open gap search without stage 1"))
    agent = new_agent("interopt_wo_stage1", protocol="open", ctx=llm_ctx(tmp_path, or_open_gap_search=gap_model))
    actions, _ = drive(agent, say("Nothing special there."), protocol="open")
    assert actions[-1].kind == "ready" and agent.counters()["gap_search_calls"] == 0 == gap_script.calls
    cand_model, cand_script = mock_model(raise_always=RuntimeError("no candidates without stage 2"))
    agent = new_agent("interopt_wo_stage2", protocol="open", ctx=llm_ctx(tmp_path, or_open_candidate_agent=cand_model))
    actions, _ = drive(agent, say("Nothing special there."), protocol="open")
    guidance = R.open_gap_search_local(R.OpenGapSearchInput(brief=BRIEF), OPTIMIZATION_CONTEXT)
    assert actions[0].question == guidance.gaps[0].direct_question
    assert actions[-1].kind == "ready" and actions[-1].confidence is None
    assert agent.counters()["candidate_calls"] == 0 == cand_script.calls


def test_open_aligned_reasks_an_unsettled_high_risk_gap_narrowly():
    agent = new_agent("interopt_aligned", protocol="open")
    actions, _ = drive(agent, say(NEEDS_CONFIRMATION), protocol="open")
    asks = [a.question for a in actions if a.kind == "ask"]
    assert asks[1].startswith("For now, may I assume that the goal is to")
    assert actions[-1].kind == "ready" and "Still needs confirmation" in actions[-1].summary
    gaps = R.all_gaps(OPTIMIZATION, BRIEF)
    high = [g for g in gaps if g.category in ("objective", "hard_soft_policy", "constraint_set")]
    assert agent.counters()["gap_reask_count"] == len(high) and len(asks) == len(gaps) + len(high)


def test_open_cost_aware_stops_at_the_budget():
    agent = new_agent("interopt_cost_aware", protocol="open", question_budget=3, question_cost=0.0)
    actions, _ = drive(agent, say("No."), protocol="open")
    assert [a.kind for a in actions] == ["ask"] * 3 + ["ready"]
    assert agent.counters()["cost_aware_stops"] == 1 and 0 <= actions[-1].confidence <= 1


# ---- the roles' LLM backends --------------------------------------------------------------------------------------

TURNS = [{"turn": 1, "speaker": "agent", "content": "Question: What should the plan optimise?\nOptions:\n"
                                                     "A. Maximise revenue\nB. Minimise waste\nC. Maximise barrels"},
         {"turn": 1, "speaker": "user", "content": "Business user selected option A."}]
ROW = {"gap_id": "G001", "category": "objective", "description": "The goal of the plan is not stated.",
       "evidence_quote": "wants a monthly production plan", "status": "ASKED", "created_turn": 1, "updated_turn": 1,
       "asked_turn": 1, "ask_count": 1}
OPEN_ROW = {**ROW, "gap_id": "G002", "category": "constraint_set", "status": "OPEN", "asked_turn": None,
            "ask_count": 0, "description": "Limits or rules on Dry cider are not stated."}

ROLE_EXAMPLES = {
    "or_gap_search": {"brief": BRIEF, "transcript": TURNS, "ledger": [ROW]},
    "or_candidate_agent": {"brief": BRIEF, "transcript": TURNS, "open_gaps": [OPEN_ROW]},
    "or_question_selector": {
        "transcript": TURNS, "states": [STATE],
        "candidates": [{"question_id": "Q1", "question": "Is there a cap on dry cider?", "frontier_gap_id": "G002",
                        "options": {"A": "Upper limit", "B": "Minimum", "C": "No rule"}},
                       {"question_id": "Q2", "question": "Must all orders be met?", "frontier_gap_id": "G003",
                        "options": {"A": "In full", "B": "Lost sales allowed", "C": "Backlog allowed"}}],
        "eligible_frontier": [{"gap_id": "G002", "category": "constraint_set", "description": "Dry cider limits."},
                              {"gap_id": "G003", "category": "hard_soft_policy", "description": "Order policy."}]},
    "or_direct_question": {"brief": BRIEF, "transcript": TURNS, "ledger": [ROW, OPEN_ROW]},
    "or_gap_alignment": {"gap_category": "objective", "gap_description": "The goal is not stated.",
                         "question": "What should the plan optimise?", "options": {"A": "Revenue", "B": "Waste",
                                                                                  "C": "Barrels"},
                         "reply": "Business user selected option A."},
    "or_open_gap_search": {"brief": BRIEF, "transcript": [{"turn": 1, "speaker": "agent",
                                                           "content": "QUESTION: What should the plan optimise?"},
                                                          {"turn": 1, "speaker": "user",
                                                           "content": "Business user response: Revenue."}]},
    "or_open_candidate_agent": {"brief": BRIEF, "transcript": [],
                                "guidance": R.open_gap_search_local(R.OpenGapSearchInput(brief=BRIEF),
                                                                    OPTIMIZATION_CONTEXT).model_dump()},
}


@pytest.mark.parametrize("name", sorted(ROLE_EXAMPLES))
def test_each_role_round_trips_through_its_llm_backend(name, tmp_path):
    spec, inp, expected, messages = local_example(name, ROLE_EXAMPLES[name])
    text = "\n".join(m["content"] for m in messages)
    assert '"properties"' in messages[0]["content"], "the system prompt carries the JSON schema"
    for value in inp.model_dump().values():  # every input field reaches the prompt
        for leaf in _leaves(value):
            assert leaf in text, (name, leaf)
    model, script = mock_model(outputs=[expected.model_dump_json()])
    got = run_with_llm(spec, inp, model, tmp_path)
    assert not isinstance(got, RoleFailure), got
    assert got == expected and script.requests[-1] == messages


def _leaves(value):
    """The text values of an input (first line of long texts), except the speaker tags the prompts rename."""
    if isinstance(value, dict):
        for key, v in value.items():
            if key != "speaker":
                yield from _leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v)
    elif isinstance(value, str) and value and value != "NONE":
        yield value.splitlines()[0].strip()


# ---- end to end through the episode loop ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def creamery(tmp_path_factory):
    from tasks.domains.optimization.or_toml import read_case

    path = tmp_path_factory.mktemp("case") / "creamery_001.toml"
    path.write_text(CASE_TOML)
    return read_case(path)


@pytest.mark.parametrize("protocol", ["mc_d", "open"])
@pytest.mark.parametrize("name", ["interopt", "interopt_aligned"])
def test_episodes_on_a_hand_made_case(creamery, protocol, name):
    from tasks.evaluation.episode_loop import run_episode
    from tasks.evaluation.judge import judge_episodes

    ctx = opt_ctx()
    episode = run_episode(creamery, get_method(name), protocol, repeat=1, seed=0, max_turns=20, ctx=ctx)
    assert episode.ready and episode.protocol_failure is None
    turns = episode.question_turns
    assert "optimise" in turns[0].question and any("Kefir" in t.question for t in turns)
    assert episode.atomic_questions == len(turns), "every turn asks one atomic question"
    stem = "ledger_events" if protocol == "mc_d" else "gap_search_events"
    assert len(episode.method_events[stem]) == episode.turn_count
    if protocol == "mc_d":
        assert episode.counters["ledger_asked_count"] == len(turns) == episode.counters["selector_calls"]
        assert all(t.options and t.choice in "ABCD" for t in turns)
    [judged] = judge_episodes({creamery.case_id: creamery}, [episode], ctx)
    assert {s.slot_id: s.hit for s in judged.slot_scores} == {"H1": "yes", "H2": "yes"}
    assert judged.core_exact


# ---- the published cases ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def published():
    from tasks.domains.optimization.or_toml import read_cases

    return read_cases(OR_CLARIFY)


def _hidden_objective(case) -> bool:
    units = {u.id: u for u in case.units}
    return any(units[u].kind == "objective" for s in case.hidden_slots for u in s.unit_ids)


@pytest.mark.realdata
@pytest.mark.parametrize("protocol", ["mc_d", "open"])
def test_interopt_opens_with_the_objective_when_the_published_case_hides_it(published, protocol):
    hidden = [c for c in published if _hidden_objective(c)]
    assert len(hidden) >= 60
    first = []
    for case in hidden:
        agent = get_method("interopt").new_agent(case.case_id, case.brief.content, protocol, seed=0,
                                                 ctx=opt_ctx())
        action = agent.act(AgentView(case_id=case.case_id, brief=case.brief.content, protocol=protocol, turn=1,
                                     max_turns=20))
        first.append(action.kind == "ask" and "goal the plan should optimise" in action.question)
    assert sum(first) / len(first) >= 0.9, f"{sum(first)}/{len(first)}"


@pytest.mark.realdata
def test_interopt_recovers_hidden_objectives_on_published_cases(published):
    from tasks.evaluation.episode_loop import run_episode
    from tasks.evaluation.judge import judge_episodes

    cases = [c for c in published if _hidden_objective(c)][:4]
    ctx = opt_ctx()
    episodes = [run_episode(c, get_method("interopt"), p, repeat=1, seed=0, max_turns=20, ctx=ctx)
                for c in cases for p in ("mc_d", "open")]
    judged = judge_episodes({c.case_id: c for c in cases}, episodes, ctx)
    for case, result in zip([c for c in cases for _ in range(2)], judged):
        units = {u.id: u for u in case.units}
        objective = [s.slot_id for s in case.hidden_slots if units[s.unit_ids[0]].kind == "objective"]
        hits = {s.slot_id: s.hit for s in result.slot_scores}
        assert all(hits[s] == "yes" for s in objective), (case.case_id, hits)
    assert all(e.ready and e.protocol_failure is None for e in episodes)


def test_local_gap_searches_skip_an_objective_the_transcript_settled_in_other_words():
    turns = [R.PublicTurn(turn=1, speaker="agent", content="QUESTION: What should this plan maximise or minimise?"),
             R.PublicTurn(turn=1, speaker="user", content=USER_PREFIX + "The largest monthly revenue.")]
    unsure = [turns[0], R.PublicTurn(turn=1, speaker="user", content=USER_PREFIX + NEEDS_CONFIRMATION)]
    for search in (lambda t: [u.category for u in R.gap_search_local(R.GapSearchInput(brief=BRIEF, transcript=t),
                                                                     OPTIMIZATION_CONTEXT).updates],
                   lambda t: [g.category for g in R.open_gap_search_local(R.OpenGapSearchInput(brief=BRIEF,
                                                                                            transcript=t),
                                                                           OPTIMIZATION_CONTEXT).gaps]):
        assert search([])[0] == "objective" and search(unsure)[0] == "objective"
        assert "objective" not in search(turns)

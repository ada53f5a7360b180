"""The non-InterOPT clarification methods: FreeQA, MC / MC-D, ReadyGate, the ORPilot-style adapter, a trained
policy, and the reference methods (oracle, ready_now), each driven turn by turn with hand-made views, through mock
models for their LLM backends, and end to end through the episode loop with local backends."""

from __future__ import annotations

import json
import re
import time

import pytest

from tasks.clarifiers.base import MethodContext, get_method, method_names, reference_of
from tasks.domains.optimization.context import OPTIMIZATION_CONTEXT
from tasks.episodes.records import FIRST_MESSAGE, USER_PREFIX, AgentView, TranscriptRow
from tasks.errors import InputError
from tasks.llm.records import RoleConfig, RoleFailure
from tasks.roles.config import RolesParams
from tasks.roles.or_user import NEEDS_CONFIRMATION
from tasks.roles.question_detector import split_questions
from tests.role_round_trip import local_example, run_with_llm
from tests.test_registry import import_every_role


def opt_ctx(**kw) -> MethodContext:
    """A method context in the optimisation domain (given explicitly: a MethodContext has no default domain)."""
    return MethodContext(domain=OPTIMIZATION_CONTEXT, **kw)

import_every_role()  # the role specs register where they are defined; a test run alone must not depend on another

BRIEF = """A regional bakery bakes three breads for its shops and wants a weekly baking plan.

| Bread | Oven time (min/batch) | Profit (EUR/batch) |
|---|---|---|
| Sourdough loaf | 50 | 42 |
| Seeded rye | 40 | 35 |
| Brioche | 30 | 28 |

The shops place orders each week. There are two ovens, each available 60 hours per week."""

ANSWERS = ["We want as much weekly profit as possible.", "All shop orders have to be delivered in full.",
           "Sourdough needs a starter that is only fed twice a week.", "They share the same proofing room.",
           "Baking happens Monday to Saturday.", "Batches are whole numbers.", "Nothing else comes to mind."]


# ---- helpers ------------------------------------------------------------------------------------------------------


def view(transcript=(), turn=None, protocol="open", max_turns=20, feedback=()):
    rows = list(transcript)
    if turn is None:
        turn = max((r.turn for r in rows), default=0) + 1
    return AgentView(case_id="bakery_001", brief=BRIEF, protocol=protocol, transcript=rows, turn=turn,
                     max_turns=max_turns, private_feedback=list(feedback))


def ask_row(turn, action):
    return TranscriptRow(turn=turn, speaker="agent", content=action.public_text(),
                         structured={"action": "question", **({"options": action.options} if action.options else {})})


def open_reply(turn, text):
    return TranscriptRow(turn=turn, speaker="user", content=USER_PREFIX + text)


def choice_reply(turn, letter, comment=None):
    if letter == "D":
        return TranscriptRow(turn=turn, speaker="user", structured={"choice": "D", "comment": comment},
                             content=f"Business user response: none of the offered options match. {comment}")
    return TranscriptRow(turn=turn, speaker="user", content=f"Business user selected option {letter}.",
                         structured={"choice": letter})


def drive(agent, reply, protocol="open", max_turns=20):
    """Run an agent against scripted replies; returns the actions and the transcript."""
    transcript, actions = [], []
    for turn in range(1, max_turns + 1):
        action = agent.act(view(transcript, turn, protocol, max_turns))
        actions.append(action)
        if action.kind != "ask":
            break
        transcript += [ask_row(turn, action), reply(turn, action)]
    return actions, transcript


def mock_model(**script):
    from tasks.llm.providers import ensure_registered
    from tasks.llm.providers.mock import MockScript, register

    ensure_registered()
    return register(f"clarifiers-{time.time_ns()}", MockScript(**script))


def llm_ctx(tmp_path, **roles):
    from tasks.llm.cache import CallCache
    from tasks.llm.client import LLMClient

    configs = {name: RoleConfig(backend="llm", model=model, max_retries=0, max_regenerations=1)
               for name, model in roles.items()}
    return opt_ctx(roles=RolesParams(**configs), client=LLMClient(CallCache(tmp_path / "calls.sqlite")))


# ---- FreeQA -------------------------------------------------------------------------------------------------------


def test_freeqa_asks_one_specific_question_per_turn_never_repeats_and_ends_ready():
    agent = get_method("freeqa").new_agent("bakery_001", BRIEF, "open", seed=0, ctx=opt_ctx())
    actions, _ = drive(agent, lambda t, a: open_reply(t, ANSWERS[(t - 1) % len(ANSWERS)]))
    questions = [a.question for a in actions if a.kind == "ask"]
    assert actions[-1].kind == "ready" and len(questions) >= 4
    assert len(set(questions)) == len(questions)
    assert all(len(split_questions(q)) == 1 for q in questions)
    assert any("Brioche" in q or "Sourdough loaf" in q for q in questions), "questions name the brief's entities"
    assert all(a.events and "gap_key" in a.events[0] for a in actions if a.kind == "ask")
    summary = actions[-1].summary
    assert "weekly baking plan" in summary and ANSWERS[0] in summary
    assert actions[-1].public_text().startswith("READY_TO_MODEL")


def test_freeqa_stops_after_the_user_keeps_saying_it_needs_confirmation():
    agent = get_method("freeqa").new_agent("bakery_001", BRIEF, "open", seed=0, ctx=opt_ctx())
    actions, _ = drive(agent, lambda t, a: open_reply(t, NEEDS_CONFIRMATION))
    assert [a.kind for a in actions] == ["ask", "ask", "ask", "ready"]
    assert "Still unconfirmed" in actions[-1].summary


def test_freeqa_declares_ready_at_the_last_turn():
    agent = get_method("freeqa").new_agent("bakery_001", BRIEF, "open", seed=0, ctx=opt_ctx())
    actions, _ = drive(agent, lambda t, a: open_reply(t, ANSWERS[0]), max_turns=2)
    assert [a.kind for a in actions] == ["ask", "ready"]


def test_agent_role_failure_is_an_invalid_action(tmp_path):
    model = mock_model(outputs=["I would rather chat about bread."])
    ctx = llm_ctx(tmp_path, or_generic_agent=model)
    action = get_method("freeqa").new_agent("bakery_001", BRIEF, "open", seed=0, ctx=ctx).act(view())
    assert action.kind == "invalid" and action.failure == "agent_role_failure"
    assert "or_generic_agent" in action.raw


# ---- MC / MC-D ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", ["mc", "mc_d"])
def test_choice_agents_ask_with_exactly_three_distinct_options(protocol):
    agent = get_method(protocol).new_agent("bakery_001", BRIEF, protocol, seed=0, ctx=opt_ctx())
    actions, _ = drive(agent, lambda t, a: choice_reply(t, "A"), protocol=protocol)
    asks = [a for a in actions if a.kind == "ask"]
    assert actions[-1].kind == "ready" and len(asks) >= 4
    for a in asks:
        assert sorted(a.options) == ["A", "B", "C"]
        assert len({v.lower() for v in a.options.values()}) == 3
        assert a.events[0]["allow_other"] == (protocol == "mc_d")
    assert len({a.question for a in asks}) == len(asks)
    # the READY summary reads the chosen option back, not the bare letter
    assert asks[0].options["A"] in actions[-1].summary


def test_mc_d_follows_up_a_d_comment_that_does_not_settle_the_point_once():
    def reply(turn, action):
        if "on Sourdough loaf" in action.question:  # the limit question and its follow-up
            return choice_reply(turn, "D", "Seeded rye sells out on Fridays.")
        return choice_reply(turn, "A")

    mc_d = get_method("mc_d").new_agent("bakery_001", BRIEF, "mc_d", seed=0, ctx=opt_ctx())
    asks = [a.question for a in drive(mc_d, reply, protocol="mc_d")[0] if a.kind == "ask"]
    follow_ups = [q for q in asks if q.startswith("Even if it is not final yet")]
    assert len(follow_ups) == 1 and asks.index(follow_ups[0]) == asks.index(next(
        q for q in asks if "rule on Sourdough loaf" in q)) + 1
    # under MC there is no D comment to read: the same agent asks one question fewer
    mc = get_method("mc").new_agent("bakery_001", BRIEF, "mc", seed=0, ctx=opt_ctx())
    mc_asks = [a.question for a in drive(mc, lambda t, a: choice_reply(t, "A"), protocol="mc")[0] if a.kind == "ask"]
    assert mc_asks == [q for q in asks if q not in follow_ups]
    # a D comment that settles the point is not followed up
    settled = get_method("mc_d").new_agent("bakery_001", BRIEF, "mc_d", seed=0, ctx=opt_ctx())
    calm = [a.question for a in drive(settled, lambda t, a: choice_reply(
        t, "D", "Sourdough loaf is capped at 30 batches a week.") if "on Sourdough loaf" in a.question
        else choice_reply(t, "A"), protocol="mc_d")[0] if a.kind == "ask"]
    assert calm == mc_asks


BAD_OPTIONS = [
    {"A": "Maximise profit", "B": "Minimise cost"},
    {"A": "Maximise profit", "B": "Minimise cost", "C": "Minimise waste", "D": "Something else entirely"},
    {"A": "Maximise profit", "B": "maximise profit.", "C": "Minimise cost"},
    {"A": "Maximise profit", "B": "Minimise cost", "C": "Other (please explain)"},
    {"A": "Maximise profit", "B": "Minimise cost", "C": " "},
]


@pytest.mark.parametrize("options", BAD_OPTIONS)
def test_choice_outputs_without_three_distinct_options_are_format_invalid(tmp_path, options):
    payload = {"action": "question", "question": "What should the plan optimise?", "options": options,
               "allow_other": True, "summary": ""}
    ctx = llm_ctx(tmp_path, or_choice_agent=mock_model(outputs=[json.dumps(payload)]))
    action = get_method("mc_d").new_agent("bakery_001", BRIEF, "mc_d", seed=0, ctx=ctx).act(view(protocol="mc_d"))
    assert action.kind == "invalid" and action.failure == "agent_format_invalid"


def test_a_valid_llm_choice_question_passes_through(tmp_path):
    payload = {"action": "question", "question": "QUESTION: What should the plan optimise?",
               "options": {"A": "Maximise profit", "B": "Minimise cost", "C": "Maximise loaves baked"},
               "allow_other": False}
    ctx = llm_ctx(tmp_path, or_choice_agent=mock_model(outputs=[json.dumps(payload)]))
    action = get_method("mc").new_agent("bakery_001", BRIEF, "mc", seed=0, ctx=ctx).act(view(protocol="mc"))
    assert action.kind == "ask" and action.question == "What should the plan optimise?"
    assert action.options["C"] == "Maximise loaves baked"


# ---- ReadyGate ----------------------------------------------------------------------------------------------------


def _covered_transcript():
    """A transcript where the inner MC-D agent has asked each gap category once: it is about to stop, although
    two constraint gaps (limits on Seeded rye and Brioche) were never asked."""
    agent = get_method("mc_d").new_agent("bakery_001", BRIEF, "mc_d", seed=0, ctx=opt_ctx())
    actions, transcript = drive(agent, lambda t, a: choice_reply(t, "A"), protocol="mc_d")
    assert actions[-1].kind == "ready"
    return transcript


def test_readygate_blocks_a_premature_ready_and_the_agent_asks_the_named_gap():
    from tasks.clarifiers.gaps import open_gaps
    from tasks.domains.optimization.gaps import OPTIMIZATION

    transcript = _covered_transcript()
    pending = [g for g in open_gaps(OPTIMIZATION, BRIEF, transcript) if g.category == "constraint_set"]
    assert pending, "the inner agent stopped with constraint gaps unasked"
    agent = get_method("readygate").new_agent("bakery_001", BRIEF, "mc_d", seed=0, ctx=opt_ctx())
    action = agent.act(view(transcript, protocol="mc_d"))
    assert action.kind == "ask" and action.question == pending[0].question
    assert sorted(action.options) == ["A", "B", "C"]
    assert agent.counters()["ready_gate_calls"] == 1 and agent.counters()["ready_gate_blocks"] == 1
    [event] = agent.event_logs()["counterfactual_ready_gate_events"]
    assert event["decision"] == "BLOCK" and pending[0].question in event["feedback"]
    # the feedback is private: it never reaches the public message
    assert "Not ready yet" not in action.public_text()
    assert any(e.get("decision") == "BLOCK" for e in action.events)


def test_readygate_passes_once_nothing_blocking_is_left():
    agent = get_method("readygate").new_agent("bakery_001", BRIEF, "mc_d", seed=0, ctx=opt_ctx())
    actions, _ = drive(agent, lambda t, a: choice_reply(t, "A"), protocol="mc_d")
    plain, _ = drive(get_method("mc_d").new_agent("bakery_001", BRIEF, "mc_d", seed=0, ctx=opt_ctx()),
                     lambda t, a: choice_reply(t, "A"), protocol="mc_d")
    assert actions[-1].kind == "ready"
    assert len(actions) == len(plain) + 2, "two extra constraint questions after two BLOCKs"
    counters = agent.counters()
    assert counters["ready_gate_blocks"] == 2 and counters["ready_gate_calls"] == 3
    decisions = [e["decision"] for e in agent.event_logs()["counterfactual_ready_gate_events"]]
    assert decisions == ["BLOCK", "BLOCK", "PASS"]


@pytest.mark.parametrize("script", [{"outputs": ["PASS, looks fine to me"]},
                                    {"raise_always": ValueError("reviewer down")}])
def test_a_failing_reviewer_counts_as_pass(tmp_path, script):
    if "raise_always" in script:
        import litellm

        script = {"raise_always": litellm.AuthenticationError(message="no key", llm_provider="mock", model="m")}
    ctx = llm_ctx(tmp_path, or_ready_gate=mock_model(**script))
    agent = get_method("readygate").new_agent("bakery_001", BRIEF, "mc_d", seed=0, ctx=ctx)
    action = agent.act(view(_covered_transcript(), protocol="mc_d"))
    assert action.kind == "ready"
    assert agent.counters()["ready_gate_calls"] == 1 and agent.counters()["ready_gate_blocks"] == 0
    [event] = agent.event_logs()["counterfactual_ready_gate_events"]
    assert event["decision"] == "PASS" and event["reviewer_failure"]


def test_readygate_caps_blocks_per_turn(tmp_path):
    block = json.dumps({"decision": "BLOCK", "feedback": "Something about the ovens is still vague."})
    ctx = llm_ctx(tmp_path, or_ready_gate=mock_model(outputs=[block]))
    # the inner agent has nothing left it would ask on its own and the feedback names no gap: it stays READY
    transcript = _covered_transcript()
    method = get_method("readygate", options={"max_blocks_per_turn": 2})
    agent = method.new_agent("bakery_001", BRIEF, "mc_d", seed=0, ctx=ctx)
    action = agent.act(view(transcript, protocol="mc_d"))
    assert action.kind == "ready"
    assert agent.counters()["ready_gate_blocks"] == 2 and agent.counters()["ready_gate_cap_reached"] == 1


def test_method_options_are_checked():
    with pytest.raises(InputError, match="max_blocks_per_turn"):
        get_method("readygate", options={"max_blocks_per_turn": -1})
    with pytest.raises(InputError, match=re.escape("evaluate.methods.freeqa")):
        get_method("freeqa", options={"temperature": 0.2})


# ---- ORPilot ------------------------------------------------------------------------------------------------------

NORMALISATION = [
    ('{"action": "ASK", "question": "Which shops order bread?"}', "ask", "Which shops order bread?"),
    ('{"action": "READY", "summary": "Maximise profit over three breads."}', "ready",
     "Maximise profit over three breads."),
    ("READY_TO_MODEL\nMaximise weekly profit.", "ready", "Maximise weekly profit."),
    ("READY_TO_MODEL: all set", "ready", "all set"),
    ("QUESTION: Do the two ovens share one crew?", "ask", "Do the two ovens share one crew?"),
    ("question: Is brioche baked every day?", "ask", "Is brioche baked every day?"),
    ("[INTERVIEW_COMPLETE]\nThe plan maximises weekly profit.", "ready", "The plan maximises weekly profit."),
    ("Thanks. Which breads may be left out of the plan?", "ask", "Thanks. Which breads may be left out of the plan?"),
    ("I will now build the model.", "invalid", ""),
    ("", "invalid", ""),
    ('{"action": "dance"}', "invalid", ""),
]


@pytest.mark.parametrize("message,kind,text", NORMALISATION)
def test_orpilot_normalises_raw_replies(message, kind, text):
    from tasks.clarifiers.orpilot import normalise

    action = normalise(message)
    assert action.kind == kind
    if kind == "ask":
        assert action.question == text and action.atomic_questions == 1
    elif kind == "ready":
        assert action.summary == text
    else:
        assert action.failure == "agent_format_invalid"


def test_orpilot_interviews_then_confirms_then_completes():
    method = get_method("orpilot")
    assert method.uses_detector is False and method.protocols == ("open",)
    agent = method.new_agent("bakery_001", BRIEF, "open", seed=0, ctx=opt_ctx())
    actions, _ = drive(agent, lambda t, a: open_reply(t, ANSWERS[t - 1]))
    asks = [a for a in actions if a.kind == "ask"]
    assert actions[-1].kind == "ready" and len(asks) >= 5
    assert all(a.atomic_questions == 1 for a in asks)
    assert len({a.question for a in asks}) == len(asks)
    assert asks[-1].question.startswith("To confirm my understanding") and ANSWERS[0].rstrip(".") in asks[-1].question
    assert actions[-1].events[0]["confirmation_asked"] is True
    assert not any(w in a.question.lower() for a in asks for w in ("how many", "what value", "which number"))
    assert "Brioche" in " ".join(a.question for a in asks) or "Sourdough loaf" in " ".join(a.question for a in asks)


def test_orpilot_garbage_is_a_format_failure(tmp_path):
    ctx = llm_ctx(tmp_path, or_orpilot_agent=mock_model(outputs=[json.dumps({"message": "Building the model now."})]))
    action = get_method("orpilot").new_agent("bakery_001", BRIEF, "open", seed=0, ctx=ctx).act(view())
    assert action.kind == "invalid" and action.failure == "agent_format_invalid"


# ---- reference methods --------------------------------------------------------------------------------------------


def bakery_case():
    from tasks.records import Brief, Case, CaseMetadata, HiddenSlot, Unit

    visible = [
        Unit(id="U1", kind="context", content="A regional bakery bakes three breads for its shops and wants a weekly "
                                              "baking plan."),
        Unit(id="U2", kind="data", content=BRIEF.split("\n\n")[1]),
        Unit(id="U3", kind="data", content=BRIEF.split("\n\n")[2]),
    ]
    hidden = [
        Unit(id="U4", kind="objective", content="Maximise the weekly profit of the breads baked."),
        Unit(id="U5", kind="constraint", content="At most 40 batches of brioche can be baked per week, because butter "
                                                 "deliveries are limited."),
        Unit(id="U6", kind="constraint", content="Every shop order must be delivered in full."),
    ]
    slots = [
        HiddenSlot(slot_id="H1", name="maximise_weekly_profit", severity="P0", unit_ids=["U4"],
                   simulator_answer="We want the highest weekly profit from the breads we bake.",
                   reference_questions=["Should the plan maximise weekly profit?"],
                   semantic_hit_rule="Asks what the plan should optimise."),
        HiddenSlot(slot_id="H2", name="brioche_batch_limit", severity="P1", unit_ids=["U5"],
                   simulator_answer="We can bake at most 40 batches of brioche a week because butter is limited.",
                   reference_questions=["Is there a weekly limit on brioche batches?"],
                   semantic_hit_rule="Asks about a limit on brioche production."),
        HiddenSlot(slot_id="H3", name="orders_met_in_full", severity="P1", unit_ids=["U6"],
                   simulator_answer="Every shop order has to be delivered in full.",
                   reference_questions=[],
                   semantic_hit_rule="Asks whether orders must be met in full."),
    ]
    return Case(metadata=CaseMetadata(benchmark="test", case_id="bakery_001", domain="optimization",
                                      source_id="bakery"),
                units=visible + hidden, hidden_slots=slots,
                brief=Brief(content=BRIEF, visible_unit_ids=["U1", "U2", "U3"]),
                full_text="\n\n".join(u.content for u in visible + hidden))


@pytest.mark.parametrize("protocol", ["open", "mc", "mc_d"])
def test_oracle_asks_every_slot_reference_question_then_ready(protocol):
    case = bakery_case()
    method = get_method("oracle")
    assert reference_of("oracle").kind == "privileged"
    with pytest.raises(KeyError, match="bind_cases"):
        method.new_agent(case.case_id, BRIEF, protocol, seed=0, ctx=opt_ctx())
    method.bind_cases({case.case_id: case})
    agent = method.new_agent(case.case_id, BRIEF, protocol, seed=3, ctx=opt_ctx())
    actions, _ = drive(agent, lambda t, a: open_reply(t, "Yes.") if protocol == "open" else choice_reply(t, "A"),
                       protocol=protocol)
    asks = [a for a in actions if a.kind == "ask"]
    assert [a.question for a in asks] == ["Should the plan maximise weekly profit?",
                                          "Is there a weekly limit on brioche batches?",
                                          "What should the plan assume about orders met in full?"]
    assert actions[-1].kind == "ready" and len(actions) == 4
    for a, slot in zip(asks, case.hidden_slots):
        if protocol == "open":
            assert a.options == {}
        else:
            assert slot.simulator_answer in a.options.values() and len(set(a.options.values())) == 3


def test_ready_now_is_ready_at_turn_one_and_a_default_reference_row():
    import yaml

    from tasks.clarifiers.base import reference_of
    from tests.conftest import ROOT

    action = get_method("ready_now").new_agent("bakery_001", BRIEF, "mc", seed=0, ctx=opt_ctx()).act(view())
    assert action.kind == "ready" and action.summary == BRIEF.strip()
    for domain in ("optimization", "analytics"):
        methods = yaml.safe_load((ROOT / "params.yaml").read_text())["evaluate"][domain]["methods"]
        kinds = {m.get("method", m["name"]) for m in methods}
        assert {"oracle", "ready_now"} <= kinds  # the sanity ladder's ceiling and floor run by default ...
    assert reference_of("oracle").kind == "privileged" and reference_of("ready_now").kind == "bound"  # ... apart


def test_every_method_has_the_method_attributes():
    for name in ("freeqa", "mc", "mc_d", "readygate", "orpilot", "oracle", "ready_now"):
        method = get_method(name)
        assert method.name == name and method.protocols and isinstance(method.uses_detector, bool)
        assert not hasattr(method, "privileged")  # declared once, in its @method(reference=...)
    references = {name: reference_of(name) for name in method_names()}
    assert {name: r.kind for name, r in references.items() if r} == {"oracle": "privileged", "ready_now": "bound"}
    assert all(reference_of(name) is None for name in ("freeqa", "mc", "mc_d", "readygate", "orpilot", "interopt"))


def test_a_registered_method_declares_its_reference_next_to_its_factory():
    from tasks.clarifiers.base import METHODS
    from tasks.records import MethodReference

    try:
        METHODS.add("episodes/peek", "tasks.clarifiers.reference:oracle",
                    reference=MethodReference(kind="privileged", reads="the slots"))
        assert reference_of("peek").reads == "the slots" and "episodes/freeqa" in METHODS
        assert get_method("peek").name == "peek"  # the lazy "module:factory" target resolves
        assert reference_of("peek", "questions") is None  # an episode kind is not a question-list kind
        METHODS.add("episodes/peek", "tasks.clarifiers.reference:ready_now", replace=True)
        assert reference_of("peek") is None
    finally:
        METHODS.remove("episodes/peek")


# ---- trained policy -----------------------------------------------------------------------------------------------


class FakePolicy:
    def __init__(self):
        self.calls = 0

    def ask(self, issue):
        self.calls += 1
        assert issue == BRIEF
        return ("1. Should the plan maximise weekly profit?\n2. Must every shop order be met in full?\n"
                "3. Is there a limit on brioche batches?\n2. Must every shop order be met in full?")


def test_policy_asks_its_list_in_chunks_generates_once_per_brief_then_ready():
    from tasks.clarifiers.policy import EpisodePolicyOptions, PolicyMethod

    fake = FakePolicy()
    method = PolicyMethod("policy", EpisodePolicyOptions(questions_per_turn=2), loader=lambda: fake)
    agent = method.new_agent("bakery_001", BRIEF, "open", seed=0, ctx=opt_ctx())
    actions, _ = drive(agent, lambda t, a: open_reply(t, "Yes."))
    assert [a.kind for a in actions] == ["ask", "ask", "ready"]
    assert actions[0].question == ("1. Should the plan maximise weekly profit?\n"
                                   "2. Must every shop order be met in full?")
    assert len(split_questions(actions[0].question)) == 2
    assert actions[1].question == "Is there a limit on brioche batches?"
    again = method.new_agent("bakery_001", BRIEF, "open", seed=1, ctx=opt_ctx())
    drive(again, lambda t, a: open_reply(t, "Yes."))
    assert fake.calls == 1 and method.generations == 1


def test_policy_adapter_must_exist(tmp_path):
    with pytest.raises(InputError, match="adapter") as err:
        get_method("policy", options={"adapter": str(tmp_path / "missing")})
    assert "evaluate.methods.policy" in str(err.value)
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match=re.escape("adapter_config.json")):
        get_method("policy", options={"adapter": str(tmp_path / "empty")})
    assert get_method("policy", options={"adapter": None}).options.adapter is None


def test_policy_maps_a_recorded_smollm2_label_back_to_the_loadable_base(tmp_path):
    from tasks.training.models import model_label
    from tasks.training.policy import adapter_base as _recorded_base
    from tasks.training.profiles import SMOLLM2

    cases = [(model_label(SMOLLM2), SMOLLM2), (SMOLLM2, SMOLLM2), ("org/other-model", "org/other-model")]
    for recorded, expected in cases:
        (tmp_path / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": recorded}))
        assert _recorded_base(tmp_path) == expected


def test_policy_episode_through_the_loop():
    from tasks.clarifiers.policy import EpisodePolicyOptions, PolicyMethod
    from tasks.evaluation.episode_loop import run_episode

    method = PolicyMethod("policy", EpisodePolicyOptions(), loader=FakePolicy)
    episode = run_episode(bakery_case(), method, "open", repeat=1, seed=0, max_turns=20, ctx=opt_ctx())
    assert episode.ready and episode.protocol_failure is None
    assert [t.question for t in episode.question_turns] == ["Should the plan maximise weekly profit?",
                                                            "Must every shop order be met in full?",
                                                            "Is there a limit on brioche batches?"]
    assert episode.atomic_questions == 3 and episode.counters["policy_questions_asked"] == 3


@pytest.mark.slow
def test_policy_with_the_base_model_writes_questions():
    method = get_method("policy", options={"adapter": None, "max_new_tokens": 64})
    agent = method.new_agent("bakery_001", BRIEF, "open", seed=0, ctx=opt_ctx())
    first = agent.act(view())
    assert first.kind in {"ask", "ready"}
    assert method.generations == 1 and isinstance(method.questions(BRIEF), list)
    assert method.generations == 1


# ---- LLM backends of the roles ------------------------------------------------------------------------------------

ROLE_EXAMPLES = {
    "or_generic_agent": {"brief": BRIEF, "transcript": [
        {"turn": 1, "speaker": "agent", "content": "QUESTION: What should the weekly plan optimise?",
         "structured": {"action": "question"}},
        {"turn": 1, "speaker": "user", "content": "Business user response: The highest weekly profit."}],
        "turn": 2, "max_turns": 20},
    "or_choice_agent": {"brief": BRIEF, "protocol": "mc_d", "turn": 1, "max_turns": 20,
                        "private_feedback": ["Ask whether shop orders must be met in full."]},
    "or_ready_gate": {"brief": BRIEF, "summary": "Maximise weekly profit over the three breads."},
    "or_orpilot_agent": {"brief": BRIEF, "turn": 1, "max_turns": 20},
}


@pytest.mark.parametrize("name", sorted(ROLE_EXAMPLES))
def test_role_llm_backend_round_trips_through_a_mock(name, tmp_path):
    spec, inp, expected, messages = local_example(name, ROLE_EXAMPLES[name])
    text = "\n".join(m["content"] for m in messages)
    assert '"properties"' in text, "the prompt carries the JSON schema"
    assert "Seeded rye" in text
    if name != "or_ready_gate":
        assert FIRST_MESSAGE.format(brief=BRIEF) in text
    if name == "or_choice_agent":
        assert "met in full" in text and "allow_other" in text
    got = run_with_llm(spec, inp, mock_model(rule=lambda m: expected.model_dump_json()), tmp_path)
    assert not isinstance(got, RoleFailure), got
    assert got == expected


def test_reviewer_feedback_is_cut_at_500_words():
    from tasks.clarifiers.readygate import GateOutput

    out = GateOutput(decision="BLOCK", feedback=" ".join(["word"] * 700))
    assert len(out.feedback.split()) == 500
    with pytest.raises(ValueError):
        GateOutput(decision="BLOCK", feedback="")


# ---- end to end through the episode loop --------------------------------------------------------------------------


@pytest.mark.parametrize("name,protocol", [("freeqa", "open"), ("mc_d", "mc_d"), ("readygate", "mc_d"),
                                           ("orpilot", "open"), ("oracle", "mc"), ("ready_now", "open")])
def test_episode_with_local_backends(name, protocol):
    from tasks.evaluation.episode_loop import run_episode

    case = bakery_case()
    method = get_method(name)
    if hasattr(method, "bind_cases"):
        method.bind_cases({case.case_id: case})
    episode = run_episode(case, method, protocol, repeat=1, seed=0, max_turns=20, ctx=opt_ctx())
    assert episode.protocol_failure is None and episode.ready
    questions = [t.question for t in episode.question_turns]
    assert len(set(questions)) == len(questions)
    assert episode.transcript[-1].content.startswith("READY_TO_MODEL")
    hidden = [s.simulator_answer for s in case.hidden_slots]
    agent_text = " ".join(r.content for r in episode.transcript if r.speaker == "agent" and r.turn == 1)
    assert not any(h in agent_text for h in hidden) or name == "oracle"
    if name == "ready_now":
        assert episode.turn_count == 1 and not questions
    else:
        assert len(questions) >= 3
    if name == "orpilot":
        assert episode.atomic_questions == len(questions)
    if protocol != "open":
        assert all(len(t.options) == 3 for t in episode.question_turns)
    if name == "readygate":
        assert episode.counters["ready_gate_calls"] >= 1
        assert "counterfactual_ready_gate_events" in episode.method_events
        for row in episode.transcript:
            assert "Not ready yet" not in row.content
    if name == "oracle":
        assert all(t.match_status == "exact_match" for t in episode.question_turns)


# ---- published cases (../shared/data/or-clarify) ------------------------------------------------------------------


@pytest.mark.realdata
@pytest.mark.parametrize("name,protocol", [("freeqa", "open"), ("mc", "mc"), ("readygate", "mc_d"),
                                           ("orpilot", "open"), ("oracle", "mc_d")])
def test_local_methods_on_published_cases(name, protocol):
    from pathlib import Path

    from tasks.domains.optimization.or_toml import read_cases
    from tasks.evaluation.episode_loop import run_episode
    from tests.conftest import SHARED

    cases = read_cases(Path(SHARED / "data" / "or-clarify"))[:6]
    method = get_method(name)
    if hasattr(method, "bind_cases"):
        method.bind_cases({c.case_id: c for c in cases})
    for case in cases:
        episode = run_episode(case, method, protocol, repeat=1, seed=0, max_turns=20, ctx=opt_ctx())
        assert episode.protocol_failure is None and episode.ready, case.case_id
        questions = [t.question for t in episode.question_turns]
        assert questions and len(set(questions)) == len(questions), case.case_id
        if name == "oracle":
            assert len(questions) == len(case.hidden_slots)

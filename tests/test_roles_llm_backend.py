"""Every role's LLM backend: its prompt renders, and a model answering in the role's schema (here the scripted mock
provider replaying the local backend's answer) yields the same typed output through ``run_role``."""

from __future__ import annotations

import json
import time

import pytest

from tasks.domains.optimization.context import OPTIMIZATION_CONTEXT
from tasks.llm.cache import CallCache
from tasks.llm.client import LLMClient
from tasks.llm.providers import ensure_registered
from tasks.llm.records import RoleConfig, RoleFailure
from tasks.roles.base import run_role
from tasks.roles.config import ROLE_NAMES, RolesParams, describe_roles
from tasks.roles.registry import get_spec
from tests.test_registry import import_every_role

import_every_role()  # every declared role (ROLE_NAMES) has its spec registered

ISSUE = (
    "Calling `frobnicate(None)` crashes.\n\n```\nTraceback (most recent call last):\n  File \"app.py\", line 3\n"
    "TypeError: 'NoneType' object is not iterable\n```\n\nIt should return an empty list instead.\n"
    "I use widgetlib 2.4.1 on Python 3.11."
)
FACT = {"slot_id": "H1", "name": "oven_capacity_limit",
        "simulator_answer": "The oven holds at most 40 loaves per batch.",
        "unit_content": "Each oven batch holds at most 40 loaves.", "unit_kind": "constraint"}


UNITS = [
    {"id": "U1", "kind": "context", "content": "We run a small bakery."},
    {"id": "U2", "kind": "constraint", "content": "Each oven batch holds at most 40 loaves."},
    {"id": "U3", "kind": "objective", "content": "We want to maximise weekly profit."},
]


IO_BRIEF = "We bake rye and sourdough bread and want a weekly baking plan."
IO_TURNS = [{"turn": 1, "speaker": "agent",
             "content": "Question: What should the plan optimise?\nOptions:\nA. Maximise margin\n"
                        "B. Minimise flour use\nC. Bake the most loaves"},
            {"turn": 1, "speaker": "user", "content": "Business user selected option A."}]
IO_ROW = {"gap_id": "G002", "category": "constraint_set", "description": "Limits or rules on rye are not stated.",
          "evidence_quote": "We bake rye and sourdough bread", "status": "OPEN", "created_turn": 1, "updated_turn": 1}
IO_RYE_Q = {"question_id": "Q1", "question": "Is there a minimum number of rye loaves per day?",
            "frontier_gap_id": "G002",
            "options": {"A": "Yes, a fixed daily minimum", "B": "No minimum", "C": "Only on weekdays"}}
INTEROPT_EXAMPLES = {
    "or_gap_search": {"brief": IO_BRIEF, "transcript": IO_TURNS, "ledger": [IO_ROW]},
    "or_candidate_agent": {"brief": IO_BRIEF, "transcript": IO_TURNS, "open_gaps": [IO_ROW]},
    "or_question_selector": {"transcript": IO_TURNS, "candidates": [IO_RYE_Q], "eligible_frontier": [
        {"gap_id": "G002", "category": "constraint_set", "description": "Limits or rules on rye are not stated."}]},
    "or_direct_question": {"brief": IO_BRIEF, "transcript": IO_TURNS, "ledger": [IO_ROW]},
    "or_gap_alignment": {"gap_category": "constraint_set", "gap_description": "Limits or rules on rye are not stated.",
                         "question": IO_RYE_Q["question"], "options": IO_RYE_Q["options"],
                         "reply": "Business user selected option A."},
    "or_open_gap_search": {"brief": IO_BRIEF, "transcript": [
        {"turn": 1, "speaker": "agent", "content": "QUESTION: What should the plan optimise?"},
        {"turn": 1, "speaker": "user", "content": "Business user response: The largest weekly margin."}]},
    "or_open_candidate_agent": {"brief": IO_BRIEF, "transcript": [], "guidance": {
        "search_summary": "The goal is open.", "ready_to_model": False, "gaps": [
            {"gap_id": "objective", "category": "objective", "description": "The goal is not stated.",
             "direct_question": "What should the weekly plan optimise?", "source_status": "not stated",
             "why_material": "Without a goal there is nothing to optimise."}]}},
}
BAKERY_BRIEF = "We run a bakery that makes rye and wheat loaves and need a weekly baking plan."
EVAL_EXAMPLES = {
    **INTEROPT_EXAMPLES,
    "or_generic_agent": {"brief": BAKERY_BRIEF, "turn": 2, "max_turns": 20, "transcript": [
        {"turn": 1, "speaker": "agent", "content": "QUESTION: What should the weekly plan optimise?",
         "structured": {"action": "question"}},
        {"turn": 1, "speaker": "user", "content": "Business user response: The highest weekly profit."}]},
    "or_choice_agent": {"brief": BAKERY_BRIEF, "protocol": "mc_d", "turn": 1, "max_turns": 20,
                        "private_feedback": ["Ask whether shop orders must be met in full."]},
    "or_ready_gate": {"brief": BAKERY_BRIEF, "summary": "Maximise weekly profit over the two breads."},
    "or_orpilot_agent": {"brief": BAKERY_BRIEF, "turn": 1, "max_turns": 20},
    "or_session_judge": {
        "case_id": "bakery", "protocol": "open", "brief": "We run a bakery that makes rye and wheat loaves.",
        "max_turns": 20, "ready": True, "ready_summary": "Maximise weekly profit; each oven batch holds 40 loaves.",
        "transcript": [
            {"turn": 1, "speaker": "agent", "content": "QUESTION: What should the weekly plan optimise?"},
            {"turn": 1, "speaker": "user", "content": "Business user response: We want the largest weekly profit."},
            {"turn": 2, "speaker": "agent", "content": "READY_TO_MODEL\nMaximise weekly profit; each oven batch holds "
                                                       "40 loaves."}],
        "slots": [
            {"slot_id": "H1", "name": "weekly_objective", "severity": "P0", "hit": "yes", "evidence_location": "turn 1",
             "unit_content": "We want to maximise the weekly profit from bread sales.",
             "simulator_answer": "We want the largest weekly profit."},
            {"slot_id": "H2", "name": "oven_capacity", "severity": "P1", "hit": "no",
             "unit_content": "Each oven batch holds at most 40 loaves, and we can bake 12 batches per week.",
             "simulator_answer": "One batch holds at most 40 loaves and we can run 12 batches a week.",
             "failure_modes": ["Assuming the ovens have unlimited capacity."]}]},
}


def example(name: str) -> dict:
    return {
        "annotator": {"instance_id": "x-1", "text": ISSUE},
        "question_classifier": {"question": "Which Python version are you using?"},
        "swe_user": {"issue": ISSUE, "question": "Which version of widgetlib do you use?"},
        "or_open_user": {"brief": "We bake bread and want a weekly plan.", "facts": [FACT],
                         "question": "How many loaves fit in one oven batch?"},
        "or_choice_user": {"facts": [FACT], "question": "How many loaves fit in one oven batch?",
                           "options": {"A": "At most 40 loaves", "B": "Unlimited", "C": "At most 10 loaves"},
                           "allow_d": True},
        "redundancy_judge": {"text": ISSUE, "question": "What error do you get?"},
        "answerability_judge": {"text": ISSUE, "question": "What error do you get?"},
        "slot_hit_judge": {"slot": {"slot_id": "H1", "name": "oven_capacity_limit",
                                    "unit_content": FACT["unit_content"],
                                    "semantic_hit_rule": "Asks how many loaves one oven batch can hold."},
                           "agent_questions": ["Is there a limit on how many loaves one oven batch can hold?"]},
        "question_detector": {"turn": "1. What is the deadline? 2. Which products matter?"},
        "decomposer": {"problem_id": "bakery",
                       "text": "We run a small bakery. Each oven batch holds at most 40 loaves. "
                               "Rye bread sells for 3 euros.\n\nWe want to maximise weekly profit."},
        "slot_annotator": {"problem_id": "bakery", "unit": UNITS[1], "units": UNITS},
        "rewriter": {"problem_id": "bakery", "units": [UNITS[0], UNITS[2]]},
        "question_writer": {"incomplete_issue": ISSUE, "hidden_categories": ["Version/Environment Information"],
                            "repo": "acme/widgetlib"},
        "strategy_tagger": {"question": "Could you paste the full traceback of `frobnicate(None)`?",
                            "issue_text": ISSUE},
        **EVAL_EXAMPLES,
    }[name]


@pytest.fixture(scope="module")
def replay_model():
    """A mock model that answers each role's prompt with that role's local output, looked up by the prompt."""
    ensure_registered()
    from tasks.llm.providers.mock import MockScript, register

    answers: dict[str, str] = {}
    script = MockScript(rule=lambda messages: answers[messages[-1]["content"]])
    return register(f"replay-{time.time_ns()}", script), answers, script


@pytest.mark.parametrize("name", ROLE_NAMES)
def test_llm_backend_round_trips_through_the_role_schema(name, replay_model, tmp_path):
    model, answers, script = replay_model
    spec = get_spec(name)
    inp = spec.input_model.model_validate(example(name))
    [expected] = run_role(spec, [inp], RoleConfig(), domain=OPTIMIZATION_CONTEXT)
    messages = spec.messages(inp, OPTIMIZATION_CONTEXT)
    assert [m["role"] for m in messages] == ["system", "user"]
    assert "{" in messages[0]["content"] + messages[1]["content"], "the prompt must carry the JSON schema"
    answers[messages[-1]["content"]] = expected.model_dump_json()
    client = LLMClient(CallCache(tmp_path / "calls.sqlite"))
    [got] = run_role(spec, [inp], RoleConfig(backend="llm", model=model), domain=OPTIMIZATION_CONTEXT, client=client)
    assert not isinstance(got, RoleFailure), got
    assert got == expected
    assert script.requests[-1] == messages


def test_prompts_render_the_input_fields():
    spec = get_spec("swe_user")
    inp = spec.input_model.model_validate(example("swe_user"))
    text = "\n".join(m["content"] for m in spec.messages(inp))
    assert "widgetlib 2.4.1" in text and "Which version of widgetlib" in text


def test_a_role_with_a_broken_model_records_a_failure_per_input(tmp_path):
    ensure_registered()
    from tasks.llm.providers.mock import MockScript, register

    model = register(f"garbage-{time.time_ns()}", MockScript(outputs=["I refuse to answer in JSON."]))
    spec = get_spec("question_detector")
    inputs = [spec.input_model(turn="What is the deadline?"), spec.input_model(turn="READY_TO_MODEL")]
    outs = run_role(spec, inputs, RoleConfig(backend="llm", model=model, max_regenerations=1),
                    domain=OPTIMIZATION_CONTEXT, client=LLMClient(CallCache(tmp_path / "c.sqlite")))
    assert [type(o) for o in outs] == [RoleFailure, RoleFailure]
    assert all(o.kind == "invalid_output" and o.role == "question_detector" for o in outs)


def test_every_role_is_configurable_from_params_and_listed():
    import yaml

    from tasks.params import Params
    from tests.conftest import ROOT

    params = Params.model_validate(yaml.safe_load((ROOT / "params.yaml").read_text()))
    # every role, one setting
    assert set(type(params.roles).model_fields) - {"max_failure_rate", "preset"} == set(ROLE_NAMES)
    assert set(describe_roles(params.roles)) == set(ROLE_NAMES)
    with pytest.raises(Exception, match="backend"):
        RolesParams.model_validate({"annotator": {"backend": "gpt"}})
    assert json.dumps(describe_roles(RolesParams()))


def test_the_docs_list_every_role_and_the_preset_groups():
    import re

    from tasks.roles.config import PRESET_GROUPS
    from tests.conftest import ROOT

    text = (ROOT / "docs" / "roles-and-backends.md").read_text(encoding="utf-8")
    table = text.split("**Every role**", 1)[1].split("\n\n", 2)[1]
    rows = re.findall(r"^\| `(\w+)` \|[^|]*\|\s*(\w*)\s*\|", table, re.M)
    assert sorted(name for name, _ in rows) == sorted(ROLE_NAMES)
    assert {name: group for name, group in rows if group} == {
        name: group for group, names in PRESET_GROUPS.items() for name in names}

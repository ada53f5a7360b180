"""Schemas every provider accepts, JSON mode, Anthropic's translation and reasoning replies, through the project's
client against loopback servers of each dialect (tests/openai_server.py, tests/anthropic_server.py)."""

from __future__ import annotations

import json
import logging
from typing import Literal

import pytest
from pydantic import BaseModel

from tasks.clarifiers.choice import ChoiceAgentOutput
from tasks.clarifiers.interopt_roles import DirectOutput
from tasks.domains.optimization.context import OPTIMIZATION_CONTEXT
from tasks.llm.cache import CallCache
from tasks.llm.client import LLMClient, split_reasoning, structured_mode
from tasks.llm.records import RoleConfig, RoleFailure
from tasks.llm.strict_schema import drop_sent_nulls, sent_schema, strict_problems
from tasks.roles.base import run_role
from tasks.roles.config import ROLE_NAMES
from tasks.roles.registry import get_spec
from tests.anthropic_server import MessagesServer
from tests.openai_server import ChatServer
from tests.test_registry import import_every_role
from tests.test_roles_llm_backend import example

import_every_role()  # every declared role (ROLE_NAMES) has its spec registered

KEY_ENV = "CLARIFYFLOW_TEST_PROVIDER_KEY"
ASK = ChoiceAgentOutput(action="question", question="Which bread matters most?",
                        options={"A": "Rye", "B": "Wheat", "C": "Both equally"}, allow_other=True)


class OpenMap(BaseModel):
    options: dict[str, str]


@pytest.fixture
def client(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "test-key")
    return LLMClient(CallCache(tmp_path / "calls.sqlite"), backoff_s=0.001, seed=0)


@pytest.fixture
def serve():
    servers = []

    def start(reply=lambda body: ASK.model_dump_json(), **options) -> ChatServer:
        srv = ChatServer(reply=reply, **options).start()
        servers.append(srv)
        return srv

    yield start
    for srv in servers:
        srv.stop()


def endpoint(srv, model: str = "openai/test-model", **kw) -> RoleConfig:
    return RoleConfig(backend="llm", model=model, api_base=srv.url, api_key_env=KEY_ENV, **kw)


def ask_messages() -> list[list[dict]]:
    return [[{"role": "system", "content": "Ask one question as JSON."}, {"role": "user", "content": "Bakery."}]]


def unique_output_models() -> dict[str, type[BaseModel]]:
    models: dict[str, type[BaseModel]] = {}
    for name in ROLE_NAMES:
        models.setdefault(get_spec(name).output_model.__name__, get_spec(name).output_model)
    return models


# ---- the strict checker -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(unique_output_models()))
def test_every_schema_the_client_sends_meets_openais_strict_rules(name):
    schema = sent_schema(unique_output_models()[name])
    assert strict_problems(schema) == []
    assert '"default"' not in json.dumps(schema)


def test_the_checker_rejects_an_open_map_and_what_the_rules_forbid():
    problems = strict_problems(sent_schema(OpenMap))
    assert any("additionalProperties must be false" in p for p in problems), problems

    class Keyed(BaseModel):
        options: dict[Literal["A", "B"], str]

    assert any("propertyNames" in p for p in strict_problems(sent_schema(Keyed)))
    leaf: dict = {"type": "string"}
    for _ in range(11):
        leaf = {"type": "object", "properties": {"x": leaf}, "required": ["x"], "additionalProperties": False}
    assert any("nesting" in p for p in strict_problems(leaf))
    assert strict_problems({"anyOf": [{"type": "object"}]})[0].startswith("(root)")
    loose = {"type": "object", "properties": {"a": {"type": "string", "default": "x"}, "b": {"allOf": []}},
             "required": ["a"]}
    problems = strict_problems(loose)
    assert any("'default'" in p for p in problems) and any("'allOf'" in p for p in problems)
    assert any("every property must be required" in p for p in problems)
    assert any("additionalProperties" in p for p in problems)
    big_enum = {"type": "object", "properties": {"e": {"enum": [f"value-{i:04d}-" + "x" * 60 for i in range(300)]}},
                "required": ["e"], "additionalProperties": False}
    assert any("enum of 300 values" in p for p in strict_problems(big_enum))


def test_a_strict_reply_with_nulls_parses_into_the_record_with_its_defaults():
    schema = sent_schema(DirectOutput)
    assert set(schema["required"]) == set(schema["properties"])
    reply = {"decision": "READY", "search_summary": None, "updates": None, "selected_gap_ref": None,
             "question": None, "options": None, "allow_other": None, "summary": "Plan the week."}
    out = DirectOutput.model_validate(drop_sent_nulls(reply, DirectOutput.model_json_schema()))
    assert out.options == {} and out.allow_other is True and out.summary == "Plan the week."


# ---- the OpenAI and DeepSeek dialects ------------------------------------------------------------------------------

def test_a_strict_server_refuses_an_open_map_and_accepts_the_reshaped_options(serve, client):
    srv = serve(strict_schemas=True)
    [failed] = client.map_structured(role="r", cfg=endpoint(srv, structured_output="json_schema"),
                                     messages=ask_messages(), schema=OpenMap)
    assert isinstance(failed, RoleFailure) and failed.kind == "provider"
    assert "additionalProperties must be false" in failed.message and srv.requests[-1].status == 400
    [ok] = client.map_structured(role="r", cfg=endpoint(srv, structured_output="json_schema"),
                                 messages=ask_messages(), schema=ChoiceAgentOutput)
    assert ok == ASK
    sent = srv.requests[-1].response_format
    assert sent["type"] == "json_schema" and sent["json_schema"]["strict"] is True
    assert sent["json_schema"]["schema"]["properties"]["options"]["anyOf"][0]["additionalProperties"] is False


def test_deepseek_gets_json_mode_with_the_schema_in_the_prompt(serve, client):
    srv = serve(json_mode_only=True)
    [refused] = client.map_structured(role="r", cfg=endpoint(srv, structured_output="json_schema"),
                                      messages=ask_messages(), schema=ChoiceAgentOutput)
    assert isinstance(refused, RoleFailure) and refused.kind == "provider" and "unavailable" in refused.message
    cfg = endpoint(srv, model="deepseek/deepseek-chat")
    assert structured_mode(cfg, ChoiceAgentOutput) == "json_object"  # although litellm's map claims schemas
    assert structured_mode(endpoint(srv, model="openai/deepseek-chat").model_copy(
        update={"api_base": "https://api.deepseek.com/v1"}), ChoiceAgentOutput) == "json_object"
    [ok] = client.map_structured(role="r", cfg=cfg, messages=ask_messages(), schema=ChoiceAgentOutput)
    assert ok == ASK
    request = srv.requests[-1]
    assert request.response_format == {"type": "json_object"} and request.status == 200
    assert json.dumps(ChoiceAgentOutput.model_json_schema(), ensure_ascii=False) in request.messages[0]["content"]


def test_json_mode_repairs_an_invalid_reply_once_even_without_regenerations(serve, client):
    replies = iter(['{"action": "question"}', ASK.model_dump_json()])
    srv = serve(reply=lambda body: next(replies), json_mode_only=True)
    cfg = endpoint(srv, structured_output="json_object", max_regenerations=0)
    [ok] = client.map_structured(role="r", cfg=cfg, messages=ask_messages(), schema=ChoiceAgentOutput)
    assert ok == ASK and srv.count() == 2
    assert "could not be used" in srv.requests[-1].messages[-1]["content"]
    assert client.accounting.snapshot()["r"]["regenerations"] == 1


# ---- reasoning ------------------------------------------------------------------------------------------------------

BRACES = "I think the answer is {\"action\": \"ready_to_model\"}, no: {wait}."


@pytest.mark.parametrize("shape", [
    {"reasoning_content": BRACES},
    {"content": "\n\n<think>" + BRACES + "</think>\n{reply}"},
    {"content": BRACES + "</think>{reply}"},  # the chat template opened the block
    {"content": "{reply}\n<think>" + BRACES + "</think>"},
], ids=["reasoning_content", "leading_newline_think", "no_opening_tag", "think_after"])
def test_reasoning_never_reaches_the_parser_and_is_kept(shape, serve, client):
    srv = serve(scripted=[shape])
    [ok] = client.map_structured(role="r", cfg=endpoint(srv), messages=ask_messages(), schema=ChoiceAgentOutput)
    assert ok == ASK
    usage = client.accounting.snapshot()["r"]
    assert usage["regenerations"] == 0 and usage["completion_tokens"] > len(ASK.model_dump_json().split())
    [row] = client.cache._db.execute("SELECT value FROM calls").fetchall()
    stored = json.loads(row[0])
    assert "{wait}" in stored["reasoning"] and "{wait}" not in stored["content"]


def test_an_episode_client_keeps_the_reasoning_for_the_episode_logs(serve, client, tmp_path):
    from tasks.clarifiers.base import MethodContext
    from tasks.evaluation.episode_loop import episode_context

    ctx = episode_context(MethodContext(client=client, domain=OPTIMIZATION_CONTEXT), sample="0:1")
    assert ctx.client.reasoning_log == [] and client.reasoning_log is None  # the process-wide client keeps none
    srv = serve(scripted=[{"reasoning_content": BRACES}])
    for _ in range(2):  # a provider call, then a cache hit: both carry the reasoning
        [ok] = ctx.client.map_structured(role="agent", cfg=endpoint(srv), messages=ask_messages(),
                                         schema=ChoiceAgentOutput)
        assert ok == ASK
    assert srv.count() == 1
    assert ctx.client.reasoning_log == [{"role": "agent", "model": "openai/test-model", "reasoning": BRACES}] * 2


def test_split_reasoning_takes_an_unclosed_block_cut_by_the_limit():
    assert split_reasoning('{"a": 1}\n<think>still thinking {') == ('{"a": 1}', "still thinking {")
    assert split_reasoning("no reasoning here") == ("no reasoning here", "")


def test_a_reply_cut_by_the_token_limit_is_retried_with_twice_the_budget(serve, client):
    srv = serve(scripted=[{"content": "<think>long", "finish_reason": "length"}])
    [ok] = client.map_structured(role="r", cfg=endpoint(srv, max_tokens=300), messages=ask_messages(),
                                 schema=ChoiceAgentOutput)
    assert ok == ASK
    assert [r.max_tokens for r in srv.requests] == [300, 600]
    assert client.accounting.snapshot()["r"]["truncated"] == 1


def test_a_reply_cut_twice_is_its_own_failure_kind(serve, client):
    cut = {"content": '{"action": "quest', "finish_reason": "length"}
    srv = serve(scripted=[cut, cut])
    [failed] = client.map_structured(role="r", cfg=endpoint(srv, max_tokens=100), messages=ask_messages(),
                                     schema=ChoiceAgentOutput)
    assert isinstance(failed, RoleFailure) and failed.kind == "truncated" and "max_tokens=200" in failed.message
    usage = client.accounting.snapshot()["r"]
    assert usage["truncated"] == 2 and usage["regenerations"] == 0 and usage["failures"] == 1
    assert client.cache is not None and len(client.cache) == 0  # a cut reply is never cached


def test_cut_free_text_is_kept_when_an_answer_is_left(serve, client):
    srv = serve(reply=lambda body: "1. Which version do you use?\n2. What is the full", scripted=[
        {"content": "<think>only reasoning, cut", "finish_reason": "length"}, {"finish_reason": "length"}])
    text = client.complete(role="q", cfg=endpoint(srv, max_tokens=50), messages=ask_messages()[0])
    assert text.startswith("1. Which version") and [r.max_tokens for r in srv.requests] == [50, 100]
    assert client.accounting.snapshot()["q"]["truncated"] == 2


def test_a_temperature_the_model_drops_is_warned_once_and_counted(serve, client, caplog):
    srv = serve()
    cfg = endpoint(srv, model="openai/gpt-5-mini", temperature=0.2)
    with caplog.at_level(logging.WARNING, logger="clarifyflow.llm"):
        outs = client.map_structured(role="agent", cfg=cfg, schema=ChoiceAgentOutput, messages=[
            [{"role": "user", "content": f"case {i}"}] for i in range(3)])
    assert all(o == ASK for o in outs)
    assert all(r.temperature is None for r in srv.requests)  # litellm dropped it
    assert client.accounting.snapshot()["agent"]["params_dropped"] == 3
    warnings = [r for r in caplog.records if "temperature" in r.getMessage()]
    assert len(warnings) == 1 and "gpt-5-mini" in warnings[0].getMessage()


# ---- Anthropic's Messages API --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def local_outputs() -> dict[str, tuple]:
    """Each role's input and its local backend's output (the record the Anthropic fixtures carry)."""
    out = {}
    for name in ROLE_NAMES:
        spec = get_spec(name)
        inp = spec.input_model.model_validate(example(name))
        [expected] = run_role(spec, [inp], RoleConfig(), domain=OPTIMIZATION_CONTEXT, client=LLMClient(use_cache=False))
        out[name] = (spec, inp, expected)
    return out


@pytest.mark.parametrize("model, thinking", [
    ("anthropic/claude-haiku-4-5", False),  # native structured output (output_format)
    ("anthropic/claude-haiku-4-5", True),  # the same with a thinking block first
    # a forced tool call (json_tool_call): the path litellm takes for a model without native structured output (the
    # retired name only selects that path; the call goes to the loopback server)
    ("anthropic/claude-3-5-haiku-20241022", False),
], ids=["output_format", "thinking", "tool_use"])
def test_litellms_anthropic_translation_parses_back_into_every_role_record(model, thinking, local_outputs, tmp_path,
                                                                           monkeypatch):
    monkeypatch.setenv(KEY_ENV, "test-key")
    answers = {}
    srv = MessagesServer(record=lambda body: answers[json.dumps(body["messages"][-1])], thinking=thinking).start()
    try:
        client = LLMClient(CallCache(tmp_path / "calls.sqlite"))
        cfg = RoleConfig(backend="llm", model=model, api_base=srv.url, api_key_env=KEY_ENV,
                         structured_output="json_schema", max_regenerations=0)
        for name, (spec, inp, expected) in local_outputs.items():
            last = spec.messages(inp, OPTIMIZATION_CONTEXT)[-1]
            answers[json.dumps({"role": "user", "content": [{"type": "text", "text": last["content"]}]})] = \
                answers[json.dumps(last)] = expected.model_dump_json()
            [got] = run_role(spec, [inp], cfg, domain=OPTIMIZATION_CONTEXT, client=client)
            assert got == expected, (name, got)
        shapes = {("tools" in body, "output_format" in body) for body in srv.requests}
        assert shapes == ({(True, False)} if "3-5" in model else {(False, True)})
    finally:
        srv.stop()


# ---- presets: the references' sampling and reasoning budgets -------------------------------------------------------

def _params_roles() -> dict:
    import yaml

    from tests.conftest import ROOT

    return yaml.safe_load((ROOT / "params.yaml").read_text())["roles"]


def test_the_reference_sampling_applies_to_served_roles_only():
    from tasks.roles.config import RolesParams

    roles = _params_roles()
    assert RolesParams.model_validate(roles).or_generic_agent.temperature == 0.0  # off by default: nothing changes
    roles["preset"]["references"]["use"] = True
    roles["preset"]["agent"] = {"model": "openai/gpt-4o-mini"}
    roles["preset"]["user"] = {"model": "openai/gpt-4o-mini", "temperature": 0.5}  # a written field wins
    params = RolesParams.model_validate(roles)
    assert (params.or_generic_agent.temperature, params.or_generic_agent.max_retries) == (0.2, 10)
    assert params.or_question_selector.temperature == 0.0 and params.or_question_selector.max_retries == 10
    assert params.or_open_user.temperature == 0.5 and params.or_open_user.timeout_s == 180
    assert params.slot_hit_judge.backend == "local" and params.slot_hit_judge.max_retries == 4  # local: untouched


def test_the_reasoning_preset_sets_budgets_and_temperature_of_llm_roles():
    from tasks.roles.config import RolesParams

    roles = _params_roles()
    roles["preset"]["reasoning"]["use"] = True
    roles["decomposer"] = {**roles["decomposer"], "backend": "llm", "max_tokens": 16000}
    roles["swe_user"] = {**roles["swe_user"], "backend": "llm"}
    params = RolesParams.model_validate(roles)
    assert (params.swe_user.max_tokens, params.swe_user.temperature, params.swe_user.timeout_s) == (8192, 1.0, 600)
    assert params.decomposer.max_tokens == 16000  # a larger own budget stays
    assert params.annotator.max_tokens == 1024 and params.annotator.temperature == 0.0  # local: untouched


def test_the_served_policy_example_row_is_valid_options():
    import re

    import yaml

    from tasks.clarifiers.question_methods import LlmOptions
    from tests.conftest import ROOT

    [row] = re.findall(r"# (- \{name: served_policy.*)", (ROOT / "params.yaml").read_text())
    options = LlmOptions.model_validate(yaml.safe_load(row)[0]["options"])
    assert (options.temperature, options.max_tokens, options.extra) == (0.9, 256, {"top_p": 0.9})

"""Every LLM-backed role over real HTTP: litellm against a loopback OpenAI-compatible server (tests/openai_server.py).

The roles are pointed at the server with their per-role endpoint settings (``api_base``, ``api_key_env``, the
``roles.preset`` of the agent, user and judge groups). The server answers each role's prompt with that role's own
local backend output for the same input (recorded when the prompt is rendered), so a run over HTTP must reproduce
the all-local run exactly, through structured output, injected faults (429, 500) and a malformed reply. Only
loopback connections are allowed while a test runs (litellm must not fetch its cost map or anything else).
"""

from __future__ import annotations

import json
import secrets
import socket
from pathlib import Path

import pytest

from tasks.domains.optimization.context import OPTIMIZATION_CONTEXT
from tasks.llm.cache import CallCache
from tasks.llm.client import REPAIR, LLMClient
from tasks.llm.records import RoleFailure
from tasks.roles.base import RoleSpec, run_role
from tasks.roles.config import PRESET_GROUPS, RolesParams
from tests.conftest import ROOT
from tests.openai_server import ChatServer

KEY_ENV = "CLARIFYFLOW_TEST_ENDPOINT"
"""Deliberately not ``*_API_KEY``: the key is redacted because a role names this variable, not by its suffix."""
CASES = ROOT / "tests" / "data" / "or_cases.jsonl"
PROBLEMS = ROOT / "data" / "samples" / "optimization" / "problems.jsonl"
METHODS = [{"name": "freeqa", "protocols": ["open"]}, {"name": "interopt", "protocols": ["mc_d"]}]
SWE_ROLES = ("swe_user", "redundancy_judge", "answerability_judge", "question_classifier", "question_writer")
REPAIR_START = REPAIR.split("{", 1)[0]


def _prompt_key(messages: list[dict]) -> str:
    return json.dumps([[m["role"], m["content"]] for m in messages])


@pytest.fixture
def loopback_only(monkeypatch):
    """Refuse (and record) every connection and name lookup that is not loopback."""
    blocked: list[str] = []
    real_connect, real_getaddrinfo = socket.socket.connect, socket.getaddrinfo
    local = {"127.0.0.1", "::1", "localhost"}

    def connect(sock, address):
        if sock.family in (socket.AF_INET, socket.AF_INET6) and address[0] not in local:
            blocked.append(f"connect {address}")
            raise OSError(f"test: non-loopback connection to {address} refused")
        return real_connect(sock, address)

    def getaddrinfo(host, *args, **kwargs):
        if host not in local and host is not None:
            blocked.append(f"lookup {host}")
            raise OSError(f"test: name lookup of {host} refused")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield blocked
    assert not blocked, blocked


@pytest.fixture
def server(monkeypatch, loopback_only):
    """The loopback server, answering each rendered role prompt with the role's local output for that input."""
    answers: dict[str, str] = {}
    render = RoleSpec.messages

    def messages(spec, inp, domain=None):
        out = render(spec, inp, domain)
        [local] = spec.run_local([inp], domain)
        answers[_prompt_key(out)] = local.model_dump_json()
        return out

    monkeypatch.setattr(RoleSpec, "messages", messages)

    def reply(body: dict) -> str:
        msgs = body["messages"]
        if msgs[-1]["role"] == "user" and msgs[-1]["content"].startswith(REPAIR_START):
            msgs = msgs[:-2]  # a repair turn: answer the original prompt again
        return answers[_prompt_key(msgs)]

    srv = ChatServer(reply=reply).start()
    yield srv
    srv.stop()


@pytest.fixture
def key(monkeypatch) -> str:
    value = f"clarify-test-{secrets.token_hex(16)}"
    monkeypatch.setenv(KEY_ENV, value)
    return value


def _endpoint(srv: ChatServer, model: str, **kw) -> dict:
    return {"backend": "llm", "model": model, "api_base": srv.url, "api_key_env": KEY_ENV, **kw}


def _files_without(folder: Path, secret: str) -> list[Path]:
    files = [p for p in folder.rglob("*") if p.is_file()]
    leaked = [p for p in files if secret.encode() in p.read_bytes()]
    assert not leaked, leaked
    return files


def _headline(summary: dict) -> dict:
    keep = ("RunCount", "AllSlotExactRestoreRate", "WeightedSlotScore_macro", "AtomicQuestionsPerRun",
            "AverageTurns", "SilentAssumptionsPerRun", "ReadyRate")
    return {row: {k: v for k, v in metrics.items() if k in keep} for row, metrics in summary.items()}


def _totals(client: LLMClient, field: str) -> int:
    return sum(int(u[field]) for u in client.accounting.snapshot().values())


def _calls(results, client: LLMClient, episode_field: str, client_field: str) -> int:
    """Summed over the episodes' own usage (agents, user, detector) and the client's (the judges)."""
    return (sum(getattr(u, episode_field) for r in results for u in r.episode.usage.values())
            + _totals(client, client_field))


def test_evaluate_optimization_over_http_matches_the_local_run(server, key, tmp_path, caplog, capfd):
    from tasks.evaluation.evaluate import play, write_outputs
    from tasks.evaluation.metrics import summarise
    from tasks.evaluation.runs import EvalSettings, episode_store, load_cases
    from tasks.roles.failures import episode_failure_counts

    cases = load_cases(CASES, limit=2)
    settings = EvalSettings(methods=METHODS, repeats=1, max_turns=6, bootstrap=100, task_runner="serial")

    def run(roles: RolesParams, client: LLMClient, store: str):
        results, stats = play(cases, settings, roles, episode_store(tmp_path / store), domain=OPTIMIZATION_CONTEXT,
                              client=client, runner="serial")
        assert stats.computed == len(results) == 4
        return results, summarise([r.episode for r in results], [r.judge for r in results], n_resamples=100)

    _, local = run(RolesParams(), LLMClient(use_cache=False), "local")

    roles = RolesParams.model_validate({"max_failure_rate": 0.0, "preset": {
        "agent": _endpoint(server, "openai/agent-model", structured_output="json_schema"),
        "user": _endpoint(server, "hosted_vllm/user-model"),
        "judge": _endpoint(server, "openai/judge-model")}})
    server.faults = [429, 500, "malformed"]
    client = LLMClient(CallCache(tmp_path / "cache" / "llm_calls.sqlite"), backoff_s=0.01, backoff_max_s=0.05)
    results, remote = run(roles, client, "remote")
    assert _headline(remote) == _headline(local)
    assert all(f.failures == 0 for f in episode_failure_counts(results, roles))
    requests = list(server.requests)
    assert not server.faults and [r.status for r in requests].count(200) == len(requests) - 2
    # the 429 and the 500 were sent again as they were; the malformed reply got a repair turn
    for n, request in enumerate(requests):
        later = [r.messages for r in requests[n + 1:] if r.status == 200]
        if request.fault in (429, 500):
            assert request.messages in later
        if request.fault == "malformed":
            assert any(m[:-2] == request.messages and m[-1]["content"].startswith(REPAIR_START) for m in later)
    assert _calls(results, client, "calls", "provider_calls") == len(requests) - 2
    # the preset's three groups, each on its model; the roles these methods use all went over HTTP
    assert {r.model for r in requests} == {"agent-model", "user-model", "judge-model"}
    used = {name for r in results for name, u in r.episode.usage.items() if u.calls}
    used |= {name for name, u in client.accounting.snapshot().items() if u["provider_calls"]}
    assert {"or_generic_agent", "or_gap_search", "or_candidate_agent", "or_open_user", "or_choice_user",
            "slot_hit_judge", "or_session_judge", "question_detector"} <= used
    assert used <= {name for names in PRESET_GROUPS.values() for name in names}
    # structured output: the agent group sends its schema as response_format, the others rely on the prompt
    assert all((r.response_format or {}).get("type") == "json_schema" for r in requests if r.model == "agent-model")
    assert all(r.response_format is None for r in requests if r.model != "agent-model")
    # the key came from the variable api_key_env names, on every request
    assert {r.authorization for r in requests} == {f"Bearer {key}"}

    # rerun from a fresh episode store: every call is a cache hit, the server sees nothing
    again = LLMClient(CallCache(tmp_path / "cache" / "llm_calls.sqlite"))
    reruns, cached = run(roles, again, "rerun")
    assert server.count() == len(requests)
    assert _calls(reruns, again, "calls", "provider_calls") == 0
    first = _calls(results, client, "cache_hits", "cache_hits") + len(requests) - 2
    assert _calls(reruns, again, "cache_hits", "cache_hits") == first  # every call of the first run, hit
    assert _headline(cached) == _headline(local)

    summary = write_outputs(tmp_path / "out", results, cases, settings, roles, domain=OPTIMIZATION_CONTEXT,
                            source="test")
    assert set(summary["rows"]) == {"open::freeqa", "mc_d::interopt"}
    assert (tmp_path / "out" / "episodes.jsonl").is_file()  # packed episodes (run folders only on request)
    run_config = (tmp_path / "out" / "run_config.json").read_text()
    assert server.url in run_config and KEY_ENV in run_config  # the endpoint and the variable's name, never the key
    files = _files_without(tmp_path, key)  # artifacts, episode stores, the call cache (and its WAL)
    assert any(p.name.startswith("llm_calls.sqlite") for p in files)
    out, err = capfd.readouterr()
    assert key not in out + err + caplog.text


def test_construct_optimization_roles_over_http(server, key, tmp_path, monkeypatch):
    """construct@optimization's chunk (decomposer, rewriter, slot annotator) over HTTP builds the local cases."""
    from tasks.domains.optimization import build_chunk

    monkeypatch.setattr("tasks.llm.cache.cache_dir", lambda: tmp_path / "cache")  # the chunk's own client
    problems = [json.loads(PROBLEMS.read_text(encoding="utf-8").splitlines()[0])]
    local = build_chunk(problems, {}, RolesParams().model_dump())
    roles = RolesParams.model_validate({
        "decomposer": _endpoint(server, "hosted_vllm/construct-model", max_tokens=4096),
        "rewriter": _endpoint(server, "hosted_vllm/construct-model", structured_output="json_schema"),
        "slot_annotator": _endpoint(server, "openai/construct-model")})
    server.faults = [500]
    remote = build_chunk(problems, {}, roles.model_dump())
    assert remote["cases"] == local["cases"] and remote["cases"] and not remote["failures"]
    usage = remote["usage"]
    assert {name for name, u in usage.items() if u["provider_calls"]} == {"decomposer", "rewriter", "slot_annotator"}
    assert sum(u["retries"] for u in usage.values()) == 1  # the injected 500
    sent = server.count()
    assert sent >= 3 and {r.authorization for r in server.requests} == {f"Bearer {key}"}
    assert build_chunk(problems, {}, roles.model_dump())["cases"] == local["cases"]
    assert server.count() == sent  # the rerun is served by the call cache
    _files_without(tmp_path, key)


def test_swe_roles_over_http(server, key, tmp_path):
    """The SWE roles (evaluate@swe's simulated user and judges, the classifier, the question writer) over HTTP."""
    from tasks.roles.registry import get_spec
    from tests.test_roles_llm_backend import example

    client = LLMClient(CallCache(tmp_path / "calls.sqlite"), backoff_s=0.01)
    server.faults = [429]
    for name in SWE_ROLES:
        spec = get_spec(name)
        inp = spec.input_model.model_validate(example(name))
        [local] = spec.run_local([inp])
        cfg = RolesParams.model_validate({name: _endpoint(server, f"openai/{name}")}).get(name)
        [got] = run_role(spec, [inp], cfg, client=client)
        assert got == local, name
    assert {r.model for r in server.requests} == set(SWE_ROLES)
    assert _totals(client, "retries") == 1 and _totals(client, "failures") == 0
    _files_without(tmp_path, key)


def test_the_endpoint_is_part_of_the_cache_key_and_a_key_echoed_in_an_error_is_redacted(loopback_only, key,
                                                                                         tmp_path):
    from pydantic import BaseModel

    from tasks.llm.records import RoleConfig

    class Answer(BaseModel):
        answer: str

    one = ChatServer(reply=lambda body: '{"answer": "one"}').start()
    two = ChatServer(reply=lambda body: '{"answer": "two"}').start()
    try:
        client = LLMClient(CallCache(tmp_path / "calls.sqlite"))
        ask = [[{"role": "user", "content": "Which server are you?"}]]
        for srv, expected in ((one, "one"), (two, "two"), (one, "one")):
            cfg = RoleConfig(backend="llm", model="openai/same-name", api_base=srv.url, api_key_env=KEY_ENV)
            [got] = client.map_structured(role="probe", cfg=cfg, messages=ask, schema=Answer)
            assert got == Answer(answer=expected)
        assert (one.count(), two.count()) == (1, 1)  # the second ask of server one came from the cache

        cfg = RoleConfig(backend="llm", model="openai/reject", api_base=one.url, api_key_env=KEY_ENV)
        [failure] = client.map_structured(role="probe", cfg=cfg, messages=ask, schema=Answer)
        assert isinstance(failure, RoleFailure) and failure.kind == "provider"
        assert one.requests[-1].authorization == f"Bearer {key}"  # the server did echo it ...
        assert "Incorrect API key" in failure.message and key not in failure.message  # ... the record does not
    finally:
        one.stop()
        two.stop()


@pytest.mark.parametrize(("role", "message"), [
    ({"api_key_env": "CLARIFYFLOW_NOT_SET"}, "the variable api_key_env names is not set"),
    ({"api_key_env": "sk-live-abc123"}, "the name of an environment variable"),
    ({"api_key": "sk-live-abc123"}, "keys never go in params"),
    ({"api_base": "127.0.0.1:8000"}, "api_base must be an http(s) URL"),
    ({"api_base": "http://user:pw@127.0.0.1:8000/v1"}, "must not carry credentials"),
    ({"extra": {"timeout": 5}}, "extra.timeout is set by the client; use the role's timeout_s"),
    ({"extra": {"extra_headers": {"Authorization": "Bearer x"}}}, "without auth headers"),
])
def test_bad_endpoint_settings_are_one_line_naming_the_file_and_field(tmp_path, role, message):
    import yaml

    from tasks.errors import InputError
    from tasks.params import load_params

    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["roles"]["preset"]["judge"] = {"model": "openai/gpt-4o-mini", **role}
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params))
    with pytest.raises(InputError) as err:
        load_params(path)
    line = str(err.value)
    assert "\n" not in line and line.startswith(f"{path}: field 'roles.preset.judge") and message in line, line
    assert "sk-live-abc123" not in line and "pw@" not in line


def test_the_preset_sets_its_groups_and_keeps_what_it_does_not_write():
    from tasks.llm.records import RoleConfig

    written = {"model": "hosted_vllm/user-model", "api_base": "http://127.0.0.1:9/v1/"}
    roles = RolesParams.model_validate({"or_open_user": {"max_tokens": 256}, "preset": {"user": written}})
    assert roles.or_open_user == RoleConfig(backend="llm", model="hosted_vllm/user-model",
                                            api_base="http://127.0.0.1:9/v1", max_tokens=256)
    assert roles.or_choice_user.backend == "llm" and roles.or_choice_user.max_tokens == 512
    assert roles.or_generic_agent.backend == roles.slot_hit_judge.backend == "local"
    assert roles.model_dump()["preset"]["user"] == {**written, "api_base": "http://127.0.0.1:9/v1"}
    assert RolesParams.model_validate(roles.model_dump()) == roles  # a dumped copy (Prefect, Dask) means the same
    assert RolesParams.model_validate({"preset": {"judge": {"backend": "local"}}}).slot_hit_judge.backend == "local"


def test_the_endpoint_enters_the_cache_key_only_when_set(monkeypatch, key):
    from tasks.llm.cache import call_key
    from tasks.llm.client import endpoint_kwargs
    from tasks.llm.records import RoleConfig

    ask = [{"role": "user", "content": "hello"}]
    plain = call_key("openai/m", ask, {"temperature": 0.0}, None)
    assert call_key("openai/m", ask, {"temperature": 0.0}, None, api_base=None, extra={}) == plain  # old keys hold
    here = call_key("openai/m", ask, {"temperature": 0.0}, None, api_base="http://127.0.0.1:1/v1")
    assert here != plain and here == call_key("openai/m", ask, {"temperature": 0.0}, None,
                                              api_base="http://127.0.0.1:1/v1/")
    assert call_key("openai/m", ask, {"temperature": 0.0}, None, extra={"top_p": 0.5}) != plain

    cfg = RoleConfig(backend="llm", model="openai/m", api_base="http://127.0.0.1:1/v1", api_key_env=KEY_ENV,
                     extra={"top_p": 0.5})
    assert endpoint_kwargs(cfg) == {"api_base": "http://127.0.0.1:1/v1", "api_key": key, "top_p": 0.5}
    monkeypatch.delenv(KEY_ENV)  # unset after the params were read: the call fails as a provider error, no request
    with pytest.raises(Exception, match="the variable api_key_env names is not set"):
        endpoint_kwargs(cfg)


def test_a_missing_key_fails_at_once_without_retries(loopback_only, monkeypatch, tmp_path):
    """litellm reports an ``openai/…`` call without any key as a 500 of its own; it is not retried."""
    from pydantic import BaseModel

    from tasks.llm.records import RoleConfig

    class Answer(BaseModel):
        answer: str

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    srv = ChatServer(reply=lambda body: '{"answer": "never"}').start()
    try:
        client = LLMClient(CallCache(tmp_path / "calls.sqlite"), backoff_s=5.0)
        cfg = RoleConfig(backend="llm", model="openai/keyless", api_base=srv.url)
        [failure] = client.map_structured(role="probe", cfg=cfg, messages=[[{"role": "user", "content": "hi"}]],
                                          schema=Answer)
        assert isinstance(failure, RoleFailure) and (failure.kind, failure.attempts) == ("provider", 1), failure
        assert "Missing credentials" in failure.message and srv.count() == 0
    finally:
        srv.stop()


def test_the_swe_llm_questioner_counts_its_endpoint_as_part_of_the_method():
    from tests.test_swe_eval import build_method, ctx

    def fingerprint(**options) -> dict:
        return build_method("llm", "llm_questioner", {"model": "openai/m", **options}, ctx()).fingerprint()

    plain = fingerprint()
    assert "api_base" not in plain and "extra" not in plain  # stored results of keyless runs keep their keys
    assert fingerprint(api_base="http://127.0.0.1:1/v1") != fingerprint(api_base="http://127.0.0.1:2/v1") != plain


def test_the_documented_worked_example_is_valid_params(tmp_path, monkeypatch):
    import re

    import yaml

    from tasks.evaluation.runs import EvalSettings
    from tasks.params import load_params

    page = (ROOT / "docs" / "evaluation.md").read_text(encoding="utf-8")
    example = page.split("### Worked example", 1)[1]
    block = yaml.safe_load(re.search(r"```yaml\n(.*?)```", example, re.S).group(1))
    params = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    params["roles"]["preset"] = block["roles"]["preset"]
    params["evaluate"]["optimization"].update(block["evaluate"]["optimization"])
    path = tmp_path / "params.or-llm.yaml"
    path.write_text(yaml.safe_dump(params))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")
    roles = load_params(path).roles
    assert roles.or_candidate_agent.model.startswith("hosted_vllm/") and roles.or_candidate_agent.api_base
    assert roles.or_choice_user.model.startswith("openai/") and roles.slot_hit_judge.model.startswith("anthropic/")
    assert roles.or_open_user.max_tokens == 256  # params.yaml's own value, which the preset does not write
    settings = EvalSettings.model_validate(params["evaluate"]["optimization"])
    assert settings.cases == "../shared/data/or-clarify" and len(settings.methods) == 3

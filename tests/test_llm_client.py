"""The LLM client against the scripted mock provider: cache, retries, regeneration, typed failure, concurrency."""

from __future__ import annotations

import json
import time

import pytest
from pydantic import BaseModel

from tasks.llm.cache import CallCache
from tasks.llm.client import LLMCallFailed, LLMClient
from tasks.llm.providers import ensure_registered
from tasks.llm.records import RoleConfig, RoleFailure


class Answer(BaseModel):
    value: int


def first_user(messages: list[dict]) -> str:
    return next(m["content"] for m in messages if m["role"] == "user")


def doubling(messages: list[dict]) -> str:
    """Answers the first user message (an integer) with twice its value, whatever repair turns follow."""
    return json.dumps({"value": 2 * int(first_user(messages))})


@pytest.fixture
def mock():
    ensure_registered()
    from tasks.llm.providers import mock as mock_module

    counter = {"n": 0}

    def make(**kw) -> tuple[str, mock_module.MockScript]:
        counter["n"] += 1
        script = mock_module.MockScript(**kw)
        name = f"t{time.time_ns()}-{counter['n']}"
        return mock_module.register(name, script), script

    return make


@pytest.fixture
def client(tmp_path):
    return LLMClient(CallCache(tmp_path / "calls.sqlite"), backoff_s=0.001, seed=0)


def cfg(model: str, **kw) -> RoleConfig:
    return RoleConfig(backend="llm", model=model, **kw)


def ask(n: int) -> list[dict]:
    return [{"role": "system", "content": "double it"}, {"role": "user", "content": str(n)}]


def test_cache_hit_makes_no_provider_call(tmp_path, mock):
    model, script = mock(rule=doubling)
    first = LLMClient(CallCache(tmp_path / "c.sqlite"))
    assert first.map_structured(role="r", cfg=cfg(model), messages=[ask(3)], schema=Answer) == [Answer(value=6)]
    assert script.calls == 1
    again = LLMClient(CallCache(tmp_path / "c.sqlite"))  # a new process would open the same file
    assert again.map_structured(role="r", cfg=cfg(model), messages=[ask(3)], schema=Answer) == [Answer(value=6)]
    assert script.calls == 1
    assert again.accounting.snapshot()["r"]["cache_hits"] == 1
    # a different sampling parameter is a different key
    again.map_structured(role="r", cfg=cfg(model, temperature=0.7), messages=[ask(3)], schema=Answer)
    assert script.calls == 2


def test_cache_never_stores_secrets(tmp_path, mock, monkeypatch):
    secret = "sk-test-5ecr3t-value-0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    model, _ = mock(rule=doubling)
    cache_path = tmp_path / "c.sqlite"
    client = LLMClient(CallCache(cache_path))
    client.map_structured(role="r", cfg=cfg(model), messages=[ask(1), ask(2)], schema=Answer)
    cache = CallCache(cache_path)
    assert len(cache) == 2
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("c.sqlite*"))
    assert secret.encode() not in raw
    assert b"api_key" not in raw and b"Authorization" not in raw


def test_transient_errors_are_retried(client, mock):
    model, script = mock(rule=doubling, fail_first=2, fault="server")
    assert client.map_structured(role="r", cfg=cfg(model), messages=[ask(5)], schema=Answer) == [Answer(value=10)]
    assert script.calls == 3
    assert client.accounting.snapshot()["r"]["retries"] == 2


@pytest.mark.parametrize("fault", ["rate_limit", "timeout", "server", "connection"])
def test_every_transient_kind_is_retried(client, mock, fault):
    model, _ = mock(rule=doubling, fail_first=1, fault=fault)
    assert client.map_structured(role="r", cfg=cfg(model), messages=[ask(1)], schema=Answer) == [Answer(value=2)]


def test_exhausted_retries_give_a_typed_failure(client, mock):
    model, script = mock(rule=doubling, fail_first=99, fault="rate_limit")
    [out] = client.map_structured(role="r", cfg=cfg(model, max_retries=2), messages=[ask(1)], schema=Answer)
    assert isinstance(out, RoleFailure)
    assert (out.role, out.kind, out.attempts) == ("r", "transient", 3)
    assert script.calls == 3
    assert client.accounting.snapshot()["r"]["failures"] == 1


def test_non_transient_errors_are_not_retried(client, mock):
    import litellm

    error = litellm.AuthenticationError(message="bad key", llm_provider="mock", model="m")
    model, script = mock(raise_always=error)
    [out] = client.map_structured(role="r", cfg=cfg(model), messages=[ask(1)], schema=Answer)
    assert isinstance(out, RoleFailure) and out.kind == "provider" and out.attempts == 1
    assert script.calls == 1
    with pytest.raises(LLMCallFailed):
        client.complete(role="r", cfg=cfg(model), messages=ask(1))


def test_invalid_output_is_regenerated_with_a_repair_message(client, mock):
    model, script = mock(outputs=["sure! the answer is six", '{"value": "six"}', '```json\n{"value": 6}\n```'])
    [out] = client.map_structured(role="r", cfg=cfg(model), messages=[ask(3)], schema=Answer)
    assert out == Answer(value=6)
    assert script.calls == 3
    last = script.requests[-1]
    assert [m["role"] for m in last] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert "value" in last[-1]["content"] and "JSON schema" in last[-1]["content"]
    assert client.accounting.snapshot()["r"]["regenerations"] == 2


def test_output_that_never_validates_is_a_typed_failure(client, mock):
    model, script = mock(outputs=["no json here"])
    [out] = client.map_structured(role="r", cfg=cfg(model, max_regenerations=3), messages=[ask(3)], schema=Answer)
    assert isinstance(out, RoleFailure) and out.kind == "invalid_output" and out.attempts == 4
    assert script.calls == 4


def test_one_failure_does_not_stop_the_batch(client, mock):
    def rule(messages):
        n = int(first_user(messages))
        return "broken" if n == 2 else json.dumps({"value": n})

    model, _ = mock(rule=rule)
    outs = client.map_structured(role="r", cfg=cfg(model, max_regenerations=1), messages=[ask(1), ask(2), ask(3)],
                                 schema=Answer)
    assert outs[0] == Answer(value=1) and outs[2] == Answer(value=3)
    assert isinstance(outs[1], RoleFailure)


def test_concurrency_bound_is_respected(client, mock):
    model, script = mock(rule=doubling, latency_s=0.05)
    outs = client.map_structured(role="r", cfg=cfg(model, concurrency=4), messages=[ask(i) for i in range(24)],
                                 schema=Answer)
    assert outs == [Answer(value=2 * i) for i in range(24)]
    assert script.max_in_flight == 4


def test_rpm_spaces_request_starts(client, mock):
    model, _ = mock(rule=doubling)
    started = time.perf_counter()
    client.map_structured(role="r", cfg=cfg(model, rpm=1200, concurrency=16), messages=[ask(i) for i in range(11)],
                          schema=Answer)
    assert time.perf_counter() - started >= 10 * 60 / 1200 * 0.95


def test_injected_faults_give_the_same_outputs_as_none(tmp_path, mock):
    clean_model, _ = mock(rule=doubling)
    faulty_model, faulty = mock(rule=doubling, fault_rate=0.2, malformed_rate=0.2, fault="rate_limit", seed=7)
    requests = [ask(i) for i in range(60)]
    clean = LLMClient(use_cache=False).map_structured(role="r", cfg=cfg(clean_model), messages=requests, schema=Answer)
    client = LLMClient(use_cache=False, backoff_s=0.001)
    noisy = client.map_structured(role="r", cfg=cfg(faulty_model, max_retries=8), messages=requests, schema=Answer)
    assert noisy == clean
    usage = client.accounting.snapshot()["r"]
    assert usage["retries"] > 0 and usage["regenerations"] > 0 and usage["failures"] == 0
    assert faulty.calls > 60


def test_accounting_counts_tokens_and_writes_json(tmp_path, client, mock):
    model, _ = mock(rule=doubling)
    client.map_structured(role="judge", cfg=cfg(model), messages=[ask(1), ask(2)], schema=Answer)
    client.accounting.write(tmp_path / "usage.json")
    usage = json.loads((tmp_path / "usage.json").read_text())["roles"]["judge"]
    assert usage["requests"] == 2 and usage["provider_calls"] == 2
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0 and usage["model"] == model


def test_unknown_mock_script_fails_clearly(client):
    [out] = client.map_structured(role="r", cfg=cfg("mock/does-not-exist"), messages=[ask(1)], schema=Answer)
    assert isinstance(out, RoleFailure) and "no mock script named" in out.message

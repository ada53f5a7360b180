"""Every role against a real inference server: llama-cpp-python's server (``make llm-server``) serving the embedded
SmolLM2-135M GGUF, started once per test run, each role's request sent through the project's client in the server's
dialect (``json_object`` + schema, decoding constrained by grammar). A 135M model writes floor-quality content; what
is checked is that each role comes back as a parsed record of its own schema or as a counted failure of a known kind,
never a crash or a silent gap. Skipped when llama-cpp-python (the ``serve`` extra, ``make setup``) is not installed.
"""

from __future__ import annotations

import pytest

from tasks.domains.optimization.context import OPTIMIZATION_CONTEXT
from tasks.llm import server
from tasks.llm.client import LLMClient, structured_mode
from tasks.llm.records import RoleFailure
from tasks.prefect_server import free_port
from tasks.roles.base import run_role
from tasks.roles.config import ROLE_NAMES, RolesParams, describe_roles
from tasks.roles.registry import get_spec
from tests.test_roles_llm_backend import example

FAILURE_KINDS = {"invalid_output", "truncated", "transient", "provider"}
TEST_MAX_TOKENS = 96
"""Each role's budget in this test (the preset's cap is larger). A reply cut by it is counted ``truncated`` at once:
the client's retry at twice the budget (``retry_truncated``) is off here, as it cut the same six roles again at 192
tokens in every measured run and cost a quarter of the test's time."""
SERVER_THREADS = 1
"""The suite runs a test worker on every core: a second server thread only fights the other worker for its core."""
MIN_PARSED = 13
"""At least half of the 26 roles come back as records of their schema from their own prompts (measured: 17-18)."""


@pytest.fixture(scope="session")
def served(tmp_path_factory):
    """The real server, started once per test run in its own state folder, stopped at the end."""
    if not server.installed():
        pytest.skip("llama-cpp-python is not installed (the `serve` extra: make setup or pip install -e '.[serve]')")
    folder = tmp_path_factory.mktemp("llm-server")
    with pytest.MonkeyPatch.context() as env:
        # its OpenMP threads sleep while they wait: spinning, they hold the core the suite's other worker needs
        env.setenv("OMP_WAIT_POLICY", "PASSIVE")
        # a free port, not server.PORT (a user's own server may hold it)
        base = server.start(folder, port=free_port(), timeout=120, threads=SERVER_THREADS)
    yield folder, base
    server.stop(folder)


@pytest.fixture
def served_roles(served, monkeypatch) -> RolesParams:
    """``roles.preset: served`` resolved against the session's server."""
    folder, _ = served
    monkeypatch.setattr(server, "state_dir", lambda root=None: folder)
    return RolesParams.model_validate({"preset": "served"})


def send_each(names, roles: RolesParams) -> tuple[dict[str, object], dict[str, dict]]:
    """One request per role through the project's client (no call cache), in the server's dialect."""
    client = LLMClient(use_cache=False, retry_truncated=False)
    outcomes: dict[str, object] = {}
    for name in names:
        spec = get_spec(name)
        cfg = roles.get(name).model_copy(update={"max_tokens": TEST_MAX_TOKENS, "max_regenerations": 0})
        # the server's dialect: JSON mode with the role's schema, every property required
        fmt = LLMClient._format_kwargs(structured_mode(cfg, spec.output_model), spec.output_model)["response_format"]
        assert fmt["type"] == "json_object" and set(fmt["schema"]["required"]) == set(fmt["schema"]["properties"])
        inp = spec.input_model.model_validate(example(name))
        [outcomes[name]] = run_role(spec, [inp], cfg, domain=OPTIMIZATION_CONTEXT, client=client)
    return outcomes, client.accounting.snapshot()


def check_outcomes(outcomes: dict[str, object], usage: dict[str, dict]) -> list[str]:
    """Each role a record of its own schema or a failure of a known kind, counted; every call reached the server
    (tokens and latency counted). Returns the roles that came back parsed."""
    parsed = [n for n, o in outcomes.items() if isinstance(o, get_spec(n).output_model)]
    failed = {n: o for n, o in outcomes.items() if isinstance(o, RoleFailure)}
    assert set(parsed) | set(failed) == set(outcomes)
    for name, failure in failed.items():
        assert failure.kind in FAILURE_KINDS and failure.role == name, failure
        assert usage[name]["failures"] == 1
    for name in outcomes:
        row = usage[name]
        assert row["model"] == server.SERVED_ROLE["model"] and row["requests"] == 1
        assert row["provider_calls"] >= 1 and row["completion_tokens"] > 0 and row["latency_s"] > 0, (name, row)
    return parsed


QUICK_ROLES = ("rewriter", "or_gap_alignment", "question_detector")
"""Three roles with short prompts (200-400 tokens): the default suite's check of the real server."""


def test_short_prompt_roles_get_records_from_the_real_server(served, served_roles):
    outcomes, usage = send_each(QUICK_ROLES, served_roles)
    parsed = check_outcomes(outcomes, usage)
    # grammar-constrained decoding: these three came back as records of their schema in every measured run
    assert len(parsed) >= 2, outcomes


@pytest.mark.slow
def test_every_role_gets_a_parsed_record_or_a_counted_failure_from_the_real_server(served, served_roles):
    """Every role in ROLE_NAMES with its own prompt, one request each: about 100-120 s alone on 2 cores (the 26
    prompts are 15,858 tokens, read at about 300 tokens/s: docs/served-models.md), hence ``slow``."""
    outcomes, usage = send_each(ROLE_NAMES, served_roles)
    parsed = check_outcomes(outcomes, usage)
    # greedy decoding constrained by each role's schema: most replies are records of it even from a 135M model;
    # the rest are cut by the budget or refused by the role's validation
    assert len(parsed) >= MIN_PARSED, {n: o for n, o in outcomes.items() if n not in parsed}


SCHEMA_MAX_TOKENS = 48
"""The budget of the every-schema check: the short schemas' records fit; a cut one is a counted ``truncated``."""


def test_every_role_schema_is_decoded_by_the_real_server(served, served_roles):
    """Every LLM-capable role's schema through the project's client and the real server's constrained decoding, in
    the default suite: one request per role whose prompt is one line naming the role, so the check costs decoding,
    not the 15,858 prompt tokens of the roles' own prompts (those run under ``slow``, above). Each comes back as a
    record of the role's schema or a counted failure of a known kind; the server refuses none of the 26 schemas."""
    client = LLMClient(use_cache=False, retry_truncated=False)
    outcomes = {}
    for name in ROLE_NAMES:
        spec = get_spec(name)
        cfg = served_roles.get(name).model_copy(update={"max_tokens": SCHEMA_MAX_TOKENS, "max_regenerations": 0})
        messages = [{"role": "system", "content": f"You are the {name} role. Reply with one JSON object."},
                    {"role": "user", "content": "Reply now."}]
        [outcomes[name]] = client.map_structured(role=name, cfg=cfg, messages=[messages], schema=spec.output_model)
    usage = client.accounting.snapshot()
    parsed = check_outcomes(outcomes, usage)
    refused = {n: o for n, o in outcomes.items() if isinstance(o, RoleFailure) and o.kind == "provider"}
    assert not refused, refused  # every schema compiled into the server's grammar
    # greedy, constrained, 48 tokens: the short schemas close (measured 9 of 26 on an idle machine), the long ones are
    # cut and counted as truncated
    assert len(parsed) >= len(ROLE_NAMES) // 4, {n: o for n, o in outcomes.items() if n not in parsed}


def test_the_served_preset_points_every_role_at_the_server(served, served_roles):
    _, base = served
    described = describe_roles(served_roles)
    for name in ROLE_NAMES:
        cfg = served_roles.get(name)
        assert (cfg.backend, cfg.api_base, cfg.structured_output) == ("llm", base, "json_object_schema")
        assert cfg.max_tokens <= server.SERVED_MAX_TOKENS
        assert described[name]["model"] == server.SERVED_ROLE["model"] and described[name]["api_base"] == base
    assert server.start(served[0]) == base  # idempotent: the running server's URL, no second process


def test_the_served_preset_without_a_server_says_how_to_start_one(tmp_path, monkeypatch):
    monkeypatch.setattr(server, "state_dir", lambda root=None: tmp_path)
    with pytest.raises(ValueError, match="make llm-server"):
        RolesParams.model_validate({"preset": "served"})
    assert server.url(tmp_path) is None and server.stop(tmp_path) is False


def test_failed_requests_are_counted_by_kind_for_the_stage_metrics(tmp_path):
    import time

    from tasks.llm.accounting import Accounting
    from tasks.llm.cache import CallCache
    from tasks.llm.providers import ensure_registered
    from tasks.llm.providers.mock import MockScript, register
    from tasks.llm.records import RoleConfig
    from tasks.roles.failures import llm_role_calls

    ensure_registered()
    model = register(f"garbage-{time.time_ns()}", MockScript(outputs=["not JSON at all"]))
    spec = get_spec("question_detector")
    client = LLMClient(CallCache(tmp_path / "calls.sqlite"), accounting=Accounting())
    client.accounting.add("annotator", backend="local", model="local-rules", requests=4)
    outs = run_role(spec, [spec.input_model(turn="What is the deadline?"), spec.input_model(turn="READY")],
                    RoleConfig(backend="llm", model=model, max_regenerations=1), domain=OPTIMIZATION_CONTEXT,
                    client=client)
    assert all(isinstance(o, RoleFailure) and o.kind == "invalid_output" for o in outs)
    calls = llm_role_calls(client.accounting.snapshot())
    assert set(calls) == {"question_detector"}  # local roles are not listed
    row = calls["question_detector"]
    assert (row["requests"], row["failures"], row["failures_by_kind"]) == (2, 2, {"invalid_output": 2})
    assert row["regenerations"] == 2 and row["provider_calls"] == 4 and row["model"] == model


def test_the_server_asks_for_the_same_port_each_start_so_the_call_cache_survives_a_restart():
    """The call cache keys a served role's calls by api_base: a restart on another port would miss every reply."""
    import socket

    if server.port_free(server.PORT):
        assert server.preferred_port() == server.PORT
        with socket.socket() as taken:
            taken.bind((server.HOST, server.PORT))
            other = server.preferred_port()
            assert other != server.PORT and server.port_free(other)
    else:  # a server of the user's holds it: the next start falls back to a free port
        assert server.preferred_port() != server.PORT


def test_a_port_left_in_time_wait_by_a_stopped_server_counts_as_free():
    """A server stopped right after serving leaves its connections in TIME_WAIT; uvicorn binds with SO_REUSEADDR, so
    the port is usable, and the restart must not move to another port (a cold call cache)."""
    import socket

    port = free_port()
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((server.HOST, port))
    listener.listen()
    client = socket.create_connection((server.HOST, port))
    accepted, _ = listener.accept()
    accepted.close()  # the server side closes first: its end of the connection waits in TIME_WAIT
    client.close()
    listener.close()
    with socket.socket() as plain:  # a bind without SO_REUSEADDR (the check before) is refused here
        assert _plain_bind_fails(plain, port), "no TIME_WAIT left on this machine: the case cannot be reproduced"
    assert server.port_free(port)


def _plain_bind_fails(sock, port: int) -> bool:
    try:
        sock.bind((server.HOST, port))
    except OSError:
        return True
    return False

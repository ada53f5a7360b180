"""Fail safely (issue 21): output folders stay inside their stage's root, keys never reach artifacts or logs, and
cached task results load as plain JSON only."""

from __future__ import annotations

import json
import logging
import os
import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from tasks.errors import InputError
from tasks.store import contained_dir, sha256_tree
from tests.conftest import ROOT, python, server_folder, tiny_params, write_params


@pytest.mark.parametrize("out", ["data/samples", ".", "data/eval/optimization/../../samples", "ABSOLUTE"])
def test_evaluate_refuses_an_out_folder_outside_its_output_root(project, tmp_path, out):
    cases = project / "data" / "cases" / "optimization"
    cases.mkdir(parents=True)
    shutil.copy(ROOT / "tests" / "data" / "or_cases.jsonl", cases / "cases.jsonl")  # valid inputs: only --out is bad
    outside = tmp_path / "elsewhere"
    out = str(outside) if out == "ABSOLUTE" else out
    before = sha256_tree(project / "data" / "samples")
    proc = python(project, "-m", "flows.evaluate", "--domain", "optimization", "--out", out, check=False)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: --out: "), proc.stderr
    assert "outside data/eval/optimization/" in lines[0]
    assert sha256_tree(project / "data" / "samples") == before
    assert (project / ".git").is_dir() and (project / "flows" / "evaluate.py").is_file()
    assert not outside.exists() and not (project / "data" / "eval").exists()


def test_an_out_folder_may_not_escape_through_a_symlink(tmp_path):
    root = tmp_path / "repo"
    (root / "data" / "eval" / "swe").mkdir(parents=True)
    (root / "data" / "samples").mkdir()
    (root / "data" / "eval" / "swe" / "escape").symlink_to(root / "data" / "samples")
    with pytest.raises(InputError, match=r"^--out: 'data/eval/swe/escape' resolves to data/samples, outside"):
        contained_dir(root, "data/eval/swe", "data/eval/swe/escape", flag="--out")
    assert contained_dir(root, "data/eval/swe", None, flag="--out") == root / "data" / "eval" / "swe"
    inside = contained_dir(root, "data/eval/swe", str(root / "data" / "eval" / "swe" / "try2"), flag="--out")
    assert inside == root / "data" / "eval" / "swe" / "try2"


# ---- API keys never reach error texts, logs or artifacts -----------------------------------------------------------

FAKE_KEY = "cfk-test-7Hq2Lx9Vb4Nw1Rz8"  # no sk- prefix: only the env-var rule can catch it when quoted bare


class _EchoHeaders(BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint that refuses every request and quotes the request headers back."""

    seen: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        auth = self.headers.get("Authorization", "")
        _EchoHeaders.seen.append(auth)
        key = auth.removeprefix("Bearer ")
        message = (f"Incorrect API key provided: {key}. You sent Authorization: {auth}; "
                   f"headers={dict(self.headers)}")
        body = json.dumps({"error": {"message": message, "type": "invalid_request_error", "code": "invalid_api_key"}})
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def echo_server(monkeypatch):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EchoHeaders)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _EchoHeaders.seen = []
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    monkeypatch.setenv("OPENAI_API_BASE", f"http://127.0.0.1:{server.server_address[1]}/v1")
    yield server
    server.shutdown()
    server.server_close()


def test_redact_removes_keys_tokens_and_auth_headers(monkeypatch):
    from tasks.llm.redact import redact

    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-0123456789")
    monkeypatch.setenv("HF_HUB_DISABLE_TOKEN", "1")
    text = ("Authorization: Bearer abc.def-ghi 'authorization': 'Basic Zm9vOmJhcg==' x-api-key=k3y-secret-value "
            "key sk-proj-ABCDEFGHIJKLMNOP and tok-0123456789 and 1 version 1.2")
    clean = redact(text)
    for secret in ("abc.def-ghi", "Zm9vOmJhcg==", "k3y-secret-value", "sk-proj-ABCDEFGHIJKLMNOP", "tok-0123456789"):
        assert secret not in clean, clean
    assert clean.endswith("and [REDACTED] and 1 version 1.2")


def test_a_provider_error_echoing_the_key_is_redacted_in_failures_and_logs(echo_server, tmp_path, caplog, capfd):
    import traceback

    from tasks.domains.optimization.context import OPTIMIZATION_CONTEXT
    from tasks.llm.cache import CallCache
    from tasks.llm.client import LLMCallFailed, LLMClient
    from tasks.llm.records import RoleConfig, RoleFailure
    from tasks.roles.base import run_role
    from tasks.roles.question_detector import SPEC as spec

    caplog.set_level(logging.DEBUG)
    client = LLMClient(CallCache(tmp_path / "calls.sqlite"), backoff_s=0)
    cfg = RoleConfig(backend="llm", model="openai/gpt-fake", max_retries=0, timeout_s=20)
    (failure,) = run_role(spec, [spec.input_model(turn="QUESTION: What is the budget?")], cfg,
                          domain=OPTIMIZATION_CONTEXT, client=client)
    with pytest.raises(LLMCallFailed) as raised:
        client.complete(role="question_detector", cfg=cfg, messages=[{"role": "user", "content": "hi"}])
    log = logging.getLogger("LiteLLM")
    try:  # what a library may log from a raw provider exception, with its traceback
        raise RuntimeError(f"provider said: Authorization: Bearer {FAKE_KEY}")
    except RuntimeError as err:
        log.exception("call failed: %s (key %s)", err, FAKE_KEY)

    assert _EchoHeaders.seen and FAKE_KEY in _EchoHeaders.seen[0], "the fake provider never saw the key"
    assert isinstance(failure, RoleFailure) and failure.kind == "provider" and "[REDACTED]" in failure.message
    printed = "".join(traceback.format_exception(raised.value))
    out, err = capfd.readouterr()
    assert "call failed: provider said: Authorization: [REDACTED]" in caplog.text + err  # logged, and redacted
    for text in (failure.model_dump_json(), printed, caplog.text, out, err, (tmp_path / "calls.sqlite").read_bytes()):
        text = text.decode("latin-1") if isinstance(text, bytes) else text
        assert FAKE_KEY not in text, text[:2000]


def _files_holding(folder, needle: bytes) -> list[str]:
    hits = []
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink() and needle in path.read_bytes():
            hits.append(str(path.relative_to(folder)))
    return hits


def test_an_evaluation_with_a_key_echoing_provider_stores_no_key(project, echo_server, prefect_api, monkeypatch):
    cases = project / "data" / "cases" / "optimization"
    cases.mkdir(parents=True)
    shutil.copy(ROOT / "tests" / "data" / "or_cases.jsonl", cases / "cases.jsonl")
    params = tiny_params()
    params["evaluate"]["optimization"].update({"limit": 1, "methods": [{"name": "freeqa", "protocols": ["open"]}],
                                               "task_runner": "serial"})
    judge = {"backend": "llm", "model": "openai/gpt-fake", "max_retries": 0, "timeout_s": 20}
    params["roles"].update({"slot_hit_judge": judge, "or_session_judge": judge})
    write_params(project, params)
    # the run's server keeps the flow's logs (sent at DEBUG) in its database, which is searched below with the project
    monkeypatch.setenv("PREFECT_LOGGING_TO_API_ENABLED", "true")
    monkeypatch.setenv("PREFECT_LOGGING_LEVEL", "DEBUG")
    monkeypatch.setenv("CLARIFYFLOW_CACHE_DIR", str(project / ".cache"))
    proc = python(project, "-m", "flows.evaluate", "--domain", "optimization", check=False)

    assert proc.returncode in (0, 3), proc.stderr[-3000:]
    assert _EchoHeaders.seen and FAKE_KEY in _EchoHeaders.seen[0], "the judge never called the fake provider"
    assert FAKE_KEY not in proc.stdout + proc.stderr
    for folder in (project / "data", project / ".cache", server_folder()):
        assert folder.is_dir(), folder
        assert _files_holding(folder, FAKE_KEY.encode()) == [], folder
    assert list(server_folder().rglob("*.db")), "the server keeps no database there"
    # a role failure is never stored as finished work (issue 43): no unit of this run holds the (redacted) failure
    assert _files_holding(project / ".cache" / "eval", b"[REDACTED]") == [], "a judge failure was stored"


# ---- cached task results load as plain JSON only -------------------------------------------------------------------


class _Payload:
    """Unpickling this creates ``path``: proof that the stored result was unpickled."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return open, (self.path, "w")


_CALLS: list[str] = []


def _doubled(token: str) -> dict:
    _CALLS.append(token)
    return {"token": token, "doubled": token * 2}


def _result_file(token: str) -> Path:
    storage = Path(os.environ["PREFECT_LOCAL_STORAGE_PATH"])
    (found,) = [p for p in storage.iterdir() if p.is_file() and token.encode() in p.read_bytes()]
    return found


@pytest.mark.parametrize("layout", ["record", "legacy_blob"])
def test_a_cached_result_switched_to_pickle_is_never_unpickled(prefect_api, tmp_path, capfd, caplog, layout):
    import base64
    import pickle
    import uuid

    from prefect import flow

    from tasks import caching

    token = uuid.uuid4().hex
    cached = caching.cached_task("safety-doubled", modules=[caching])(_doubled)
    run = flow(name="safety-doubled")(lambda: cached(token))
    assert run() == {"token": token, "doubled": token * 2} and _CALLS.count(token) == 1
    assert run() == {"token": token, "doubled": token * 2} and _CALLS.count(token) == 1  # served from the JSON cache

    marker = tmp_path / "unpickled"
    path = _result_file(token)
    record = json.loads(path.read_text())
    pickled = base64.encodebytes(pickle.dumps(_Payload(str(marker)))).decode()
    serializer = {"type": "pickle", "picklelib": "pickle"}
    if layout == "record":
        record["metadata"]["serializer"] = serializer
        record["result"] = pickled
    else:  # the pre-3.0 PersistedResultBlob shape Prefect still accepts
        record = {"serializer": serializer, "data": pickled, "prefect_version": "2.20.0"}
    path.write_text(json.dumps(record))

    assert run() == {"token": token, "doubled": token * 2}
    assert not marker.exists(), "a tampered cache file was unpickled"
    assert _CALLS.count(token) == 2, "the tampered result must be recomputed"
    logged = capfd.readouterr().err + caplog.text  # Prefect's console handler or the root logger, by test order
    assert f"ignored cached task result {path}: serializer 'pickle' is not the plain JSON serializer" in logged
    assert json.loads(path.read_text())["metadata"]["serializer"]["type"] == "json"

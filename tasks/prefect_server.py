"""Start, check and stop the repo-local Prefect server (UI at http://127.0.0.1:4200).

``python -m tasks.prefect_server start|stop|status|url``. State lives in ``.prefect/``: ``server.pid``,
``server.url`` and ``server.log``. Used by the Makefile and by the test suite's session fixture.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 4200


def state_dir(root: Path) -> Path:
    return root / ".prefect"


def answers_ok(url: str, timeout: float = 1.0) -> bool:
    """``GET url`` answers 200 within ``timeout`` seconds."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status == 200
    except OSError:
        return False


def healthy(api_url: str, timeout: float = 1.0) -> bool:
    return answers_ok(f"{api_url.rstrip('/')}/health", timeout=timeout)


def _pid_alive(pid: int) -> bool:
    try:  # a server this process started stays a zombie (and answers kill 0) until it is reaped
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    except ChildProcessError:
        pass  # not our child: kill 0 below tells
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def local_server_url(root: Path) -> str | None:
    """The API URL of this repo's server if its pid file points at a live, healthy process."""
    folder = state_dir(root)
    try:
        pid = int((folder / "server.pid").read_text().strip())
        url = (folder / "server.url").read_text().strip()
    except (OSError, ValueError):
        return None
    return url if _pid_alive(pid) and healthy(url, timeout=0.5) else None


def free_port(host: str = DEFAULT_HOST) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def start(
    root: Path,
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    home: Path | None = None,
    timeout: float = 180.0,
    folder: Path | None = None,
) -> str:
    """Start ``prefect server start`` in the background (its own session) and wait until it is healthy."""
    folder = folder or state_dir(root)
    folder.mkdir(parents=True, exist_ok=True)
    existing = local_server_url(root) if folder == state_dir(root) else None
    if existing:
        return existing
    url = f"http://{host}:{port}/api"
    if healthy(url, timeout=0.5):
        raise RuntimeError(f"another server already answers on {url}; stop it or pick another port")
    env = dict(os.environ)
    env["PREFECT_HOME"] = str(home or folder)
    env.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    env.setdefault("DO_NOT_TRACK", "1")
    env.pop("PREFECT_API_URL", None)
    log = open(folder / "server.log", "ab")  # noqa: SIM115 - the server process keeps writing to it
    proc = subprocess.Popen(
        [sys.executable, "-m", "prefect", "server", "start", "--host", host, "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )
    (folder / "server.pid").write_text(f"{proc.pid}\n")
    (folder / "server.url").write_text(f"{url}\n")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if healthy(url):
            return url
        if proc.poll() is not None:
            raise RuntimeError(f"prefect server exited with code {proc.returncode}; see {folder / 'server.log'}")
        time.sleep(0.5)
    stop_pid(proc.pid)
    raise RuntimeError(f"prefect server not healthy after {timeout:.0f} s; see {folder / 'server.log'}")


def stop_pid(pid: int, timeout: float = 15.0) -> None:
    """Stop a server started by :func:`start` (its whole process group)."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _pid_alive(pid):
        time.sleep(0.2)
    if _pid_alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)


def stop(root: Path, folder: Path | None = None) -> bool:
    folder = folder or state_dir(root)
    pid_file = folder / "server.pid"
    try:
        pid = int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return False
    stop_pid(pid)
    pid_file.unlink(missing_ok=True)
    (folder / "server.url").unlink(missing_ok=True)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tasks.prefect_server", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["start", "stop", "status", "url"])
    parser.add_argument("--host", default=DEFAULT_HOST)
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--timeout", type=float, default=180.0)
    args = parser.parse_args(argv)
    from tasks.store import repo_root

    root = repo_root()
    if args.command == "start":
        t0 = time.monotonic()
        url = start(root, host=args.host, port=args.port, timeout=args.timeout)
        print(f"prefect server healthy at {url} ({time.monotonic() - t0:.1f} s); UI: {url.removesuffix('/api')}")
    elif args.command == "stop":
        print("prefect server stopped" if stop(root) else "no prefect server was running")
    elif args.command == "status":
        url = local_server_url(root)
        print(f"running: {url}" if url else "not running")
        return 0 if url else 1
    else:
        url = local_server_url(root)
        if not url:
            return 1
        print(url)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

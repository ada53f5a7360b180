"""Where the all-roles served test spends its time (issue 39): every role's one request against the real server,
one role at a time, with its wall time, prompt and completion tokens, provider calls and outcome.

    .venv/bin/python benchmarks/served_roles.py

The requests are the slow test's own (``tests/test_served_roles.py: send_each``: the role's example input, 96
tokens, the server's dialect, a cut reply counted without the retry at twice the budget). The script starts its own
llama-cpp-python server (the ``serve`` extra) on a free port in a temporary folder and stops it. Results go to stdout
and ``benchmarks/results/served_roles/<UTC date>-<server>.json`` with the load average at the start and the end: run
it on an otherwise idle machine.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = Path(__file__).parent / "results" / "served_roles"


def main() -> int:
    sys.path.insert(0, str(ROOT))
    from tasks.llm import server
    from tasks.prefect_server import free_port
    from tasks.roles.config import ROLE_NAMES, RolesParams
    from tests.test_served_roles import TEST_MAX_TOKENS, send_each

    if not server.installed():
        print("llama-cpp-python is not installed (the `serve` extra: make setup)")
        return 1
    folder = Path(tempfile.mkdtemp(prefix="served-roles-"))
    load = os.getloadavg()[0]
    started = time.monotonic()
    server.start(folder, port=free_port(), timeout=120)
    start_s = time.monotonic() - started
    server.state_dir = lambda root=None: folder  # the served preset resolves against this server
    roles = RolesParams.model_validate({"preset": "served"})
    rows = []
    try:
        for name in ROLE_NAMES:
            t = time.monotonic()
            outcomes, usage = send_each([name], roles)
            u = usage[name]
            rows.append({"role": name, "seconds": round(time.monotonic() - t, 2), "prompt_tokens": u["prompt_tokens"],
                         "completion_tokens": u["completion_tokens"], "provider_calls": u["provider_calls"],
                         "outcome": type(outcomes[name]).__name__,
                         "failure": getattr(outcomes[name], "kind", None)})
            print(json.dumps(rows[-1]), flush=True)
    finally:
        server.stop(folder)
    result = {"server": "llama_cpp.server", "max_tokens": TEST_MAX_TOKENS, "load_average_at_start": load,
              "server_start_s": round(start_s, 2), "calls_s": round(sum(r["seconds"] for r in rows), 1),
              "roles": len(rows), "load_average_at_end": os.getloadavg()[0],
              "parsed": sum(r["failure"] is None for r in rows),
              "prompt_tokens": sum(r["prompt_tokens"] for r in rows),
              "completion_tokens": sum(r["completion_tokens"] for r in rows),
              "provider_calls": sum(r["provider_calls"] for r in rows), "rows": rows}
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{datetime.now(UTC):%Y-%m-%d}-{result['server']}.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    print({k: v for k, v in result.items() if k != "rows"})
    print(f"written: {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

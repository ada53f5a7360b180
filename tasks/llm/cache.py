"""The persistent, content-addressed LLM call cache (SQLite).

Key = sha256 of the canonical JSON of (model, messages, the whitelisted sampling parameters, output schema, and
when a role sets them its ``api_base`` and ``extra`` litellm arguments: two servers with the same model name never
share answers). Value = the completion text and its token usage. Nothing else from the request or response is stored:
no API key, no headers, no endpoint (it enters only the hash). litellm removed its disk cache in 1.109, so this is
ours; it lives under ``.cache/`` so a stage rerun (which deletes the stage's outs) keeps it.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from tasks.llm.paths import cache_dir
from tasks.store import canonical_json

SAMPLING_KEYS = ("temperature", "max_tokens", "top_p", "seed", "stop", "n", "sample")
"""The only request parameters that enter the key (and so the only ones that could ever be stored)."""


class CachedCall(BaseModel):
    content: str
    """The answer, without any reasoning."""
    reasoning: str = ""
    """The model's reasoning (a ``reasoning_content`` field, ``<think>`` blocks), kept apart from the answer."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    """All generated tokens as the provider reports them (reasoning included: providers bill it)."""
    reasoning_tokens: int = 0
    """The share of ``completion_tokens`` the provider reports as reasoning (0 where it reports none)."""
    cost_usd: float = 0.0


def call_key(model: str, messages: list[dict], params: dict[str, Any], schema: dict | None, *,
             api_base: str | None = None, extra: dict[str, Any] | None = None) -> str:
    material = {
        "model": model,
        "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
        "params": {k: params[k] for k in SAMPLING_KEYS if params.get(k) is not None},
        "schema": schema,
    }
    if api_base:  # absent keeps the keys of calls to the provider's default endpoint as they were
        material["api_base"] = api_base.rstrip("/")
    if extra:
        material["extra"] = extra
    return hashlib.sha256(canonical_json(material).encode()).hexdigest()


BUSY_TIMEOUT_S = 30.0
"""How long a cache connection waits for another process's lock (SQLite's busy timeout, and the set-up's retries)."""


class CallCache:
    """key -> ``CachedCall``. One connection per instance, guarded by a lock; WAL lets processes share the file."""

    def __init__(self, path: Path | None = None):
        self.path = path or cache_dir() / "llm_calls.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=BUSY_TIMEOUT_S)
        self._setup()

    def _setup(self) -> None:
        """WAL mode and the table, retried while the file is locked.

        Switching a fresh (rollback-journal) file to WAL needs an exclusive lock, and SQLite answers "database is
        locked" at once, without waiting out the busy timeout, when another connection holds a write lock on it
        (its deadlock avoidance): several processes opening a new cache at the same moment hit that. So the set-up
        is retried with a short backoff until :data:`BUSY_TIMEOUT_S`; a file already in WAL is not switched again.
        """
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        delay = 0.005
        while True:
            try:
                if self._db.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                    self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
                self._db.execute(
                    "CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, model TEXT NOT NULL, "
                    "value TEXT NOT NULL, created REAL NOT NULL)"
                )
                self._db.commit()
                return
            except sqlite3.OperationalError as err:
                if ("locked" not in str(err) and "busy" not in str(err)) or time.monotonic() > deadline:
                    raise
                self._db.rollback()
                time.sleep(delay)
                delay = min(delay * 2, 0.25)

    def get(self, key: str) -> CachedCall | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM calls WHERE key = ?", (key,)).fetchone()
        return CachedCall.model_validate_json(row[0]) if row else None

    def put(self, key: str, model: str, value: CachedCall) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO calls (key, model, value, created) VALUES (?, ?, ?, ?)",
                (key, model, value.model_dump_json(), time.time()),
            )
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM calls").fetchone()[0]

    def stats(self) -> dict[str, Any]:
        with self._lock:
            rows = self._db.execute("SELECT model, COUNT(*) FROM calls GROUP BY model").fetchall()
        return {"path": self.path.name, "entries": sum(n for _, n in rows), "by_model": dict(rows)}

    def close(self) -> None:
        with self._lock:
            self._db.close()


@lru_cache(maxsize=256)
def schema_of(model: type[BaseModel] | None) -> dict | None:
    return json.loads(_schema_text(model)) if model is not None else None


@cache
def _schema_text(model: type[BaseModel]) -> str:
    """Generating a JSON schema costs about a millisecond; every call of a role needs the same one."""
    return json.dumps(model.model_json_schema(), sort_keys=True)

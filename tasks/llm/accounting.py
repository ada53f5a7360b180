"""Per-role call accounting: calls, cache hits, retries, regenerations, failures, tokens, latency and cost."""

from __future__ import annotations

import threading
from pathlib import Path

from pydantic import BaseModel

from tasks import store


class RoleUsage(BaseModel):
    backend: str = "llm"
    model: str = ""
    requests: int = 0
    """Role requests (one per input), whatever served them."""
    cache_hits: int = 0
    provider_calls: int = 0
    retries: int = 0
    regenerations: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    """Of the completion tokens, those the provider reports as reasoning."""
    truncated: int = 0
    """Provider replies cut by the token limit (finish reason ``length``); each is retried once with twice the
    budget, then fails as ``truncated``."""
    params_dropped: int = 0
    """Provider calls sent without a configured parameter the model does not accept (``temperature`` on o-series /
    gpt-5): the provider's default applied instead."""
    latency_s: float = 0.0
    """Summed wall time of provider calls (cache hits cost nothing here)."""
    cost_usd: float = 0.0
    failure_kinds: dict[str, int] = {}
    """``failures`` by ``RoleFailure.kind`` (``invalid_output``, ``transient``, ``provider``)."""


class Accounting:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.roles: dict[str, RoleUsage] = {}

    def _role(self, role: str, backend: str, model: str) -> RoleUsage:
        usage = self.roles.get(role)
        if usage is None:
            usage = self.roles[role] = RoleUsage(backend=backend, model=model)
        return usage

    def add(self, role: str, *, backend: str = "llm", model: str = "", **counts: float) -> None:
        with self._lock:
            usage = self._role(role, backend, model)
            for name, value in counts.items():
                setattr(usage, name, getattr(usage, name) + value)

    def fail(self, role: str, *, model: str = "", kind: str) -> None:
        """One request of ``role`` failed for good, of ``kind``."""
        with self._lock:
            usage = self._role(role, "llm", model)
            usage.failures += 1
            usage.failure_kinds = {**usage.failure_kinds, kind: usage.failure_kinds.get(kind, 0) + 1}

    def snapshot(self) -> dict[str, dict]:
        with self._lock:
            return {name: u.model_dump() for name, u in sorted(self.roles.items())}

    def reset(self) -> None:
        with self._lock:
            self.roles.clear()

    def write(self, path: Path) -> None:
        """Atomically write the snapshot as JSON (next to a stage's metrics)."""
        store.atomic_write_json(path, {"roles": self.snapshot()})

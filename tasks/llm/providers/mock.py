"""A scripted litellm provider for tests and benchmarks, in the spirit of inspect_ai's ``mockllm``.

Register a script under a name, then call ``model="mock/<name>"``. A script answers from a list (in order, then
repeating the last), or by a rule over the messages, and can inject latency, transient faults (rate limit,
timeout, 5xx, connection) and malformed JSON. Fault draws are deterministic: they depend on the script's seed,
the messages, and how many times those messages were sent before, so a retry of the same request can succeed.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from litellm import CustomLLM

from tasks.llm.providers.response import build_response

Fault = Literal["rate_limit", "timeout", "server", "connection"]


@dataclass
class MockScript:
    outputs: list[str] | None = None
    rule: Callable[[list[dict]], str] | None = None
    latency_s: float = 0.0
    fault_rate: float = 0.0
    fault: Fault = "rate_limit"
    malformed_rate: float = 0.0
    raise_always: Exception | None = None
    fail_first: int = 0
    """The first N sends of each distinct request fail with ``fault`` (deterministic retries)."""
    seed: int = 0
    calls: int = 0
    """Provider calls that reached this script (faulted ones included)."""
    seen: Counter = field(default_factory=Counter)
    requests: list[list[dict]] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    call_log: str | None = None
    """Append one line per answered provider call to this file (counts calls across processes)."""
    replay: dict[str, str] | None = None
    """Replay-of-local scripts: answers keyed by the digest of the messages, filled by :func:`prime_replay`."""


def _echo(messages: list[dict]) -> str:
    return next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")


class MockProvider(CustomLLM):
    def __init__(self) -> None:
        super().__init__()
        from tasks.registry import Registry

        self.scripts: Registry[MockScript] = Registry("mock script")
        self.scripts.add("echo", MockScript(rule=_echo))
        self._lock = threading.Lock()

    def script(self, name: str | None) -> MockScript | None:
        """The script registered as ``name``, or None."""
        return self.scripts.get(name) if name in self.scripts else None

    def register(self, name: str, script: MockScript) -> str:
        with self._lock:
            self.scripts.add(name, script, replace=True)
        return f"mock/{name}"

    def _plan(self, model: str, messages: list[dict]) -> tuple[MockScript, str | None, Exception | None]:
        import litellm

        script = self.script(model)
        if script is None:
            known = ", ".join(sorted(self.scripts.names()))
            return MockScript(), None, litellm.BadRequestError(
                message=f"no mock script named {model!r} (registered: {known})", model=model, llm_provider="mock"
            )
        digest = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()
        with self._lock:
            script.calls += 1
            nth = script.seen[digest]
            script.seen[digest] += 1
            script.requests.append(messages)
            index = script.calls - 1
        if script.raise_always is not None:
            return script, None, script.raise_always
        draw = random.Random(f"{script.seed}:{digest}:{nth}")
        if nth < script.fail_first or draw.random() < script.fault_rate:
            return script, None, _fault(script.fault, model)
        if script.replay is not None:
            text = script.replay.get(digest)
            if text is None:
                return script, None, litellm.BadRequestError(
                    message=f"replay script {model!r} was not primed for this request", model=model, llm_provider="mock"
                )
        elif script.rule is not None:
            try:
                text = script.rule(messages)
            except Exception as err:  # noqa: BLE001 - a broken script is a bug, not a transient fault: no retries
                return script, None, litellm.BadRequestError(
                    message=f"mock script {model!r} raised {type(err).__name__}: {err}", model=model,
                    llm_provider="mock",
                )
        elif script.outputs:
            text = script.outputs[min(index, len(script.outputs) - 1)]
        else:
            text = ""
        if draw.random() < script.malformed_rate:
            text = text[: max(1, len(text) // 2)] + " <<truncated"
        return script, text, None

    def _respond(self, model: str, messages: list[dict], text: str):
        script = self.script(model)
        if script is not None and script.call_log:
            with self._lock, open(script.call_log, "a", encoding="utf-8") as log:
                log.write(f"{model}\n")
        prompt = sum(len(str(m.get("content", "")).split()) for m in messages)
        return build_response(f"mock/{model}", text, prompt, len(text.split()))

    def completion(self, model, messages, *args, **kwargs):
        script, text, error = self._plan(model, messages)
        if script.latency_s:
            time.sleep(script.latency_s)
        if error is not None:
            raise error
        return self._respond(model, messages, text)

    async def acompletion(self, model, messages, *args, **kwargs):
        script, text, error = self._plan(model, messages)
        with self._lock:
            script.in_flight += 1
            script.max_in_flight = max(script.max_in_flight, script.in_flight)
        try:
            if script.latency_s:
                await asyncio.sleep(script.latency_s)
        finally:
            with self._lock:
                script.in_flight -= 1
        if error is not None:
            raise error
        return self._respond(model, messages, text)


def _fault(kind: Fault, model: str) -> Exception:
    import litellm

    common = {"llm_provider": "mock", "model": model}
    if kind == "rate_limit":
        return litellm.RateLimitError(message="injected rate limit", **common)
    if kind == "timeout":
        return litellm.Timeout(message="injected timeout", **common)
    if kind == "server":
        return litellm.InternalServerError(message="injected 500", **common)
    return litellm.APIConnectionError(message="injected connection reset", **common)


MOCK = MockProvider()


def register(name: str, script: MockScript) -> str:
    """Register ``script`` and return its model string, ``mock/<name>``."""
    return MOCK.register(name, script)


def messages_digest(messages: list[dict]) -> str:
    return hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()


def replay_local(name: str, *, latency_s: float = 0.0, call_log: str | None = None) -> str:
    """A mock model that answers every role with that role's own local backend output (for benchmarks and the
    resume test: real LLM-path traffic — cache, retries, concurrency, latency — with sensible content)."""
    return register(name, MockScript(replay={}, latency_s=latency_s, call_log=call_log))


def prime_replay(model: str, spec, inputs, domain=None) -> None:
    """Before an LLM-backend role call on a replay script: store the local answer for each input's messages (both
    in ``domain``, the call's)."""
    script = MOCK.script(model.split("/", 1)[1]) if model.startswith("mock/") else None
    if script is None or script.replay is None:
        return
    outputs = spec.run_local(list(inputs), domain)
    with MOCK._lock:
        for inp, out in zip(inputs, outputs):
            script.replay[messages_digest(spec.messages(inp, domain))] = out.model_dump_json()

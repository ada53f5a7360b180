"""The one door to language models: litellm plus our call cache, retries, structured output and accounting.

- A cache hit makes no provider call. Only (model, messages, sampling params, output schema, the role's api_base
  and extra arguments) form the key; only the completion text and usage are stored.
- A role's endpoint (``api_base``), key (read from the variable its ``api_key_env`` names, at call time) and
  ``extra`` litellm arguments go to every call; the key is registered for redaction and never stored.
- Timeouts, rate limits, connection errors and 5xx are retried with exponential backoff and full jitter.
- Structured output is parsed into the role's pydantic model; an invalid answer gets up to
  ``max_regenerations`` more tries, each with a repair message that quotes the validation error.
- A call that still fails becomes ``LLMCallFailed`` (``map_structured`` turns it into a ``RoleFailure`` record),
  so one bad input never stops a whole run.
- Concurrency is bounded per role by an asyncio semaphore; ``rpm`` spaces request starts.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from tasks.llm.accounting import Accounting
from tasks.llm.cache import CachedCall, CallCache, call_key, schema_of
from tasks.llm.records import RoleConfig, RoleFailure
from tasks.llm.redact import install_log_redaction, redact, redact_values, register_secret

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")

REPAIR = (
    "Your previous answer could not be used: {error}\n"
    "Reply again with only one JSON object that matches this JSON schema, and nothing else:\n{schema}"
)


class LLMCallFailed(Exception):
    """A call that failed for good; its message is redacted (a provider error may echo the request's key)."""

    def __init__(self, kind: str, message: str, attempts: int):
        message = redact(message)
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message
        self.attempts = attempts

    def to_failure(self, role: str) -> RoleFailure:
        return RoleFailure(role=role, kind=self.kind, message=self.message[:500], attempts=self.attempts)


@lru_cache(maxsize=1)
def _litellm():
    import logging

    import litellm

    from tasks.llm.providers import ensure_registered

    install_log_redaction()
    litellm.suppress_debug_info = True
    logging.getLogger("LiteLLM").setLevel(logging.ERROR)
    _drop_success_logging()
    ensure_registered()
    return litellm


def _drop_success_logging() -> None:
    """litellm hands every async success to one global logging worker bound to a single event loop. clarifyflow
    configures no litellm callbacks (accounting reads the response itself) and calls from many threads, each with
    its own loop, where that worker fails noisily; so the success handler is closed unrun instead of queued."""
    from litellm.litellm_core_utils import logging_worker

    worker = logging_worker.GLOBAL_LOGGING_WORKER
    worker.ensure_initialized_and_enqueue = lambda async_coroutine: async_coroutine.close()


@lru_cache(maxsize=1)
def retryable_errors() -> tuple[type[BaseException], ...]:
    litellm = _litellm()
    return (
        litellm.Timeout,
        litellm.RateLimitError,
        litellm.APIConnectionError,
        litellm.InternalServerError,
        litellm.ServiceUnavailableError,
        litellm.BadGatewayError,
    )


NOT_TRANSIENT = ("Missing credentials", "api_key client option must be set")
"""A missing key, which litellm reports as a 500 of its own: retrying cannot help (no request was sent)."""


def _is_retryable(err: BaseException) -> bool:
    if any(text in str(err) for text in NOT_TRANSIENT):
        return False
    if isinstance(err, retryable_errors()):
        return True
    status = getattr(err, "status_code", None)
    return isinstance(status, int) and status >= 500


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def json_candidates(text: str) -> list[str]:
    """Where the JSON object of a reply may be: the whole reply, a ```json fence, or first ``{`` to last ``}``."""
    candidates = [text.strip()]
    if text.lstrip().startswith("```"):
        fenced = _FENCE.search(text)
        if fenced:
            candidates.append(fenced.group(1).strip())
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    return list(dict.fromkeys(candidates))


def parse_output(text: str, schema: type[M]) -> M:
    """The first candidate that validates; the error of the most complete candidate otherwise."""
    candidates = json_candidates(text)
    for candidate in candidates:
        try:
            return schema.model_validate_json(candidate)
        except ValidationError as err:
            if candidate is candidates[-1]:
                raise err from None
    raise AssertionError("unreachable")


def _error_line(err: Exception) -> str:
    if isinstance(err, ValidationError):
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(root)"
        return f"{where}: {first['msg']}"
    return str(err).splitlines()[0] if str(err) else type(err).__name__


_loops = threading.local()


def _thread_loop() -> asyncio.AbstractEventLoop:
    """One event loop per thread, reused across calls: a fresh loop per call (asyncio.run) also builds a fresh
    default executor and re-binds litellm's background logger, which costs more than a mock call itself."""
    loop = getattr(_loops, "loop", None)
    if loop is None or loop.is_closed():
        loop = asyncio.new_event_loop()
        _loops.loop = loop
    return loop


def run_sync(make: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine from sync code, also when the caller already sits inside an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _thread_loop().run_until_complete(make())
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(make())).result()


def endpoint_kwargs(cfg: RoleConfig) -> dict[str, Any]:
    """The role's endpoint, key and extra litellm arguments. The key is read now, from the variable ``api_key_env``
    names, and registered for redaction; an unset variable fails the call (``provider``, not retried)."""
    kwargs: dict[str, Any] = dict(cfg.extra)
    if cfg.api_base:
        kwargs["api_base"] = cfg.api_base
    if cfg.api_key_env:
        key = os.environ.get(cfg.api_key_env)
        if not key:
            raise LLMCallFailed("provider", "the variable api_key_env names is not set (the name is not shown: it may "
                                "be a pasted key)", 0)
        register_secret(key)
        kwargs["api_key"] = key
    return kwargs


class LLMClient:
    def __init__(
        self,
        cache: CallCache | None = None,
        *,
        use_cache: bool = True,
        accounting: Accounting | None = None,
        backoff_s: float = 1.0,
        backoff_max_s: float = 30.0,
        seed: int | None = None,
    ):
        self._cache = cache
        self.use_cache = use_cache
        self.accounting = accounting or Accounting()
        self.backoff_s = backoff_s
        self.backoff_max_s = backoff_max_s
        self._rng = random.Random(seed)
        self._rpm_lock = threading.Lock()
        self._next_start: dict[str, float] = {}

    @property
    def cache(self) -> CallCache | None:
        if self.use_cache and self._cache is None:
            self._cache = CallCache()
        return self._cache if self.use_cache else None

    # ---- one provider call, cached and retried -------------------------------------------------------------------

    async def _pace(self, role: str, rpm: int | None) -> None:
        if not rpm:
            return
        with self._rpm_lock:
            now = time.monotonic()
            start = max(now, self._next_start.get(role, now))
            self._next_start[role] = start + 60.0 / rpm
        if start > now:
            await asyncio.sleep(start - now)

    def _backoff(self, attempt: int) -> float:
        return self._rng.uniform(0, min(self.backoff_max_s, self.backoff_s * 2**attempt))

    async def acomplete(
        self, *, role: str, cfg: RoleConfig, messages: list[dict], schema: type[BaseModel] | None = None,
        sample: str | None = None,
    ) -> str:
        """The completion text for ``messages``: from the cache, or from the provider with retries.

        ``sample`` only enters the cache key: distinct samples of the same sampled prompt (the K repeats of an
        evaluation) get distinct cache entries instead of replaying each other.
        """
        litellm = _litellm()
        params = {"temperature": cfg.temperature, "max_tokens": cfg.max_tokens}
        key = call_key(cfg.model, messages, {**params, "sample": sample}, schema_of(schema), api_base=cfg.api_base,
                       extra=cfg.extra)
        cache = self.cache
        hit = cache.get(key) if cache is not None else None
        if hit is not None:
            self.accounting.add(role, model=cfg.model, cache_hits=1)
            return hit.content
        endpoint = endpoint_kwargs(cfg)
        attempt = 0
        while True:
            await self._pace(role, cfg.rpm)
            started = time.perf_counter()
            try:
                response = await litellm.acompletion(
                    model=cfg.model,
                    messages=messages,
                    timeout=cfg.timeout_s,
                    num_retries=0,
                    drop_params=True,
                    **params,
                    **self._format_kwargs(cfg, schema),
                    **endpoint,
                )
            except Exception as err:  # noqa: BLE001 - every provider error becomes an LLMCallFailed
                self.accounting.add(role, model=cfg.model, latency_s=time.perf_counter() - started)
                # ``from None``: the provider's exception may quote the key, and a chained traceback would print it
                if not _is_retryable(err):
                    raise LLMCallFailed("provider", _error_line(err), attempt + 1) from None
                if attempt >= cfg.max_retries:
                    raise LLMCallFailed("transient", _error_line(err), attempt + 1) from None
                self.accounting.add(role, model=cfg.model, retries=1)
                await asyncio.sleep(self._backoff(attempt))
                attempt += 1
                continue
            elapsed = time.perf_counter() - started
            content = redact_values(response.choices[0].message.content or "")  # a reply echoing a key: never stored
            usage = getattr(response, "usage", None)
            record = CachedCall(
                content=content,
                prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
                cost_usd=self._cost(litellm, response),
            )
            self.accounting.add(
                role,
                model=cfg.model,
                provider_calls=1,
                latency_s=elapsed,
                prompt_tokens=record.prompt_tokens,
                completion_tokens=record.completion_tokens,
                cost_usd=record.cost_usd,
            )
            if cache is not None:
                cache.put(key, cfg.model, record)
            return content

    @staticmethod
    def _cost(litellm, response) -> float:
        """litellm prices the response while building it; unknown prices (local and custom models) count as 0."""
        hidden = getattr(response, "_hidden_params", None) or {}
        try:
            return float(hidden.get("response_cost") or 0.0)
        except (TypeError, ValueError):
            return 0.0

    @staticmethod
    def _format_kwargs(cfg: RoleConfig, schema: type[BaseModel] | None) -> dict[str, Any]:
        from tasks.llm.providers import EMBEDDED_PROVIDERS

        if schema is None or cfg.structured_output == "prompt" or cfg.model.split("/", 1)[0] in EMBEDDED_PROVIDERS:
            return {}
        if cfg.structured_output == "json_schema":
            return {"response_format": schema}
        try:
            supported = _litellm().supports_response_schema(model=cfg.model)
        except Exception:  # noqa: BLE001 - unmapped model: rely on the prompt and our validation
            supported = False
        return {"response_format": schema} if supported else {}

    # ---- structured output with regeneration ---------------------------------------------------------------------

    async def astructured(self, *, role: str, cfg: RoleConfig, messages: list[dict], schema: type[M],
                          sample: str | None = None) -> M:
        conversation = list(messages)
        last_error = ""
        for generation in range(cfg.max_regenerations + 1):
            if generation:
                self.accounting.add(role, model=cfg.model, regenerations=1)
            text = await self.acomplete(role=role, cfg=cfg, messages=conversation, schema=schema, sample=sample)
            try:
                return parse_output(text, schema)
            except (ValidationError, ValueError) as err:
                last_error = _error_line(err)
                schema_text = json.dumps(schema.model_json_schema(), ensure_ascii=False)
                conversation = [
                    *conversation,
                    {"role": "assistant", "content": text},
                    {"role": "user", "content": REPAIR.format(error=last_error, schema=schema_text)},
                ]
        raise LLMCallFailed("invalid_output", last_error, cfg.max_regenerations + 1)

    async def amap_structured(
        self, *, role: str, cfg: RoleConfig, messages: Sequence[list[dict]], schema: type[M],
        progress: bool | None = None, sample: str | None = None,
    ) -> list:
        semaphore = asyncio.Semaphore(cfg.concurrency)
        bar = _progress(len(messages), role, progress)

        async def one(msgs: list[dict]):
            async with semaphore:
                try:
                    return await self.astructured(role=role, cfg=cfg, messages=msgs, schema=schema, sample=sample)
                except LLMCallFailed as failed:
                    self.accounting.add(role, model=cfg.model, failures=1)
                    return failed.to_failure(role)
                finally:
                    if bar is not None:
                        bar.update(1)

        self.accounting.add(role, model=cfg.model, requests=len(messages))
        try:
            return list(await asyncio.gather(*(one(m) for m in messages)))
        finally:
            if bar is not None:
                bar.close()

    def map_structured(self, *, role: str, cfg: RoleConfig, messages: Sequence[list[dict]], schema: type[M],
                       progress: bool | None = None, sample: str | None = None) -> list:
        """Outputs aligned with ``messages``: a ``schema`` instance or a ``RoleFailure`` each."""
        return run_sync(lambda: self.amap_structured(role=role, cfg=cfg, messages=messages, schema=schema,
                                                     progress=progress, sample=sample))

    def complete(self, *, role: str, cfg: RoleConfig, messages: list[dict]) -> str:
        """Free-text completion (raises ``LLMCallFailed`` after the retries)."""
        self.accounting.add(role, model=cfg.model, requests=1)
        return run_sync(lambda: self.acomplete(role=role, cfg=cfg, messages=messages))


def _progress(total: int, role: str, enabled: bool | None):
    if enabled is None:
        enabled = total >= 50 and sys.stderr.isatty()
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=role, unit="call", leave=False)


_default: LLMClient | None = None
_default_lock = threading.Lock()


def default_client() -> LLMClient:
    """The process-wide client (one cache connection, one accounting table)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = LLMClient()
        return _default

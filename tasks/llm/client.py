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
- Reasoning never reaches the parser: a ``reasoning_content`` field and ``<think>`` blocks anywhere in the reply
  (also a closing tag without its opening one, or an opening one the token limit cut) are split off, kept in the
  call record (``CachedCall.reasoning``) and counted (``reasoning_tokens`` where the provider reports them). A
  structured reply cut by the token limit (finish reason ``length``) is its own failure kind, ``truncated``: retried
  once with twice the budget, then reported; cut free text is kept when it has an answer (counted as truncated).
- A configured sampling parameter that litellm drops for the model (``temperature`` on o-series / gpt-5) is warned
  about once per role and model and counted per call (``params_dropped``), never lost silently.
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
from tasks.llm.loading import ProcessDefault
from tasks.llm.records import RoleConfig, RoleFailure
from tasks.llm.redact import install_log_redaction, redact, redact_values, register_secret
from tasks.llm.strict_schema import drop_sent_nulls, response_format

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


GRAMMAR_MAX_STRING = 240
"""``maxLength`` given to free strings in a schema sent for grammar-constrained decoding (a small model can loop in
a string until ``max_tokens``)."""
GRAMMAR_MAX_ITEMS = 8
"""``maxItems`` given to unbounded lists in such a schema."""


def grammar_schema(node: Any) -> Any:
    """A JSON schema as a grammar should follow it: every listed property required (optional fields let a grammar end
    the object early), no ``default``, free strings and lists bounded. What it accepts is a subset of what the
    original accepts, so a reply is still validated by the role's own model."""
    if isinstance(node, list):
        return [grammar_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: ({name: grammar_schema(sub) for name, sub in value.items()}
                 if key in ("properties", "$defs") and isinstance(value, dict) else grammar_schema(value))
           for key, value in node.items() if key != "default"}
    if isinstance(out.get("properties"), dict):
        out["required"] = list(out["properties"])
    if out.get("type") == "string" and not {"enum", "const", "pattern", "format", "maxLength"} & set(out):
        out["maxLength"] = GRAMMAR_MAX_STRING
    if out.get("type") == "array" and "maxItems" not in out:
        out["maxItems"] = GRAMMAR_MAX_ITEMS
    return out


def json_object_schema_format(schema: type[BaseModel]) -> dict[str, Any]:
    """llama-cpp-python's server dialect: JSON mode with the schema beside it (``{"type": "json_object", "schema":
    ...}``), which it turns into a grammar; it refuses OpenAI's ``json_schema``."""
    return {"type": "json_object", "schema": grammar_schema(schema.model_json_schema())}


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
    """The first candidate that validates; the error of the most complete candidate otherwise. A ``null`` that the
    strict schema allowed for an optional field (``strict_schema.sent_schema``) stands for the field's default."""
    candidates = json_candidates(text)
    for candidate in candidates:
        try:
            return schema.model_validate_json(_without_sent_nulls(candidate, schema))
        except ValidationError as err:
            lenient = _with_raw_control_characters(candidate, schema)
            if lenient is not None:
                return lenient
            if candidate is candidates[-1]:
                raise err from None
    raise AssertionError("unreachable")


def _with_raw_control_characters(candidate: str, schema: type[M]) -> M | None:
    """The candidate read with raw newlines and tabs allowed inside strings (strict JSON refuses them; llama.cpp's
    grammar lets a model write them), or None when that does not validate either."""
    try:
        return schema.model_validate(drop_sent_nulls(json.loads(candidate, strict=False), schema_of(schema)))
    except (ValueError, ValidationError):
        return None


def _without_sent_nulls(candidate: str, schema: type[BaseModel]) -> str:
    if "null" not in candidate:
        return candidate
    try:
        data = json.loads(candidate)
    except ValueError:
        return candidate  # the record's own validation reports the broken JSON
    return json.dumps(drop_sent_nulls(data, schema_of(schema)), ensure_ascii=False)


THINK_BLOCK = re.compile(r"<(think|thinking|reasoning)>(.*?)</\1>", re.S | re.I)
THINK_CLOSE = re.compile(r"</(think|thinking|reasoning)>", re.I)
THINK_OPEN = re.compile(r"<(think|thinking|reasoning)>", re.I)


def split_reasoning(text: str) -> tuple[str, str]:
    """(answer, reasoning) of a reply: closed ``<think>`` blocks anywhere, the text before a closing tag whose
    opening tag the chat template already sent, and the text after an opening tag that was never closed (the token
    limit cut the reasoning) are reasoning; the rest is the answer."""
    parts: list[str] = []

    def take(match: re.Match) -> str:
        parts.append(match.group(2))
        return ""

    answer = THINK_BLOCK.sub(take, text)
    closes = list(THINK_CLOSE.finditer(answer))
    if closes:
        parts.insert(0, answer[: closes[-1].start()])
        answer = answer[closes[-1].end():]
    opened = THINK_OPEN.search(answer)
    if opened:
        parts.append(answer[opened.end():])
        answer = answer[: opened.start()]
    return answer.strip(), "\n".join(p.strip() for p in parts if p.strip())


JSON_MODE_ONLY = ("deepseek",)
"""Providers whose API offers JSON mode but no ``json_schema`` (DeepSeek answers it with a 400, although litellm's
model map says it supports schemas): ``structured_output: auto`` uses ``json_object`` for them."""
JSON_MODE_HOSTS = ("api.deepseek.com",)
"""The same, recognised by the role's ``api_base`` (an ``openai/…`` model pointed at DeepSeek's endpoint)."""

JSON_MODE_NOTE = "Reply with only one JSON object that matches this JSON schema:\n{schema}"


def structured_mode(cfg: RoleConfig, schema: type[BaseModel] | None) -> str:
    """How ``schema`` reaches the model for this role: ``json_schema``, ``json_object``, ``prompt`` or ``none``."""
    from tasks.llm.providers import EMBEDDED_PROVIDERS

    provider = cfg.model.split("/", 1)[0]
    if schema is None or provider in EMBEDDED_PROVIDERS:
        return "none"
    if cfg.structured_output != "auto":
        return cfg.structured_output
    if provider in JSON_MODE_ONLY or any(host in (cfg.api_base or "") for host in JSON_MODE_HOSTS):
        return "json_object"
    try:
        supported = _litellm().supports_response_schema(model=cfg.model)
    except Exception:  # noqa: BLE001 - unmapped model: rely on the prompt and our validation
        supported = False
    return "json_schema" if supported else "prompt"


def with_schema_in_prompt(messages: list[dict], schema: type[BaseModel]) -> list[dict]:
    """JSON mode constrains the reply to some JSON object only: the schema must be in the prompt. The roles' prompts
    carry it already; any other call gets it appended to its system message (or as a first one)."""
    text = json.dumps(schema.model_json_schema(), ensure_ascii=False)
    if any(text in str(m.get("content", "")) for m in messages):
        return messages
    note = JSON_MODE_NOTE.format(schema=text)
    if messages and messages[0]["role"] == "system":
        return [{**messages[0], "content": f"{messages[0]['content']}\n\n{note}"}, *messages[1:]]
    return [{"role": "system", "content": note}, *messages]


@lru_cache(maxsize=512)
def dropped_params(model: str, temperature: float, max_tokens: int) -> tuple[str, ...]:
    """The configured sampling parameters litellm would drop for ``model`` (``drop_params``), e.g. a temperature
    other than 1 for o-series and gpt-5 models."""
    litellm = _litellm()
    from litellm.utils import get_optional_params

    try:
        name, provider, _, _ = litellm.get_llm_provider(model=model)
        sent = get_optional_params(model=name, custom_llm_provider=provider, temperature=temperature,
                                   max_tokens=max_tokens, drop_params=True)
    except Exception:  # noqa: BLE001 - an unknown model or provider: litellm passes the parameters on
        return ()
    return () if "temperature" in sent else ("temperature",)


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
        keep_reasoning: bool = False,
        retry_truncated: bool = True,
    ):
        self._cache = cache
        self.retry_truncated = retry_truncated
        """A structured reply cut by the token limit is retried once with twice the budget; False fails it as
        ``truncated`` at once (the served-roles test: the retry adds seconds and changes no outcome it checks)."""
        self.reasoning_log: list[dict] | None = [] if keep_reasoning else None
        """With ``keep_reasoning``: ``{role, model, reasoning}`` of each call whose reply carried reasoning (cache hits
        included), in call order (an episode's client keeps it for the episode's logs)."""
        self.use_cache = use_cache
        self.accounting = accounting or Accounting()
        self.backoff_s = backoff_s
        self.backoff_max_s = backoff_max_s
        self._rng = random.Random(seed)
        self._rpm_lock = threading.Lock()
        self._next_start: dict[str, float] = {}
        self._warned: set[tuple[str, str]] = set()

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
        mode = structured_mode(cfg, schema)
        if mode == "json_object":
            messages = with_schema_in_prompt(messages, schema)
        params = {"temperature": cfg.temperature, "max_tokens": cfg.max_tokens}
        key = call_key(cfg.model, messages, {**params, "sample": sample}, schema_of(schema), api_base=cfg.api_base,
                       extra=cfg.extra)
        cache = self.cache
        hit = cache.get(key) if cache is not None else None
        if hit is not None:
            self.accounting.add(role, model=cfg.model, cache_hits=1)
            self._keep_reasoning(role, cfg.model, hit.reasoning)
            return hit.content
        endpoint = endpoint_kwargs(cfg)
        dropped = self._dropped(role, cfg)
        attempt = 0
        budget = cfg.max_tokens
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
                    **{**params, "max_tokens": budget},
                    **self._format_kwargs(mode, schema),
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
            choice = response.choices[0]
            content, reasoning = split_reasoning(choice.message.content or "")
            content = redact_values(content)  # a reply echoing a key: never stored
            given = getattr(choice.message, "reasoning_content", None) or ""
            reasoning = redact_values("\n".join(r for r in (given.strip(), reasoning) if r))
            usage = getattr(response, "usage", None)
            details = getattr(usage, "completion_tokens_details", None)
            record = CachedCall(
                content=content,
                reasoning=reasoning,
                prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
                reasoning_tokens=int(getattr(details, "reasoning_tokens", 0) or 0),
                cost_usd=self._cost(litellm, response),
            )
            self.accounting.add(
                role,
                model=cfg.model,
                provider_calls=1,
                latency_s=elapsed,
                prompt_tokens=record.prompt_tokens,
                completion_tokens=record.completion_tokens,
                reasoning_tokens=record.reasoning_tokens,
                cost_usd=record.cost_usd,
                params_dropped=int(bool(dropped)),
            )
            cut = getattr(choice, "finish_reason", None) == "length"
            if cut:
                self.accounting.add(role, model=cfg.model, truncated=1)
            if cut and (schema is not None or not content):  # cut free text with an answer is kept (counted)
                if budget == cfg.max_tokens and self.retry_truncated:
                    budget = 2 * cfg.max_tokens  # once, with twice the budget
                    continue
                raise LLMCallFailed("truncated", f"the reply was cut at max_tokens={budget} (finish_reason length; "
                                    f"{len(reasoning)} characters of reasoning, {len(content)} of answer)",
                                    attempt + 1)
            if cache is not None:
                cache.put(key, cfg.model, record)
            self._keep_reasoning(role, cfg.model, reasoning)
            return content

    def _keep_reasoning(self, role: str, model: str, reasoning: str) -> None:
        if reasoning and self.reasoning_log is not None:
            with self._rpm_lock:
                self.reasoning_log.append({"role": role, "model": model, "reasoning": reasoning})

    def _dropped(self, role: str, cfg: RoleConfig) -> tuple[str, ...]:
        """The role's configured parameters litellm will drop for its model; a warning the first time per role and
        model (the calls are counted as ``params_dropped``)."""
        from tasks.llm.providers import EMBEDDED_PROVIDERS

        if cfg.model.split("/", 1)[0] in EMBEDDED_PROVIDERS:
            return ()
        dropped = dropped_params(cfg.model, cfg.temperature, cfg.max_tokens)
        with self._rpm_lock:
            first = dropped and (role, cfg.model) not in self._warned
            self._warned.add((role, cfg.model))
        if first:
            import logging

            logging.getLogger("clarifyflow.llm").warning(
                "role %s: %s does not accept %s=%s; litellm drops it and the provider's default applies (counted "
                "as params_dropped)", role, cfg.model, ", ".join(dropped), cfg.temperature)
        return dropped

    @staticmethod
    def _cost(litellm, response) -> float:
        """litellm prices the response while building it; unknown prices (local and custom models) count as 0."""
        hidden = getattr(response, "_hidden_params", None) or {}
        try:
            return float(hidden.get("response_cost") or 0.0)
        except (TypeError, ValueError):
            return 0.0

    @staticmethod
    def _format_kwargs(mode: str, schema: type[BaseModel] | None) -> dict[str, Any]:
        if mode == "json_schema":
            return {"response_format": response_format(schema)}
        if mode == "json_object":
            return {"response_format": {"type": "json_object"}}
        if mode == "json_object_schema":
            return {"response_format": json_object_schema_format(schema)}
        return {}

    # ---- structured output with regeneration ---------------------------------------------------------------------

    async def astructured(self, *, role: str, cfg: RoleConfig, messages: list[dict], schema: type[M],
                          sample: str | None = None) -> M:
        conversation = list(messages)
        last_error = ""
        regenerations = max(cfg.max_regenerations, 1 if structured_mode(cfg, schema) == "json_object" else 0)
        for generation in range(regenerations + 1):
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
        raise LLMCallFailed("invalid_output", last_error, regenerations + 1)

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
                    self.accounting.fail(role, model=cfg.model, kind=failed.kind)
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


_default: ProcessDefault[LLMClient] = ProcessDefault(lambda: LLMClient())


def default_client() -> LLMClient:
    """The process-wide client (one cache connection, one accounting table)."""
    return _default.get()

"""The records the LLM client takes and returns: one role's call settings and the record of a call that failed.

They live here, below the roles, so that ``tasks/llm`` never imports ``tasks/roles`` (the roles build on the client).
"""

from __future__ import annotations

import os
import re
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
RESERVED_EXTRA = {
    "model": "model", "messages": "the role's prompt", "api_key": "api_key_env", "api_base": "api_base",
    "base_url": "api_base", "timeout": "timeout_s", "num_retries": "max_retries", "max_retries": "max_retries",
    "temperature": "temperature", "max_tokens": "max_tokens", "response_format": "structured_output",
    "stream": "nothing (roles read whole replies)",
}
"""litellm arguments the client sets itself, each with the role field that controls it."""
AUTH_HEADERS = re.compile(r"(?i)^(authorization|proxy-authorization|x-api-key|api-key)$")


class RoleConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    backend: Literal["local", "llm"] = "local"
    """``local``: the deterministic embedded implementation. ``llm``: ``model`` through litellm."""
    model: str = "local/smollm2-135m-instruct"
    """Any litellm model string (``openai/gpt-4o-mini``, ``hosted_vllm/…``) or an embedded provider
    (``local/smollm2-135m-instruct``, ``mock/…``). Keys come only from the environment."""
    api_base: str | None = None
    """The server to call (``http://127.0.0.1:8000/v1`` for a vLLM or other OpenAI-compatible server); None: the
    provider's default. Part of the call-cache key, so two servers with the same model name never share answers."""
    api_key_env: str | None = None
    """The *name* of the environment variable that holds this role's key (never the key). None: the provider's own
    variable (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ``HOSTED_VLLM_API_KEY``...)."""
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(default=512, ge=1)
    timeout_s: float = Field(default=120.0, gt=0)
    max_retries: int = Field(default=4, ge=0)
    """Retries of one call on timeouts, rate limits, connection errors and 5xx (exponential backoff + jitter)."""
    max_regenerations: int = Field(default=3, ge=0)
    """Extra generations with a repair message when the output does not parse into the role's schema."""
    structured_output: Literal["auto", "json_schema", "json_object", "json_object_schema", "prompt"] = "auto"
    """How the output schema reaches the model: ``json_schema`` always sends it as a strict ``response_format``
    (``tasks/llm/strict_schema.py``; vLLM and most OpenAI-compatible servers constrain decoding to it),
    ``json_object`` asks for JSON mode and writes the schema into the prompt (DeepSeek's only structured mode),
    ``json_object_schema`` sends ``{"type": "json_object", "schema": ...}`` (llama-cpp-python's server, which refuses
    ``json_schema`` and constrains decoding to this schema by grammar; ``make llm-server``),
    ``prompt`` only in the prompt, ``auto``: ``json_object`` for providers known to lack ``json_schema``
    (``JSON_MODE_ONLY``), else ``json_schema`` where litellm's model map says the model supports it, else
    ``prompt``. Replies are validated either way, with at least one repair retry under ``json_object``."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Further litellm keyword arguments (``top_p``, ``seed``, ``extra_body``, ``extra_headers``); part of the
    call-cache key. Never a key: the arguments the client sets itself and auth headers are refused."""
    concurrency: int = Field(default=8, ge=1)
    rpm: int | None = Field(default=None, ge=1)
    """Optional requests-per-minute ceiling for this role."""

    @model_validator(mode="before")
    @classmethod
    def _no_key_field(cls, data: Any) -> Any:
        if isinstance(data, dict) and "api_key" in data:
            raise ValueError("api_key: keys never go in params; set api_key_env to the name of the environment "
                             "variable that holds the key")
        return data

    @field_validator("api_base")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError("api_base must be an http(s) URL such as http://127.0.0.1:8000/v1")
        from tasks.llm.redact import url_credentials

        found = url_credentials(value)
        if found:
            raise ValueError(f"api_base must not carry credentials ({found}); name the key's variable in "
                             "api_key_env")
        return value.rstrip("/")

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        if not ENV_NAME.match(value):
            raise ValueError("api_key_env is the name of an environment variable (e.g. OPENAI_API_KEY), not a key")
        if info.data.get("backend") == "llm" and not os.environ.get(value):  # the value is never echoed: a key
            # pasted here that happens to look like a variable name would land in the error line
            raise ValueError("the variable api_key_env names is not set in the environment")
        return value

    @field_validator("extra")
    @classmethod
    def _extra(cls, value: dict[str, Any]) -> dict[str, Any]:
        for name in value:
            if name in RESERVED_EXTRA:
                raise ValueError(f"extra.{name} is set by the client; use the role's {RESERVED_EXTRA[name]}")
        headers = value.get("extra_headers") or {}
        if not isinstance(headers, dict) or any(AUTH_HEADERS.match(str(h)) for h in headers):
            raise ValueError("extra.extra_headers must be a mapping without auth headers; name the key's "
                             "environment variable in api_key_env")
        return value


class RoleFailure(BaseModel):
    """The typed record of a call that could not produce a valid output after all retries and regenerations."""

    model_config = ConfigDict(frozen=True)

    role: str
    kind: str
    """``invalid_output`` (never matched the schema), ``transient`` (retries exhausted), ``truncated`` (the reply was
    cut by the token limit, also with twice the budget) or ``provider`` (any other provider error, e.g.
    authentication)."""
    message: str
    attempts: int = 1

    @field_validator("message")
    @classmethod
    def _no_secrets(cls, message: str) -> str:
        from tasks.llm.redact import redact

        return redact(message)

"""The records the LLM client takes and returns: one role's call settings and the record of a call that failed.

They live here, below the roles, so that ``tasks/llm`` never imports ``tasks/roles`` (the roles build on the client).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class RoleConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    backend: Literal["local", "llm"] = "local"
    """``local``: the deterministic embedded implementation. ``llm``: ``model`` through litellm."""
    model: str = "local/smollm2-135m-instruct"
    """Any litellm model string (``openai/gpt-4o-mini``, ``hosted_vllm/…``) or an embedded provider
    (``local/smollm2-135m-instruct``, ``mock/…``). Keys come only from the environment."""
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(default=512, ge=1)
    timeout_s: float = Field(default=120.0, gt=0)
    max_retries: int = Field(default=4, ge=0)
    """Retries of one call on timeouts, rate limits, connection errors and 5xx (exponential backoff + jitter)."""
    max_regenerations: int = Field(default=3, ge=0)
    """Extra generations with a repair message when the output does not parse into the role's schema."""
    concurrency: int = Field(default=8, ge=1)
    rpm: int | None = Field(default=None, ge=1)
    """Optional requests-per-minute ceiling for this role."""


class RoleFailure(BaseModel):
    """The typed record of a call that could not produce a valid output after all retries and regenerations."""

    model_config = ConfigDict(frozen=True)

    role: str
    kind: str
    """``invalid_output`` (never matched the schema), ``transient`` (retries exhausted) or ``provider`` (any other
    provider error, e.g. authentication)."""
    message: str
    attempts: int = 1

    @field_validator("message")
    @classmethod
    def _no_secrets(cls, message: str) -> str:
        from tasks.llm.redact import redact

        return redact(message)

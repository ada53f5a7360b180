"""Secrets out of every error text, log line and artifact: one ``redact`` for all of them.

A provider error may echo the request (``Authorization: Bearer sk-…``); the text that reaches a ``RoleFailure``, an
``LLMCallFailed`` or a log record goes through :func:`redact` first.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Mapping

SECRET_SUFFIXES = ("_API_KEY", "_TOKEN", "_SECRET")
MIN_SECRET_LENGTH = 8
"""Shorter env values (flags such as ``HF_HUB_DISABLE_TOKEN=1``) are not keys and would mangle unrelated text."""
REDACTED = "[REDACTED]"

_HEADER = re.compile(
    r"(?i)((?:authorization|proxy-authorization|x-api-key|api-key|api_key)['\"]?\s*[:=]\s*['\"]?)"
    r"(?:(?:bearer|basic|token)\s+)?[^\s'\",;}\]]+")
_BEARER = re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]+")
_SK_KEY = re.compile(r"\bsk-[A-Za-z0-9_-]{8,}")
_registered: set[str] = set()
"""Keys read from the variables roles name in ``api_key_env`` (any name, not only ``*_API_KEY``)."""


def register_secret(value: str) -> None:
    """Redact ``value`` from now on (the client calls this with each key it reads)."""
    if len(value) >= MIN_SECRET_LENGTH:
        _registered.add(value)


def secret_values(env: Mapping[str, str] | None = None) -> list[str]:
    """Values of the environment variables named ``*_API_KEY``, ``*_TOKEN`` or ``*_SECRET``, longest first."""
    env = os.environ if env is None else env
    values = {value for name, value in env.items()
              if name.upper().endswith(SECRET_SUFFIXES) and len(value) >= MIN_SECRET_LENGTH}
    return sorted(values, key=len, reverse=True)


def redact(text: str, extra: Iterable[str] = ()) -> str:
    """``text`` with secret env values, ``extra`` values, bearer tokens, auth headers and ``sk-`` keys replaced."""
    if not text:
        return text
    named = {v for v in (*extra, *_registered) if len(v) >= MIN_SECRET_LENGTH}
    for value in (*sorted(named, key=len, reverse=True), *secret_values()):
        text = text.replace(value, REDACTED)
    text = _HEADER.sub(rf"\1{REDACTED}", text)
    text = _BEARER.sub(rf"\1{REDACTED}", text)
    return _SK_KEY.sub(REDACTED, text)


class _RedactingRecordFactory:
    """Wraps the log record factory: a record's message and traceback are redacted when it is made."""

    def __init__(self, inner):
        self.inner = inner

    def __call__(self, *args, **kwargs) -> logging.LogRecord:
        record = self.inner(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a malformed record is the logging module's to report
            return record
        record.msg, record.args = redact(message), None
        if record.exc_info:
            record.exc_text = redact(record.exc_text or logging.Formatter().formatException(record.exc_info))
            record.exc_info = None  # handlers that render exc_info themselves would show the unredacted text
        return record


def install_log_redaction() -> None:
    """Redact every log record made in this process from now on (idempotent)."""
    factory = logging.getLogRecordFactory()
    if not isinstance(factory, _RedactingRecordFactory):
        logging.setLogRecordFactory(_RedactingRecordFactory(factory))

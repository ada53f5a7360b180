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
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@'\"]+@")
_URL_QUERY_SECRET = re.compile(r"(?i)([?&;](?:[a-z0-9_.-]*(?:key|token|secret|password|passwd|pwd|auth|signature|sig|"
                               r"credential)[a-z0-9_.-]*)=)[^&#\s'\"]*")
CREDENTIAL_PARAM = re.compile(r"(?i)(key|token|secret|password|passwd|pwd|auth|signature|sig|credential)")
"""A URL query parameter whose name contains one of these carries a credential (``?key=``, ``?api_key=``,
``&access_token=``, ``?sig=``)."""
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


def redact_values(text: str) -> str:
    """``text`` with the known secret values (the keys the client read, secret env values) replaced and nothing else
    touched: for model replies, where the pattern rules of :func:`redact` would alter ordinary code."""
    if not text:
        return text
    for value in (*sorted(_registered, key=len, reverse=True), *secret_values()):
        text = text.replace(value, REDACTED)
    return text


def redact(text: str, extra: Iterable[str] = ()) -> str:
    """``text`` with secret env values, ``extra`` values, bearer tokens, auth headers and ``sk-`` keys replaced."""
    if not text:
        return text
    named = {v for v in (*extra, *_registered) if len(v) >= MIN_SECRET_LENGTH}
    for value in (*sorted(named, key=len, reverse=True), *secret_values()):
        text = text.replace(value, REDACTED)
    text = _URL_USERINFO.sub(rf"\1{REDACTED}@", text)
    text = _URL_QUERY_SECRET.sub(rf"\1{REDACTED}", text)
    text = _HEADER.sub(rf"\1{REDACTED}", text)
    text = _BEARER.sub(rf"\1{REDACTED}", text)
    return _SK_KEY.sub(REDACTED, text)


def url_credentials(url: str) -> str | None:
    """What in ``url`` is a credential (user info, a query parameter named like a key, a fragment), or None.

    The one check of every URL the params name (a role's ``api_base``, ``cluster.address``): such a URL is refused,
    since it would be written verbatim to run configs, logs and cache keys."""
    from urllib.parse import parse_qsl, urlsplit

    try:
        parts = urlsplit(url)
        user = parts.username or parts.password
    except ValueError:
        return "it is not a valid URL"
    if user or "@" in parts.netloc:
        return "user info (user:password@)"
    names = [name for name, _ in parse_qsl(parts.query, keep_blank_values=True)]
    secret = next((n for n in names if CREDENTIAL_PARAM.search(n)), None)
    if secret is not None:
        return f"a credential query parameter ({secret[:40]}=...)"
    if parts.fragment and "=" in parts.fragment:
        return "parameters in the fragment (#...=...)"
    return None


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

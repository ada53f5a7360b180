"""Typed errors that carry exactly what a user needs: which file, which record, which field."""

from __future__ import annotations


class ClarifyflowError(Exception):
    """Base class; ``str(err)`` is the one line printed to the user."""


class InputError(ClarifyflowError):
    """Bad input: a malformed file, a missing or invalid field, a duplicate id."""

    def __init__(self, path: object, message: str, *, record: object | None = None, field: str | None = None):
        self.path = str(path)
        self.record = record
        self.field = field
        self.message = message
        where = self.path
        if record is not None:
            where += f": record {record}"
        if field:
            where += f": field '{field}'"
        super().__init__(f"{where}: {message}")


class DomainError(ClarifyflowError):
    """A domain that cannot be used: no module defines it, its module fails to import, or it lacks what is asked."""


UNSAFE_ID = ("unsafe id {value}: letters, digits and '_.+-' only, starting with a letter or digit "
             "(ids become file names)")


def validation_message(error: dict) -> str:
    """The message of one pydantic error dict, plainer for an id that failed ``tasks.records.SAFE_ID``."""
    pattern = str((error.get("ctx") or {}).get("pattern", ""))
    if error.get("type") == "string_pattern_mismatch" and pattern.startswith("^[A-Za-z0-9][A-Za-z0-9_.+"):
        shown = repr(error.get("input"))
        return UNSAFE_ID.format(value=shown if len(shown) <= 80 else shown[:77] + "...")
    return error["msg"]


class GateError(ClarifyflowError):
    """A validation gate failed; the artifact was not published."""

    def __init__(self, artifact: str, summary: str):
        self.artifact = artifact
        self.summary = summary
        super().__init__(f"validation gate failed for {artifact}: {summary}")


class MaskingError(ClarifyflowError):
    """Masking could not produce a leak-free variant (a bug, never silently ignored)."""

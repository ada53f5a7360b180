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


class GateError(ClarifyflowError):
    """A validation gate failed; the artifact was not published."""

    def __init__(self, artifact: str, summary: str):
        self.artifact = artifact
        self.summary = summary
        super().__init__(f"validation gate failed for {artifact}: {summary}")


class MaskingError(ClarifyflowError):
    """Masking could not produce a leak-free variant (a bug, never silently ignored)."""

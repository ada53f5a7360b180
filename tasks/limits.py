"""Sane, params-free limits on every input file, so one oversized record cannot blow up an artifact.

A real SWE-bench issue or optimisation problem is a few kilobytes; the limits leave two orders of magnitude of room
and refuse anything beyond with one line naming the file, the record and the field (``tasks.errors.InputError``).
"""

from __future__ import annotations

MAX_FILE_BYTES = 256 * 1024 * 1024
"""Any input file (JSONL, YAML, TOML, harness report) read whole."""
MAX_RECORD_BYTES = 8 * 1024 * 1024
"""One JSONL line (one record); a case record holds its text about three times (units, brief, full text)."""
MAX_RECORDS = 200_000
"""Records in one input file or dataset."""
MAX_TEXT_CHARS = 500_000
"""The free text of one source record (an issue, a problem, a request) and of one unit."""
MAX_UNITS = 1_000
"""Units of one record."""


def size_text(n_bytes: int) -> str:
    """``n_bytes`` for an error line: ``123 bytes`` below a MiB, ``4.5 MiB`` above."""
    if n_bytes < 1024 * 1024:
        return f"{n_bytes} bytes"
    return f"{n_bytes / (1024 * 1024):.1f} MiB"

"""The project's annotated SWE issues (``data/samples/swe/issues.jsonl``): read and checked.

Below both the SWE domain (its ``samples`` source) and the annotator role (its prototype sentences), so neither
imports the other and the role does not reach up into the domains.
"""

from __future__ import annotations

from pathlib import Path

from tasks import store
from tasks.errors import InputError
from tasks.records import IssueRecord
from tasks.text import locate, normalise_newlines


def check_unique(issues: list[IssueRecord], path: Path) -> None:
    """An InputError naming the record of the first repeated instance id."""
    seen: dict[str, int] = {}
    for i, issue in enumerate(issues, start=1):
        if issue.instance_id in seen:
            raise InputError(
                path, f"duplicate id {issue.instance_id!r} (first at record {seen[issue.instance_id]})",
                record=i, field="instance_id",
            )
        seen[issue.instance_id] = i


def load_samples(path: Path) -> list[IssueRecord]:
    """The project's JSONL samples; every span must occur verbatim (up to whitespace) in its issue."""
    issues = store.read_jsonl(path, IssueRecord)
    check_unique(issues, path)
    for i, issue in enumerate(issues, start=1):
        text = normalise_newlines(issue.text)
        for j, span in enumerate(issue.spans or []):
            if not locate(text, span.text):
                raise InputError(path, "span text does not occur in the issue text",
                                 record=f"line {i} ({issue.instance_id})", field=f"spans.{j}.text")
    return issues

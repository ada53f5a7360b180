"""The six CLARITI information categories: the one place that names them."""

from __future__ import annotations

from enum import Enum


class Category(str, Enum):  # noqa: UP042 - StrEnum would change str() and format() of every record
    ERROR = "Error Information"
    REPRODUCTION = "Reproduction Steps"
    EXPECTED = "Expected Behavior"
    IMPLEMENTATION = "Implementation Details"
    EXTERNAL_REFS = "External References"
    VERSION_ENV = "Version/Environment Information"

    @property
    def key(self) -> str:
        """Short key used in file names, slot names and the reward classifier."""
        return _KEYS[self]

    @classmethod
    def parse(cls, value: str) -> Category:
        """Accept the dataset label or the short key; raise ValueError naming the valid choices."""
        for cat in cls:
            if value == cat.value or value == cat.key:
                return cat
        choices = ", ".join(c.value for c in cls)
        raise ValueError(f"unknown category {value!r} (expected one of: {choices})")


_KEYS = {
    Category.ERROR: "error_info",
    Category.REPRODUCTION: "reproduction",
    Category.EXPECTED: "expected_behavior",
    Category.IMPLEMENTATION: "implementation",
    Category.EXTERNAL_REFS: "external_refs",
    Category.VERSION_ENV: "version_env",
}

DEFINITIONS = {
    Category.ERROR: "What goes wrong, why it is wrong and how we know (stack traces, error strings, wrong output).",
    Category.REPRODUCTION: "Under what conditions the failure occurs (code snippets, CLI commands, minimal inputs).",
    Category.EXPECTED: "What should happen instead (intended output, correct return values, desired state).",
    Category.IMPLEMENTATION: "How the solution should be implemented (proposed fixes, code locations, constraints).",
    Category.EXTERNAL_REFS: "External resources that influence the issue (docs, links, related issues/PRs, commits).",
    Category.VERSION_ENV: "Configuration needed to reproduce (dependency versions, OS, Python, config flags).",
}

ORDER: tuple[Category, ...] = tuple(Category)

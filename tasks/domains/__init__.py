"""Domain registry: a domain is a module that turns its sources into cases and says how they are evaluated.

The interface is :class:`tasks.domains.api.Domain` (documented there, hook by hook). Adding a domain = one module
``tasks/domains/<name>.py`` (or package) that exposes ``DOMAIN`` + ``construct.<name>`` and ``evaluate.<name>``
entries in params.yaml + the name in ``domains:``; ``dvc.yaml``'s matrices pick it up. ``python -m flows.new_domain
NAME`` scaffolds all of it. Modules named in :data:`KNOWN` are the shipped domains; any other name resolves to
``tasks.domains.<name>`` when that module exists.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tasks.caching import RunStats
from tasks.records import Case

if TYPE_CHECKING:
    from tasks.clarifiers.gaps import GapInventory
    from tasks.domains.api import Domain

KNOWN = {"swe": "tasks.domains.swe", "optimization": "tasks.domains.optimization",
         "analytics": "tasks.domains.analytics"}
NAME = re.compile(r"^[a-z][a-z0-9_]{1,39}$")
"""A domain name: a Python identifier in lower case (it names a module, a params key, folders and DVC stages)."""
HELPERS = frozenset({"api", "units", "or_toml", "template"})
"""Modules in this package that are not domains."""
FOLDER = Path(__file__).parent


@dataclass
class ConstructResult:
    cases: list[Case]
    metrics: dict[str, Any]
    stats: RunStats = field(default_factory=RunStats)


def module_name(name: str) -> str | None:
    """The module that defines domain ``name``, or None when there is none."""
    if name in KNOWN:
        return KNOWN[name]
    if NAME.match(name) and name not in HELPERS and ((FOLDER / f"{name}.py").is_file()
                                                     or (FOLDER / name / "__init__.py").is_file()):
        return f"tasks.domains.{name}"
    return None


def domain_names() -> list[str]:
    """Every domain this checkout defines (shipped ones and modules added next to them)."""
    found = {p.stem for p in FOLDER.glob("*.py") if not p.stem.startswith("_")}
    found |= {p.parent.name for p in FOLDER.glob("*/__init__.py")}
    return sorted(n for n in set(KNOWN) | found if module_name(n) and n not in HELPERS)


def get_domain(name: str) -> Domain:
    module = module_name(name)
    if module is None:
        raise KeyError(f"unknown domain {name!r} (known: {', '.join(domain_names())})")
    return importlib.import_module(module).DOMAIN


def gap_inventory_for(name: str | None) -> GapInventory | None:
    """The gap inventory of domain ``name``; None (the default inventory) for unknown or question-set domains."""
    if not name:
        return None
    try:
        domain = get_domain(name)
    except (KeyError, ImportError):
        return None
    return getattr(domain, "gap_inventory", None)


def judge_hints_for(name: str | None):
    """The judge hints of domain ``name`` (None for unknown domains)."""
    if not name:
        return None
    try:
        return getattr(get_domain(name), "judge_hints", None)
    except (KeyError, ImportError):
        return None


def user_aspects_for(name: str | None) -> dict[str, list[str]]:
    """Per unit kind, how a question about it is put (``Domain.user_aspects``; empty for unknown domains)."""
    if not name:
        return {}
    try:
        return dict(getattr(get_domain(name), "user_aspects", None) or {})
    except (KeyError, ImportError):
        return {}


def code_version() -> str:
    """Hash of every domain module's source (gap inventories, judge hints, user aspects shape the episodes)."""
    import hashlib

    digest = hashlib.sha256()
    for path in sorted(FOLDER.rglob("*.py")):
        digest.update(path.relative_to(FOLDER).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()

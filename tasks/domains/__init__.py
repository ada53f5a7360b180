"""Domain registry: a domain is a module that turns its sources into cases (DESIGN §3).

Adding a domain = one module here that exposes ``DOMAIN`` + one ``construct.<name>`` entry in params.yaml +
the name in ``domains:``; ``dvc.yaml``'s matrix picks it up.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from tasks.caching import RunStats
from tasks.records import Case

KNOWN = {"swe": "tasks.domains.swe", "optimization": "tasks.domains.optimization"}


@dataclass
class ConstructResult:
    cases: list[Case]
    metrics: dict[str, Any]
    stats: RunStats = field(default_factory=RunStats)


class Domain(Protocol):
    name: str

    def check_inputs(self, cfg: Any, root: Path) -> None: ...

    def construct(self, cfg: Any, root: Path, *, roles: Any = None, refresh_cache: bool = False) -> ConstructResult:
        """``roles`` is ``params.yaml: roles`` (a ``RolesParams``), for domains whose construction calls a role."""
        ...

    def parse_params(self, params_path: Path, data: Any) -> Any: ...

    def write(self, result: ConstructResult, folder: Path) -> None: ...

    def validation_table(self, result: ConstructResult) -> Any: ...


def get_domain(name: str) -> Domain:
    if name not in KNOWN:
        raise KeyError(f"unknown domain {name!r} (known: {', '.join(sorted(KNOWN))})")
    return importlib.import_module(KNOWN[name]).DOMAIN

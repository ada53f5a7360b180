"""Domain registry: a domain is a module that turns its sources into cases and says how they are evaluated.

The interface is :class:`tasks.domains.api.Domain` (documented there, hook by hook). Adding a domain = one package
``tasks/domains/<name>/`` (or module) that exposes ``DOMAIN`` + ``construct.<name>`` and ``evaluate.<name>``
entries in params.yaml + the name in ``domains:``; ``dvc.yaml``'s matrices pick it up. ``python -m flows.new_domain
NAME`` scaffolds all of it. A domain is found where it is defined: a name resolves to ``tasks.domains.<name>`` when
that package (or module) exists in this folder and is not one of the :data:`HELPERS`; :data:`DOMAINS` (a
:class:`tasks.registry.Registry`) holds each one looked up.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tasks.domain_context import DomainContext
from tasks.domains.api import ConstructResult, Domain
from tasks.errors import DomainError
from tasks.records import DOMAIN_NAME, Eligibility
from tasks.registry import Registry

__all__ = ["DOMAINS", "HELPERS", "ConstructResult", "Domain", "DomainContext", "Eligibility", "domain_context",
           "domain_names", "get_domain", "module_name"]

HELPERS = frozenset({"api", "units", "template", "question_template"})
"""Modules in this package that are not domains."""
FOLDER = Path(__file__).parent


def module_name(name: str) -> str | None:
    """The module that defines domain ``name``, or None when there is none."""
    if DOMAIN_NAME.match(name) and name not in HELPERS and ((FOLDER / f"{name}.py").is_file()
                                                     or (FOLDER / name / "__init__.py").is_file()):
        return f"tasks.domains.{name}"
    return None


def domain_names() -> list[str]:
    """Every domain this checkout defines: the packages (and modules) in this folder, sorted."""
    found = {p.stem for p in FOLDER.glob("*.py") if not p.stem.startswith("_")}
    found |= {p.parent.name for p in FOLDER.glob("*/__init__.py")}
    return sorted(n for n in found if module_name(n))


DOMAINS: Registry[Domain] = Registry("domain")
"""Domain name -> its ``DOMAIN``, registered as ``"tasks.domains.<name>:DOMAIN"`` (imported on its first lookup). The
folder is the loader: :func:`get_domain` registers a name when this folder defines it, and reads the folder on every
lookup, so a domain scaffolded while the process runs is found and no other domain is ever substituted."""


def get_domain(name: str) -> Domain:
    """The ``DOMAIN`` of domain ``name``; a DomainError naming it when no module defines it or its module fails to
    import (never a fallback to another domain)."""
    module = module_name(name)
    if module is None:
        raise DomainError(f"unknown domain {name!r} (known: {', '.join(domain_names())})")
    if name not in DOMAINS:
        DOMAINS.add(name, f"{module}:DOMAIN")
    try:  # a package domain loads its DOMAIN on first use, so that import runs here too
        return DOMAINS.get(name)
    except Exception as err:  # a broken domain module may raise anything while it runs
        if isinstance(err, AttributeError) and module in sys.modules and not hasattr(sys.modules[module], "DOMAIN"):
            raise DomainError(f"domain {name!r}: its module {module} defines no DOMAIN") from None
        raise DomainError(f"domain {name!r}: its module {module} fails to import ({type(err).__name__}: {err})"
                          ) from err


def domain_context(name: str) -> DomainContext:
    """Domain ``name`` as the one value an episode evaluation hands down (built once, where the evaluation starts):
    its judge hints, gap inventory and user aspects. A DomainError for an unknown or broken domain, and for a
    domain without a gap inventory (one evaluated by question sets, not in episodes)."""
    domain = get_domain(name)
    if domain.gap_inventory is None:
        raise DomainError(f"domain {name!r} has no gap inventory: it is evaluated by {domain.evaluation}, not in "
                          f"episodes")
    return DomainContext(name=name, hints=domain.judge_hints, gaps=domain.gap_inventory,
                         user_aspects={kind: tuple(asks) for kind, asks in domain.user_aspects.items()})

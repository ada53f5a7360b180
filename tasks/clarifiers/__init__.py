"""Clarification methods: each is a small module over the same episode loop (tasks/evaluation/episode_loop.py).

Each method registers where it is defined, ``@method("freeqa")`` on its factory (``reference=`` for a reference
row: the oracle, the ready-now floor); the registry imports this package's modules on its first lookup
(``get_method``, ``method_names``, ``reference_of``). An extension outside the package calls
``METHODS.add("episodes/<kind>", "module:factory", reference=...)`` (``METHODS``: a :class:`tasks.registry.Registry`,
the one registry of the methods of both kinds of evaluation; the question-list methods are
``tasks.clarifiers.question_methods``, registered as ``questions/<kind>``).

The method interface loads its module on first use (PEP 562); the gap inventory's records are
``tasks.domain_context``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tasks.lazy_exports import lazy_exports

_HOME = {
    "Method": "base", "MethodContext": "base", "get_method": "base", "method_names": "base", "reference_of": "base",
    "method": "base", "METHODS": "base",
}

__all__ = [
    "METHODS",
    "Method",
    "MethodContext",
    "get_method",
    "method",
    "method_names",
    "reference_of",
]

if TYPE_CHECKING:
    from tasks.clarifiers.base import (
        METHODS,
        Method,
        MethodContext,
        get_method,
        method,
        method_names,
        reference_of,
    )


__getattr__, __dir__ = lazy_exports(__name__, _HOME)

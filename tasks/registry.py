"""One registration mechanism for everything looked up by name: clarification methods, question methods, reward
stages, role specs, domains, training profiles and the flows' dispatch tables.

A :class:`Registry` maps a name to a target of type ``T`` plus optional per-entry metadata (keyword values, e.g. a
method's ``reference`` or a question method's ``options`` model). Three ways in:

- ``@REG.register("name", **meta)`` on a function or class, where it is defined;
- ``REG.add("name", target, **meta)`` for a value (a ``RoleSpec``, a profile dict);
- ``REG.add("name", "package.module:attr")``: a lazy target, imported on its first ``get`` (a string target is
  always lazy, so a registry of strings is not what this is for).

``get(name)`` returns the target (resolving a lazy one once) or raises ``KeyError`` naming the registry and listing
the known names; ``names()`` lists them in registration order; ``meta(name)`` gives the entry's metadata. A second
registration of a name raises ``ValueError`` unless ``replace=True`` is passed (an extension overriding a built-in;
it runs ``discover`` first, so the built-in cannot come back); ``remove(name)`` forgets one (tests).
``discover``, when given, runs once before the first lookup (e.g. importing a package's modules so their decorators
have run); ``add``/``register`` without ``replace`` never run it. Nothing here imports anything until a lazy target
is looked up.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar

T = TypeVar("T")
F = TypeVar("F")


class Registry(Generic[T]):
    def __init__(self, kind: str, *, discover: Callable[[], None] | None = None) -> None:
        self.kind = kind
        """What the entries are, in words (``"method"``, ``"reward stage"``): the start of every error message."""
        self._targets: dict[str, T | str] = {}
        self._meta: dict[str, dict[str, Any]] = {}
        self._discover = discover
        self._discovered = discover is None

    def register(self, name: str, *, replace: bool = False, **meta: Any) -> Callable[[F], F]:
        """Decorator: register the decorated function or class as ``name`` and return it unchanged."""

        def wrap(target: F) -> F:
            self.add(name, target, replace=replace, **meta)  # type: ignore[arg-type]
            return target

        return wrap

    def add(self, name: str, target: T | str, *, replace: bool = False, **meta: Any) -> T | str:
        """Register ``target`` (or ``"module:attr"``, imported on first use) as ``name``; returns ``target``."""
        if replace:
            self._ready()  # a replaced name must not come back when discovery runs later
        if isinstance(target, str) and target.count(":") != 1:
            raise ValueError(f"{self.kind} {name!r}: a lazy target is 'module:attr', got {target!r}")
        if name in self._targets and not replace:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self._targets[name] = target
        self._meta[name] = dict(meta)
        return target

    def remove(self, name: str) -> None:
        """Forget ``name`` (tests undo what they added); nothing when it is not registered."""
        self._targets.pop(name, None)
        self._meta.pop(name, None)

    def _ready(self) -> None:
        if not self._discovered:
            self._discovered = True  # set first: a discovered module may look names up while it imports
            assert self._discover is not None
            self._discover()

    def get(self, name: str) -> T:
        """The target registered as ``name`` (a lazy one imported now, once)."""
        self._ready()
        if name not in self._targets:
            raise KeyError(f"unknown {self.kind} {name!r} (known: {self._known()})")
        target = self._targets[name]
        if isinstance(target, str):
            module, attr = target.split(":")
            target = getattr(importlib.import_module(module), attr)
            self._targets[name] = target
        return target  # type: ignore[return-value]

    def meta(self, name: str) -> Mapping[str, Any]:
        """The metadata registered with ``name`` (empty when none); KeyError for an unknown name."""
        self._ready()
        if name not in self._meta:
            raise KeyError(f"unknown {self.kind} {name!r} (known: {self._known()})")
        return self._meta[name]

    def _known(self) -> str:
        return ", ".join(sorted(self._targets)) or "none"

    def names(self) -> list[str]:
        """Every registered name, in registration order."""
        self._ready()
        return list(self._targets)

    def __contains__(self, name: object) -> bool:
        self._ready()
        return name in self._targets

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

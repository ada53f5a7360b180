"""The interface every clarification method implements, and the context its model calls go through.

A :class:`Method` is configured once per evaluation and creates one fresh :class:`EpisodeAgent` per episode. The
agent keeps its private state (a gap ledger, candidate history) between turns, sees only :class:`AgentView`s, and
returns an :class:`AgentAction` per turn. All model calls go through roles (``ctx.run`` / ``ctx.run_one``), so
each one is cached, retried, accounted and switchable between the local backend and any litellm model, and each
is made in the context's domain (``MethodContext.domain``).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from typing import Protocol as TypingProtocol

from pydantic import BaseModel

from tasks.domain_context import DomainContext
from tasks.episodes.records import AgentAction, AgentView, Protocol
from tasks.llm.records import RoleConfig, RoleFailure
from tasks.records import MethodReference
from tasks.registry import Registry
from tasks.roles.base import RoleSpec, run_role
from tasks.roles.config import RolesParams


@dataclass
class MethodContext:
    """What a method may use: role settings, the LLM client, method options from params, the domain, and a seed."""

    roles: RolesParams = field(default_factory=RolesParams)
    client: Any = None
    options: dict[str, Any] = field(default_factory=dict)
    """This method's entry in ``params.yaml: evaluate.methods.<name>`` (minus the ``method`` key)."""
    sample: str | None = None
    """Set per episode by the loop: separates the cached calls of sampled (temperature > 0) roles across repeats."""
    domain: DomainContext = field(kw_only=True)
    """The domain the evaluation plays in, handed down from where it starts (required: there is no default domain):
    every role call renders its prompts in the domain's framing, and the local agent backends ask from its gap
    inventory (``domain.gaps``)."""

    def role_config(self, name: str) -> RoleConfig:
        return self.roles.get(name)

    def run(self, spec: RoleSpec, inputs: Sequence[BaseModel]) -> list[Any]:
        from tasks.llm.client import default_client

        cfg = self.role_config(spec.name)
        return run_role(spec, inputs, cfg, domain=self.domain, client=self.client or default_client(),
                        sample=self.sample if cfg.temperature > 0 else None)

    def run_one(self, spec: RoleSpec, inp: BaseModel) -> Any | RoleFailure:
        return self.run(spec, [inp])[0]


class EpisodeAgent(TypingProtocol):
    def act(self, view: AgentView) -> AgentAction: ...

    def counters(self) -> dict[str, float]:
        """Method counters for run_health.json / statistics.json (e.g. the ledger counters of or-clarify.md §6.5)."""
        ...

    def event_logs(self) -> dict[str, list[dict]]:
        """Extra event logs by file stem (e.g. ``ledger_events``), beyond the per-turn ``AgentAction.events``."""
        ...


class Method(TypingProtocol):
    name: str
    protocols: tuple[Protocol, ...]
    """The protocols this method runs under (FreeQA: open; MC: mc; InterOPT: open, mc_d; ...)."""
    uses_detector: bool
    """False for external adapters (ORPilot): each question turn counts as one atomic question."""

    def new_agent(self, case_id: str, brief: str, protocol: Protocol, *, seed: int, ctx: MethodContext) -> EpisodeAgent:
        ...


class BaseAgent:
    """Convenience base: no counters and no extra logs unless a method adds them."""

    def __init__(self) -> None:
        self._counters: dict[str, float] = {}
        self._logs: dict[str, list[dict]] = {}

    def bump(self, name: str, by: float = 1) -> None:
        self._counters[name] = self._counters.get(name, 0) + by

    def log(self, stem: str, event: dict) -> None:
        self._logs.setdefault(stem, []).append(event)

    def counters(self) -> dict[str, float]:
        return dict(self._counters)

    def event_logs(self) -> dict[str, list[dict]]:
        return {k: list(v) for k, v in self._logs.items()}


Factory = Callable[[str, dict[str, Any]], Method]
"""What an episode method kind registers: it takes (display name, options) and returns a Method."""

EVALUATION_KINDS = ("episodes", "questions")
"""The kinds of evaluation a method kind is registered for (``Domain.evaluation``): an episode method is a
:data:`Factory`, a question-list method a ``tasks.clarifiers.question_methods.QuestionMethod`` class."""


def _discover() -> None:
    """Import every module of this package once, so each method's ``@method`` has run (none loads a model)."""
    package = __name__.rpartition(".")[0]
    for info in pkgutil.iter_modules([str(Path(__file__).parent)]):
        importlib.import_module(f"{package}.{info.name}")


METHODS: Registry[Any] = Registry("method", discover=_discover)
"""Every clarification method kind, of both kinds of evaluation, under ``<evaluation>/<kind>`` (``episodes/freeqa``,
``questions/evpi``: one kind name may have a version for each, as ``evpi`` and ``policy`` do); metadata
``reference`` (why its rows are reference rows, absent: a ranked method) and, for question-list methods, ``options``
(the options model, None: no options). This package's modules are imported on the first lookup; an extension outside
it adds its own kind with ``METHODS.add("episodes/<kind>", "module:factory", reference=...)`` (``replace=True`` to
replace a kind)."""


def method_key(kind: str, evaluation: str = "episodes") -> str:
    """The registry name of a method kind of an evaluation kind."""
    return f"{evaluation}/{kind}"


def method(kind: str, *, evaluation: str = "episodes", **meta: Any) -> Callable[[Any], Any]:
    """``@method("freeqa")`` on a factory registers it as that episode method kind, declared where the method is
    defined; ``evaluation="questions"`` registers a question-list method class. A ``reference`` (a
    :class:`MethodReference`) says why its rows are reference rows (shown apart, never ranked)."""
    if evaluation not in EVALUATION_KINDS:
        raise ValueError(f"method {kind!r}: evaluation must be one of {', '.join(EVALUATION_KINDS)}")
    return METHODS.register(method_key(kind, evaluation), **meta)


def method_kinds(evaluation: str = "episodes") -> list[str]:
    """The method kinds registered for ``evaluation``, in registration order."""
    prefix = method_key("", evaluation)
    return [name.removeprefix(prefix) for name in METHODS.names() if name.startswith(prefix)]


def method_names(evaluation: str = "episodes") -> list[str]:
    """The method kinds registered for ``evaluation``, sorted."""
    return sorted(method_kinds(evaluation))


def method_entry(kind: str, evaluation: str = "episodes") -> tuple[Any, dict[str, Any]]:
    """The registered target of a method kind and its metadata; KeyError naming the kinds known for ``evaluation``."""
    key = method_key(kind, evaluation)
    if key not in METHODS:
        raise KeyError(f"unknown method {kind!r} (known: {', '.join(method_names(evaluation))})")
    return METHODS.get(key), METHODS.meta(key)


def reference_of(kind: str, evaluation: str = "episodes") -> MethodReference | None:
    """Why the method kind's rows are reference rows, or None for a method ranked with the others."""
    key = method_key(kind, evaluation)
    return METHODS.meta(key).get("reference") if key in METHODS else None


def get_method(name: str, kind: str | None = None, options: dict[str, Any] | None = None) -> Method:
    """Build the episode method registered as ``kind`` (default: ``name``) under the display name ``name``."""
    factory, _ = method_entry(kind or name)
    return factory(name, dict(options or {}))

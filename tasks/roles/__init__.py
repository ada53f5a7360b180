"""Roles: every kind of model call the pipeline makes, each with a deterministic local backend and an LLM backend.

The names below load their module on first use (PEP 562), so importing the package runs none of its modules. Each
role's own input and output models are imported from the role's module."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tasks.lazy_exports import lazy_exports

_HOME = {
    "RoleSpec": "base", "run_one": "base", "run_role": "base",
    "RolesParams": "config", "describe_roles": "config",
    "RoleFailureCount": "failures", "RoleFailureRateError": "failures", "check_failure_rates": "failures",
    "counts_from_usage": "failures", "episode_failure_counts": "failures", "episode_fallbacks": "failures",
    "fallback_note": "failures",
    "get_spec": "registry",
}

__all__ = [
    "RoleFailureCount",
    "RoleFailureRateError",
    "RoleSpec",
    "RolesParams",
    "check_failure_rates",
    "counts_from_usage",
    "describe_roles",
    "episode_failure_counts",
    "episode_fallbacks",
    "fallback_note",
    "get_spec",
    "run_one",
    "run_role",
]

if TYPE_CHECKING:
    from tasks.roles.base import RoleSpec, run_one, run_role
    from tasks.roles.config import RolesParams, describe_roles
    from tasks.roles.failures import (
        RoleFailureCount,
        RoleFailureRateError,
        check_failure_rates,
        counts_from_usage,
        episode_failure_counts,
        episode_fallbacks,
        fallback_note,
    )
    from tasks.roles.registry import get_spec


__getattr__, __dir__ = lazy_exports(__name__, _HOME)

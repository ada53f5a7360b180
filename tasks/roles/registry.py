"""Role name -> its ``RoleSpec`` (:data:`ROLES`, a :class:`tasks.registry.Registry`). Each spec registers where it is
defined, ``ROLES.add(SPEC.name, SPEC)``; this package's own modules are imported on the first lookup, and a role
defined in a layer above (a clarifier's, construction's, the session judge's) is registered once its module is
imported, so nothing here names a module above ``tasks.roles``. The declared role names and their settings are
``tasks.roles.config`` (``ROLE_NAMES``, ``RolesParams``)."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from tasks.registry import Registry
from tasks.roles.base import RoleSpec
from tasks.roles.config import ROLE_NAMES


def _discover() -> None:
    """Import every module of ``tasks.roles`` (subpackages included) once, so each of its specs has registered."""
    package = __name__.rpartition(".")[0]
    for info in pkgutil.walk_packages([str(Path(__file__).parent)], prefix=f"{package}."):
        importlib.import_module(info.name)


ROLES: Registry[RoleSpec] = Registry("role", discover=_discover)


def get_spec(name: str) -> RoleSpec:
    if name in ROLE_NAMES and name not in ROLES:
        raise KeyError(f"role {name!r} is declared but its spec is not registered: the module that defines it (above "
                       f"tasks.roles) registers it when imported")
    return ROLES.get(name)

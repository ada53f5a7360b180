"""Role name -> its ``RoleSpec`` (:data:`ROLES`, a :class:`tasks.registry.Registry`). Each spec registers where it is
defined, ``ROLES.add(SPEC.name, SPEC)``, so a role is registered once its module is imported and nothing here names
a module (above ``tasks.roles`` or in it: a stage loads only the roles it runs). Code that runs a role imports its
spec; :func:`get_spec` looks a registered one up by name. The declared role names and their settings are
``tasks.roles.config`` (``ROLE_NAMES``, ``RolesParams``)."""

from __future__ import annotations

from tasks.registry import Registry
from tasks.roles.base import RoleSpec
from tasks.roles.config import ROLE_NAMES

ROLES: Registry[RoleSpec] = Registry("role")


def get_spec(name: str) -> RoleSpec:
    if name in ROLE_NAMES and name not in ROLES:
        raise KeyError(f"role {name!r} is declared but its spec is not registered: import the module that defines "
                       f"it (it registers itself there)")
    return ROLES.get(name)

"""Role name -> its ``RoleSpec``, from where ``tasks.roles.config.ROLES`` declares it (imported on demand, so listing
roles stays cheap)."""

from __future__ import annotations

import importlib

from tasks.roles.base import RoleSpec
from tasks.roles.config import ROLE_NAMES, ROLES


def get_spec(name: str) -> RoleSpec:
    if name not in ROLES:
        raise KeyError(f"unknown role {name!r} (known: {', '.join(ROLE_NAMES)})")
    module, attr = ROLES[name].spec.split(":")
    return getattr(importlib.import_module(module), attr)

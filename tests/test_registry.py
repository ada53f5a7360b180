"""The one registration mechanism (tasks/registry.py) and the registries built on it."""

from __future__ import annotations

import sys

import pytest

from tasks.registry import Registry


def import_every_role() -> None:
    """Import every module that defines a role, so every declared role's spec is registered (the tests are the top
    layer: they may name them; ``tasks.roles`` itself names none)."""
    import importlib
    import pkgutil

    import tasks.construction.brief
    import tasks.domains.optimization.annotate
    import tasks.domains.optimization.decompose
    import tasks.evaluation.judge
    from tasks.clarifiers.base import METHODS

    METHODS.names()  # imports every clarifier module (their agents' role specs)
    import tasks.roles

    for info in pkgutil.walk_packages(tasks.roles.__path__, prefix="tasks.roles."):
        importlib.import_module(info.name)


def test_the_decorator_registers_in_order_and_returns_the_target_unchanged():
    reg: Registry[object] = Registry("thing")

    @reg.register("b", note="second")
    def b() -> str:
        return "b"

    reg.add("a", 1)
    assert reg.get("b") is b and b() == "b"
    assert reg.names() == ["b", "a"] and "a" in reg and len(reg) == 2
    assert reg.meta("b") == {"note": "second"} and reg.meta("a") == {}


def test_a_lazy_target_is_imported_on_its_first_lookup_only():
    reg: Registry[object] = Registry("thing")
    sys.modules.pop("tests.registry_target", None)
    reg.add("lazy", "tests.registry_target:VALUE")
    assert "tests.registry_target" not in sys.modules  # adding imports nothing
    assert reg.get("lazy") == {"loaded": True}
    assert reg.get("lazy") is sys.modules["tests.registry_target"].VALUE
    with pytest.raises(ValueError, match="module:attr"):
        reg.add("bad", "no_colon_here")


def test_an_unknown_name_is_a_key_error_listing_the_known_names():
    reg: Registry[int] = Registry("reward stage")
    reg.add("diversity", 1)
    reg.add("answerability", 2)
    with pytest.raises(KeyError, match=r"unknown reward stage 'nope' \(known: answerability, diversity\)"):
        reg.get("nope")
    with pytest.raises(KeyError, match="unknown reward stage"):
        reg.meta("nope")


def test_a_name_registered_twice_is_refused_unless_replaced():
    reg: Registry[int] = Registry("method")
    reg.add("x", 1)
    with pytest.raises(ValueError, match="'x' is registered twice"):
        reg.add("x", 2)
    reg.add("x", 3, replace=True)
    assert reg.get("x") == 3
    reg.remove("x")
    assert "x" not in reg


def test_discovery_runs_once_before_the_first_lookup_and_a_replacement_outlives_it():
    calls = []
    reg: Registry[int] = Registry("method", discover=lambda: (calls.append(1), reg.add("builtin", 1)))
    reg.add("early", 0)
    assert calls == []  # adding does not discover
    reg.add("builtin", 2, replace=True)  # replacing does: the built-in cannot come back after it
    assert calls == [1] and reg.get("builtin") == 2
    assert reg.names() == ["early", "builtin"] and calls == [1]


def test_the_project_registries_hold_what_their_modules_declare():
    from tasks.clarifiers.base import METHODS, method_kinds, method_names
    from tasks.rewards.stages import STAGES

    assert {"freeqa", "mc", "mc_d", "oracle", "ready_now", "interopt"} <= set(method_names())
    assert method_kinds("questions") == ["no_questions", "oracle_template", "ask_everything", "evpi", "policy",
                                       "llm_questioner", "published"]
    # one registry for the methods of both kinds of evaluation: a kind name may exist for each, never twice for one
    assert {"episodes/evpi", "questions/evpi", "episodes/policy", "questions/policy"} <= set(METHODS.names())
    assert all(name.split("/")[0] in ("episodes", "questions") for name in METHODS.names())
    assert set(STAGES.names()) == {"non_redundancy", "answerability", "task_relevance", "diversity"}


def test_every_declared_role_has_its_spec_registered_under_its_name():
    from tasks.roles.config import ROLE_NAMES
    from tasks.roles.registry import ROLES, get_spec

    import_every_role()
    assert set(ROLES.names()) == set(ROLE_NAMES)
    assert all(get_spec(name).name == name for name in ROLE_NAMES)


def test_the_roles_package_names_no_module_above_it():
    import re
    from pathlib import Path

    import tasks.roles

    above = re.compile(r"tasks\.(?!roles\b|llm\b|records\b|store\b|errors\b|categories\b|registry\b|lazy_exports\b)"
                       r"[a-z_]+(\.[a-z_]+)*:[A-Za-z_]+")
    found = {str(p): m.group(0) for p in Path(tasks.roles.__file__).parent.rglob("*.py")
             if (m := above.search(p.read_text(encoding="utf-8")))}
    assert found == {}

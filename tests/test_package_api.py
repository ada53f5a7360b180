"""Each package under tasks/ says what it offers to the others in a curated ``__all__``: every name in it resolves,
and a package that loads its names on first use (``tasks.lazy_exports``) still imports none of its modules."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXEMPT = {
    "tasks": "the namespace of the project: its modules are imported by name",
    "tasks.llm": "the model-call package (its own owner keeps its interface)",
    "tasks.llm.providers": "the model-call package (its own owner keeps its interface)",
}
PACKAGES = sorted(".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "tasks").rglob("__init__.py"))


def test_packages_found():
    assert {"tasks.analysis", "tasks.domains", "tasks.evaluation", "tasks.roles"} <= set(PACKAGES)


@pytest.mark.parametrize("name", [p for p in PACKAGES if p not in EXEMPT])
def test_all_is_curated_and_resolves(name):
    package = importlib.import_module(name)
    names = getattr(package, "__all__", None)
    assert names is not None, f"{name} has no __all__"
    assert all(isinstance(n, str) and not n.startswith("_") for n in names), names
    assert len(set(names)) == len(names), f"{name}.__all__ names a name twice"
    for n in names:
        assert getattr(package, n, None) is not None, f"{name}.__all__ names {n!r}, which does not resolve"
    home = getattr(package, "_HOME", None)
    if home is not None:  # every lazily loaded name is offered, and is found in the module it is said to live in
        assert set(home) <= set(names), set(home) - set(names)
        for n, module in home.items():
            assert getattr(importlib.import_module(f"{name}.{module}"), n) is getattr(package, n)


def test_lazy_packages_import_none_of_their_modules():
    lazy = [p for p in PACKAGES if p not in EXEMPT and "lazy_exports" in
            (ROOT / Path(*p.split(".")) / "__init__.py").read_text()]
    assert len(lazy) >= 6
    script = (
        "import importlib, json, sys\n"
        "name = sys.argv[1]\n"
        "package = importlib.import_module(name)\n"
        "print(json.dumps(sorted(m for m in set(package._HOME.values()) if f'{name}.{m}' in sys.modules)))\n")
    for name in lazy:
        done = subprocess.run([sys.executable, "-c", script, name], cwd=ROOT, capture_output=True, text=True,
                              check=True)
        assert json.loads(done.stdout) == [], f"importing {name} loads {done.stdout.strip()}"

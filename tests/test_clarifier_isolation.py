"""The clarification agents read the public brief and transcript only: no agent module imports the code that chose
what a case hides (the unit machinery in ``tasks/construction/``, the optimisation domain's decomposer, eligibility,
annotation and problem loading in ``tasks/domains/optimization/``, the CLARITI masking) or the simulated user that
holds the hidden facts, neither directly (lazily inside a function included) nor through what it imports."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
AGENTS = ROOT / "tasks" / "clarifiers"
CONSTRUCTION = ("tasks.construction", "tasks.domains.units", "tasks.domains.optimization.domain",
                "tasks.domains.optimization.decompose", "tasks.domains.optimization.eligibility",
                "tasks.domains.optimization.annotate", "tasks.domains.optimization.problems",
                "tasks.domains.optimization.or_toml")
"""What chose and recorded what a case hides (the optimisation gap inventory and vocabulary in the same folder are
the agents' own)."""
FORBIDDEN = (*CONSTRUCTION, "tasks.domains.swe.masking", "tasks.roles.or_user")


def imported_names(source: str) -> set[str]:
    """Every module an ``import``, ``from ... import`` or ``importlib.import_module("...")`` in ``source`` names."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            names.add(node.args[0].value.split(":")[0])
    return names


def forbidden(names: set[str]) -> set[str]:
    return {n for n in names if any(n == f or n.startswith(f + ".") for f in FORBIDDEN)}


def test_the_scan_sees_direct_lazy_and_dynamic_imports():
    source = ("from tasks.domains.optimization.eligibility import eligible\n"
              "def f():\n    from tasks.domains.swe import masking\n    import importlib\n"
              "    return importlib.import_module('tasks.roles.or_user')\n")
    assert forbidden(imported_names(source)) == {
        "tasks.domains.optimization.eligibility", "tasks.domains.optimization.eligibility.eligible",
        "tasks.domains.swe.masking", "tasks.roles.or_user"}


def test_no_agent_module_imports_the_hidden_choice_or_the_hidden_facts():
    modules = sorted(AGENTS.glob("*.py"))
    assert {p.stem for p in modules} >= {"interopt", "interopt_roles", "alignment", "gaps", "choice", "freeqa"}
    found = {p.name: sorted(forbidden(imported_names(p.read_text()))) for p in modules}
    assert not {k: v for k, v in found.items() if v}


def test_importing_every_agent_module_loads_none_of_it():
    code = ("import importlib, json, pkgutil, sys\nimport tasks.clarifiers as c\n"
            "for m in pkgutil.iter_modules(c.__path__):\n    importlib.import_module('tasks.clarifiers.' + m.name)\n"
            "print(json.dumps(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    loaded = set(json.loads(out.stdout.splitlines()[-1]))
    assert "tasks.clarifiers.interopt" in loaded and "tasks.clarifiers.alignment" in loaded
    assert not forbidden(loaded)

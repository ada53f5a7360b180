"""The code stands in layers (docs/design.md, "Layers"): no import runs back up a layer, and no module imports itself
round a cycle.

The layers are the import-linter contracts in pyproject.toml (``[tool.importlinter]``); ``lint-imports`` checks them
from the command line, the first test here in this process. The last reads the same import graph (every import: at
module level, inside functions and under ``TYPE_CHECKING``, a package's own ``__init__`` included) and fails on any
cycle between two modules, which a layers contract allows between the modules of one line;
``tests/test_import_graph.py`` checks the imports that run.
"""

from __future__ import annotations

from pathlib import Path

import grimp
import pytest
from importlinter.cli import EXIT_STATUS_SUCCESS, lint_imports

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("tasks", "flows")


def test_no_import_runs_back_up_a_layer(monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    status = lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True)
    assert status == EXIT_STATUS_SUCCESS, capsys.readouterr().out


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph(*PACKAGES, cache_dir=None)


def test_the_graph_is_this_checkout(graph):
    assert "tasks.domain_context" in graph.modules and "flows.pipeline" in graph.modules


def test_no_module_imports_itself_round_a_cycle(graph):
    closing = sorted(f"{a} -> {b}" for a in graph.modules for b in graph.find_modules_directly_imported_by(a)
                     if graph.chain_exists(importer=b, imported=a))
    assert closing == [], "imports that close a cycle:\n" + "\n".join(closing)

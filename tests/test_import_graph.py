"""The import graph of ``tasks/`` and ``flows/`` has no cycle: the lower layers never import the ones built on them.

The graph is read from the source with ``ast``: every ``import`` and ``from ... import`` of a project module, at
module level or inside a function, is an edge (to the module, and to each package above it that the import runs
first). Imports under ``if TYPE_CHECKING:`` never run and are left out.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import ROOT

PACKAGES = ("tasks", "flows")


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int
    level: str
    """``module`` (runs when the module is imported) or ``function`` (runs when the function is called)."""


def module_files(root: Path = ROOT) -> dict[str, Path]:
    """Dotted module name -> file, for every module under the project packages."""
    out = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imported(node: ast.AST, module: str, is_package: bool, modules: dict[str, Path]) -> list[str]:
    """The dotted names one import statement loads (a ``from`` import's name when it is a module itself)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    assert isinstance(node, ast.ImportFrom)
    base = node.module or ""
    if node.level:
        here = module.split(".") if is_package else module.split(".")[:-1]
        here = here[: len(here) - (node.level - 1)]
        base = ".".join([*here, base] if base else here)
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]


def _statements(tree: ast.AST, level: str = "module"):
    """``(import node, level)`` for every import that runs: module level, or inside a function."""
    for child in ast.iter_child_nodes(tree):
        if isinstance(child, ast.If) and _type_checking(child.test):
            for other in child.orelse:
                yield from _statements(ast.Module(body=[other], type_ignores=[]), level)
            continue
        inner = "function" if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) else level
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child, inner
        yield from _statements(child, inner)


def import_graph(root: Path = ROOT) -> list[Edge]:
    modules = module_files(root)
    edges = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node, level in _statements(tree):
            for imported in _imported(node, name, path.name == "__init__.py", modules):
                parts = imported.split(".")
                for i in range(1, len(parts) + 1):  # importing a.b.c runs a and a.b first
                    target = ".".join(parts[:i])
                    if target in modules and target != name and not name.startswith(target + "."):
                        edges.append(Edge(name, target, node.lineno, level))
    return edges


def find_cycle(edges: list[Edge]) -> list[Edge]:
    """One cycle of the graph as its edges in order, or [] when the graph has none."""
    out: dict[str, list[Edge]] = {}
    for edge in edges:
        out.setdefault(edge.source, []).append(edge)
    state: dict[str, str] = {}  # "open" while on the current path, "done" once every path from it was explored
    path: list[Edge] = []

    def visit(node: str) -> list[Edge]:
        state[node] = "open"
        for edge in out.get(node, []):
            if state.get(edge.target) == "open":
                start = next((i for i, e in enumerate(path) if e.source == edge.target), len(path))
                return [*path[start:], edge]
            if edge.target not in state:
                path.append(edge)
                if found := visit(edge.target):
                    return found
                path.pop()
        state[node] = "done"
        return []

    for node in sorted(out):
        if node not in state and (found := visit(node)):
            return found
    return []


def describe(cycle: list[Edge]) -> str:
    return " -> ".join(f"{e.source} (line {e.line}, {e.level} level)" for e in cycle) + f" -> {cycle[0].source}"


def test_module_level_imports_have_no_cycle():
    cycle = find_cycle([e for e in import_graph() if e.level == "module"])
    assert not cycle, "import cycle: " + describe(cycle)


def test_imports_inside_functions_close_no_cycle_either():
    """A cycle through a function-level import works only as long as nobody moves that import to the top."""
    cycle = find_cycle(import_graph())
    assert not cycle, "import cycle: " + describe(cycle)


def test_the_graph_reads_both_levels_and_skips_type_checking_imports(tmp_path):
    for folder in ("tasks/sub", "flows"):
        (tmp_path / folder).mkdir(parents=True)
    for rel in ("tasks/__init__.py", "tasks/sub/__init__.py", "flows/__init__.py"):
        (tmp_path / rel).write_text("")
    (tmp_path / "tasks/low.py").write_text("from typing import TYPE_CHECKING\n"
                                           "if TYPE_CHECKING:\n    from tasks.high import X\n")
    (tmp_path / "tasks/high.py").write_text("from tasks import low\n\ndef f():\n    from .sub.leaf import g\n")
    (tmp_path / "tasks/sub/leaf.py").write_text("import tasks.high\n")
    edges = import_graph(tmp_path)
    assert {(e.source, e.target, e.level) for e in edges} == {
        ("tasks.high", "tasks.low", "module"), ("tasks.high", "tasks.sub", "function"),
        ("tasks.high", "tasks.sub.leaf", "function"), ("tasks.sub.leaf", "tasks.high", "module")}
    assert not find_cycle([e for e in edges if e.level == "module"])
    cycle = find_cycle(edges)
    assert {e.source for e in cycle} == {"tasks.high", "tasks.sub.leaf"}
    assert describe(cycle).endswith(f"-> {cycle[0].source}")

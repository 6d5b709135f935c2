"""The source tree keeps the shape its architecture promises: no import circles, libraries that never import the
app, a small top level in ``app/``, no module importing the package above it, one way to store a message.

Imports are read from the source (every ``import`` statement, deferred ones inside functions included), so a
circle hidden by an import inside a function still counts.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("app", "memory", "compression", "benchmarks")
LIBRARIES = ("memory", "compression")
MAX_APP_TOP_LEVEL_MODULES = 8


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def _modules() -> dict[str, Path]:
    return {_module_name(path): path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))}


def _owner(name: str) -> str | None:
    """The module of ours that ``name`` (a module, or a name inside one) resolves to."""
    modules = _modules()
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _imported(module: str, path: Path) -> Iterator[str]:
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            submodules = [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in _modules()]
            # "from package import submodule" imports the submodule; "from package import name" the package.
            yield from submodules if len(submodules) == len(node.names) else [base, *submodules]


@cache
def _graph() -> dict[str, frozenset[str]]:
    graph = {}
    for module, path in _modules().items():
        owners = {_owner(name) for name in _imported(module, path)}
        graph[module] = frozenset(owner for owner in owners if owner is not None and owner != module)
    return graph


def _circles(graph: dict[str, frozenset[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_the_import_graph_has_no_circle() -> None:
    assert _circles(_graph()) == []


def test_the_circle_finder_finds_a_circle() -> None:
    graph = {"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset({"a"}), "d": frozenset({"a"})}
    assert _circles(graph) == [["a", "b", "c"]]


@pytest.mark.parametrize("library", LIBRARIES)
def test_a_library_never_imports_the_app_or_the_other_library(library: str) -> None:
    others = {"app", "benchmarks", *LIBRARIES} - {library}
    reaching_out = {
        (module, imported)
        for module, imports in _graph().items()
        if module.split(".")[0] == library
        for imported in imports
        if imported.split(".")[0] in others
    }
    assert reaching_out == set()


def test_no_module_imports_the_package_above_it() -> None:
    upward = {
        (module, imported)
        for module, imports in _graph().items()
        for imported in imports
        if module.startswith(f"{imported}.")
    }
    assert upward == set()


def test_the_app_keeps_a_small_top_level_with_a_package_per_concern() -> None:
    top_level = sorted(path.stem for path in (ROOT / "app").glob("*.py") if path.name != "__init__.py")
    assert len(top_level) <= MAX_APP_TOP_LEVEL_MODULES, top_level


def test_every_package_has_a_map_in_its_init_docstring() -> None:
    missing = [
        str(init.relative_to(ROOT))
        for package in ("app", *LIBRARIES)
        for init in (ROOT / package).rglob("__init__.py")
        if init.parent != ROOT / package
        and "migrations" not in init.parts
        and not ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
    ]
    assert missing == []


def test_one_function_stores_and_announces_a_message() -> None:
    announcing = sorted(
        str(path.relative_to(ROOT))
        for path in (ROOT / "app").rglob("*.py")
        if re.search(r'"message\.created",\s*message_event\(', path.read_text(encoding="utf-8"))
    )
    assert announcing == ["app/live/messages.py"]

"""The code's layout holds (docs/ARCHITECTURE.md): every import resolves, no import circles,
no module past the size one reads in a sitting, and ``app/`` itself keeps only the frame.

Imports are read from the source with ``ast``, so imports inside functions (lazy ones) count
the same as module-level ones: a moved module that a function still imports by its old name
fails here, not in production.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("app", "model_server")
MAX_LINES = 450
FRAME_MAX_MODULES = 8


def _modules() -> dict[str, Path]:
    """Dotted module name → file, for every Python file of our packages."""
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> list[tuple[int, str, str | None]]:
    """(line, module, imported name or None) for every import of our packages in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    out: list[tuple[int, str, str | None]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, alias.name, None) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".")
                if not is_package:
                    anchor = anchor[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            out.extend((node.lineno, base, alias.name) for alias in node.names)
    return [item for item in out if item[1].split(".")[0] in PACKAGES]


def _target(module: str, imported: str | None) -> str:
    """The module an import makes this one depend on (``from a import b``: a.b if a module)."""
    if imported and f"{module}.{imported}" in MODULES:
        return f"{module}.{imported}"
    return module


def test_every_import_of_our_modules_resolves_lazy_ones_included() -> None:
    broken = []
    for name, path in MODULES.items():
        for line, module, imported in _imports(name, path):
            if module not in MODULES:
                broken.append(f"{path.relative_to(ROOT)}:{line}: no module {module}")
                continue
            if imported is None or imported == "*" or f"{module}.{imported}" in MODULES:
                continue
            source = MODULES[module].read_text(encoding="utf-8")
            if imported not in source:
                broken.append(f"{path.relative_to(ROOT)}:{line}: {module} has no {imported}")
    assert not broken, "\n".join(broken)


def test_names_imported_from_our_modules_exist() -> None:
    """The same check through the import system, for names a module defines at run time."""
    missing = []
    for name, path in MODULES.items():
        for line, module, imported in _imports(name, path):
            if imported in (None, "*") or f"{module}.{imported}" in MODULES:
                continue
            spec = importlib.util.find_spec(module)
            assert spec is not None, module
            loaded = importlib.import_module(module)
            if not hasattr(loaded, imported):
                missing.append(f"{path.relative_to(ROOT)}:{line}: {module}.{imported}")
    assert not missing, "\n".join(missing)


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in MODULES}
    for name, path in MODULES.items():
        for _line, module, imported in _imports(name, path):
            target = _target(module, imported)
            if target != name and target in MODULES:
                graph[name].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_cycle_finder_finds_a_cycle() -> None:
    """The finder itself: a → b → c → a is one circle; d alone is none."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_no_import_circles_lazy_imports_included() -> None:
    graph = _graph()
    # A package's __init__ re-exporting its submodules is not a circle with them unless a
    # submodule imports the package back; that case stays in the graph and is caught.
    cycles = _cycles(graph)
    assert not cycles, "import circles:\n" + "\n".join(" ⇄ ".join(c) for c in cycles)


@pytest.mark.parametrize(
    "folder,suffix", [("app", ".py"), ("model_server", ".py"), ("static/js", ".js")]
)
def test_no_module_over_the_size_limit(folder: str, suffix: str) -> None:
    long = []
    for path in sorted((ROOT / folder).rglob(f"*{suffix}")):
        lines = path.read_text(encoding="utf-8").count("\n")
        if lines > MAX_LINES:
            long.append(f"{path.relative_to(ROOT)}: {lines} lines")
    assert not long, f"over {MAX_LINES} lines:\n" + "\n".join(long)


def test_app_itself_keeps_only_the_frame() -> None:
    frame = sorted(p.name for p in (ROOT / "app").glob("*.py"))
    assert len(frame) <= FRAME_MAX_MODULES, frame

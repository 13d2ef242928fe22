"""Every environment variable the code reads is in docs/DEPLOY.md's table, and the table names
none that nothing reads: an operator looks there, and a setting read nowhere in the table is
one nobody can find.

The sources are read with ``ast``, not imported: a read is ``os.environ.get("X")``,
``os.environ["X"]``, ``os.getenv("X")``, ``os.environ.setdefault("X", ...)``, the same through a
name bound to ``os.environ``, a call of a module's own helper that reads ``os.environ`` with
its argument (``_int("PORT", 5000)``: every upper-case string it is given), or a click option's
``envvar="X"``; in the Makefile, a variable given with ``?=`` (the environment overrides it).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("app", "model_server", "bench", "tests", "migrations", "gunicorn.conf.py")
TABLE = ROOT / "docs" / "DEPLOY.md"
HEADING = "## Settings (environment)"
NAME = re.compile(r"^[A-Z][A-Z0-9_]{2,}$")
# The system's own, read only to pass it on to a subprocess: not a setting of ours.
SYSTEM = {"PATH"}


def _python_files() -> list[Path]:
    files: list[Path] = []
    for source in SOURCES:
        path = ROOT / source
        files.extend(sorted(path.rglob("*.py")) if path.is_dir() else [path])
    return files


def _is_os_environ(node: ast.AST, aliases: set[str]) -> bool:
    if isinstance(node, ast.Name):
        return node.id in aliases
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "environ"
        and isinstance(node.value, ast.Name)
        and node.value.id == "os"
    )


def _env_key(node: ast.AST, aliases: set[str]) -> ast.AST | None:
    """The key expression when ``node`` reads the process's environment, else None."""
    if isinstance(node, ast.Subscript) and _is_os_environ(node.value, aliases):
        return node.slice
    if not isinstance(node, ast.Call) or not node.args:
        return None
    func = node.func
    if isinstance(func, ast.Attribute):
        if func.attr in ("get", "setdefault", "pop") and _is_os_environ(func.value, aliases):
            return node.args[0]
        if func.attr == "getenv" and isinstance(func.value, ast.Name) and func.value.id == "os":
            return node.args[0]
    return None


def reads_in(tree: ast.AST) -> set[str]:
    """The environment variables one module's source reads (see the module docstring)."""
    aliases = {
        target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and _is_os_environ(node.value, set())
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    found: set[str] = set()
    helpers: set[str] = set()
    for node in ast.walk(tree):
        key = _env_key(node, aliases)
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            found.add(key.value)
        if isinstance(node, ast.Call):
            found.update(
                k.value.value
                for k in node.keywords
                if k.arg == "envvar" and isinstance(k.value, ast.Constant)
            )
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            keys = [_env_key(inner, aliases) for inner in ast.walk(node)]
            if any(k is not None and not isinstance(k, ast.Constant) for k in keys):
                helpers.add(node.name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) in helpers:
            found.update(
                arg.value
                for arg in node.args
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
            )
    return {name for name in found if NAME.match(name)}


def read_in_code() -> dict[str, set[str]]:
    """Every environment variable read → the files that read it."""
    out: dict[str, set[str]] = {}
    for path in _python_files():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for name in reads_in(tree) - SYSTEM:
            out.setdefault(name, set()).add(path.relative_to(ROOT).as_posix())
    for line in (ROOT / "Makefile").read_text(encoding="utf-8").splitlines():
        match = re.match(r"^([A-Z][A-Z0-9_]+)\s*\?=", line)
        if match:
            out.setdefault(match.group(1), set()).add("Makefile")
    return out


def documented() -> set[str]:
    """The variables named in the first cell of each row of DEPLOY.md's settings table."""
    text = TABLE.read_text(encoding="utf-8")
    section = text.split(HEADING, 1)[1].split("\n## ", 1)[0]
    names: set[str] = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            names.update(re.findall(r"`([A-Z][A-Z0-9_]+)`", line.split("|")[1]))
    return names


def test_every_variable_read_in_code_is_in_the_table() -> None:
    table = documented()
    missing = {name: sorted(files) for name, files in read_in_code().items() if name not in table}
    assert not missing, f"read in code, missing from docs/DEPLOY.md's table: {missing}"


def test_the_table_names_only_variables_that_are_read() -> None:
    stale = documented() - set(read_in_code())
    assert not stale, f"in docs/DEPLOY.md's table, read nowhere: {sorted(stale)}"


def test_the_scanner_finds_every_form_of_read() -> None:
    source = """
import os
import click
env = os.environ
A = os.environ.get("ONE_GET", "x")
B = os.environ["TWO_INDEX"]
C = os.getenv("THREE_GETENV")
D = env.get("FOUR_ALIAS")
os.environ.setdefault("FIVE_DEFAULT", "1")
def _int(name, default, *fallbacks):
    for key in (name, *fallbacks):
        if os.environ.get(key):
            return int(os.environ[key])
    return default
E = _int("SIX_HELPER", 1, "SEVEN_FALLBACK")
F = click.option("--url", envvar="EIGHT_CLICK")
G = request.environ.get("PATH_INFO")
H = {"NOT_READ": 1}
"""
    found = reads_in(ast.parse(source))
    assert found == {
        "ONE_GET",
        "TWO_INDEX",
        "THREE_GETENV",
        "FOUR_ALIAS",
        "FIVE_DEFAULT",
        "SIX_HELPER",
        "SEVEN_FALLBACK",
        "EIGHT_CLICK",
    }

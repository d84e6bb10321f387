"""Stoker uses other servers and clients only through their public names.

The front once subclassed uvicorn's private ``HttpToolsProtocol`` and reached some fifteen
private names; a minor release could turn its fast path off without a failing test.  This
check reads every module of ``src/`` and ``bench/``: no import of, or attribute on, a name
with a leading underscore from these packages, and no class derived from one of their
classes.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WATCHED = ("uvicorn", "granian", "aiohttp", "httptools")


def _watched(module: str) -> bool:
    return module.split(".")[0] in WATCHED


def violations(source: str) -> list[str]:
    """What in ``source`` reaches a private name of a :data:`WATCHED` package, or derives
    a class from one of their classes."""
    found: list[str] = []
    tree = ast.parse(source)
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _watched(alias.name):
                    bound.add((alias.asname or alias.name).split(".")[0])
                    found += [f"import {alias.name}" for part in alias.name.split(".")
                              if part.startswith("_")]
        elif isinstance(node, ast.ImportFrom) and node.module and _watched(node.module):
            if any(part.startswith("_") for part in node.module.split(".")):
                found.append(f"from {node.module} import ...")
            for alias in node.names:
                bound.add(alias.asname or alias.name)
                if alias.name.startswith("_"):
                    found.append(f"from {node.module} import {alias.name}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and (
                _root(node) in bound) and not node.attr.startswith("__"):
            found.append(f"{_root(node)}...{node.attr}")
        if isinstance(node, ast.ClassDef):
            found += [f"class {node.name}({_root(base)}...)" for base in node.bases
                      if _root(base) in bound]
    return found


def _root(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def test_the_check_catches_what_it_is_for() -> None:
    assert violations("from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol\n"
                      "class P(HttpToolsProtocol): pass\n")
    assert violations("from uvicorn import main\nmain._private()\n")
    assert violations("import granian._granian\n")
    assert violations("from aiohttp import _helpers\n")
    assert not violations("import aiohttp\nsession = aiohttp.ClientSession()\n")
    assert not violations("import httptools\nparser = httptools.HttpRequestParser(object())\n")


@pytest.mark.parametrize("path", sorted([*ROOT.glob("src/**/*.py"), *ROOT.glob("bench/**/*.py")]),
                         ids=lambda path: str(path.relative_to(ROOT)))
def test_no_module_uses_a_private_name_of_another_server(path: Path) -> None:
    assert violations(path.read_text()) == []

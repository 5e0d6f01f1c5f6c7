"""The import direction of the layers (STYLE.md), checked on the source.

    ninep (no I/O, no trio)  <-  server  ->  tree  <-  fs  ->  sessions
"""

from __future__ import annotations

import ast
import importlib
import pathlib

import pytest

import anvilfs

PACKAGE = pathlib.Path(anvilfs.__file__).parent

# package -> the anvilfs packages and third-party modules it must not import
FORBIDDEN = {
    "ninep": {"server", "tree", "fs", "sessions", "client", "app", "trio"},
    "tree": {"ninep", "server", "fs", "sessions", "client", "app"},
    "sessions": {"ninep", "server", "tree", "fs", "client", "app", "backends"},
    "backends": {"ninep", "server", "tree", "fs", "client", "app"},
    "config": {"ninep", "server", "tree", "fs", "client", "app", "sessions", "backends", "trio"},
    "fs": {"ninep", "server", "client"},
    "mail": {"ninep", "server", "tree", "fs", "client", "app", "sessions", "beads", "backends"},
}


def imported_names(path: pathlib.Path) -> set[str]:
    """First component below anvilfs of each anvilfs import, and top-level third-party names."""
    tree = ast.parse(path.read_text(), str(path))
    depth = len(path.relative_to(PACKAGE).parts) - 1  # how deep below anvilfs/
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                names.add(parts[1] if parts[0] == "anvilfs" and len(parts) > 1 else parts[0])
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                parts = (node.module or "").split(".")
                names.add(parts[1] if parts[0] == "anvilfs" and len(parts) > 1 else parts[0])
            else:
                up = node.level - 1  # levels above the module's own package
                if up < depth:
                    continue  # an import inside the same package
                target = (node.module or "").split(".")[0] if up == depth else None
                names.update({target} if target else {a.name for a in node.names})
    return names


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_layer_imports_point_the_right_way(package):
    for path in sorted((PACKAGE / package).rglob("*.py")):
        bad = imported_names(path) & FORBIDDEN[package]
        assert not bad, f"{path.relative_to(PACKAGE)} imports {sorted(bad)}"


def test_the_checker_sees_imports():
    assert "trio" in imported_names(PACKAGE / "server" / "connection.py")
    assert "ninep" in imported_names(PACKAGE / "server" / "connection.py")
    assert "errors" in imported_names(PACKAGE / "tree" / "ctl.py")


@pytest.mark.parametrize("module", ["anvilfs.ninep", "anvilfs.tree", "anvilfs.sessions", "anvilfs.server", "anvilfs.client"])
def test_public_api_is_sorted_and_importable(module):
    mod = importlib.import_module(module)
    assert mod.__all__ == sorted(mod.__all__)
    for name in mod.__all__:
        assert hasattr(mod, name), name

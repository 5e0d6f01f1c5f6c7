"""anvilfs.worktrees is a domain package: nothing of 9P, the tree, the store or the other domains (docs/design.md).

tests/suite/test_layers.py checks the other packages; this one until it
lists worktrees too.
"""

from __future__ import annotations

import ast
import pathlib

import anvilfs.worktrees

PACKAGE = pathlib.Path(anvilfs.worktrees.__file__).parent
FORBIDDEN = {"ninep", "server", "tree", "fs", "client", "aioclient", "app", "sessions", "backends", "beads", "mail",
             "storage", "config", "web", "mcpserver"}


def anvilfs_imports(path: pathlib.Path) -> set[str]:
    """The anvilfs modules a file of the package imports, by their first name below anvilfs."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.level == 2:  # from ..X import
            names.add((node.module or "").split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("anvilfs."):
            names.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            names.update(a.name.split(".")[1] for a in node.names if a.name.startswith("anvilfs."))
    return names


def test_the_engine_imports_no_other_layer():
    for path in sorted(PACKAGE.glob("*.py")):
        bad = anvilfs_imports(path) & FORBIDDEN
        assert not bad, f"anvilfs/worktrees/{path.name} imports {sorted(bad)}"


def test_the_checker_sees_imports(tmp_path):
    assert anvilfs_imports(PACKAGE / "merge.py") >= {"faults"}
    bad = tmp_path / "bad.py"
    bad.write_text("from ..tree import ctl\nimport anvilfs.server\nfrom anvilfs.beads import model\n")
    assert anvilfs_imports(bad) == {"tree", "server", "beads"}


def test_the_public_api_is_sorted_and_importable():
    assert anvilfs.worktrees.__all__ == sorted(anvilfs.worktrees.__all__)
    assert all(hasattr(anvilfs.worktrees, name) for name in anvilfs.worktrees.__all__)

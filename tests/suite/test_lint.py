"""The code passes ruff with the project's configuration (pyproject.toml, [tool.ruff])."""

from __future__ import annotations

import shutil
import subprocess
import sys

from harness.prerequisites import missing
from harness.server import REPO_ROOT


def test_ruff_finds_nothing() -> None:
    ruff = shutil.which("ruff", path=str(REPO_ROOT / ".venv" / "bin")) or shutil.which("ruff")
    if ruff is None:
        missing("ruff not found: it is in the test extra (scripts/venv test)")
    result = subprocess.run([ruff, "check", "--no-cache", "."], cwd=REPO_ROOT, capture_output=True, text=True,
                            timeout=120, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, f"ruff check (as {sys.executable} sees it) found:\n{result.stdout}{result.stderr}"

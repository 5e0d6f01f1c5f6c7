"""`sim:write PATH TEXT`: the simulated agent writes files in its session's directory, through a
real ``anvilfs serve`` and the project's own client, so that worktree flows run without an agent CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli_runs import ok
from harness.server import AnvilServer


def _turn(srv: AnvilServer, cwd: Path, prompt: str, name: str = "dev") -> str:
    """A sim session in CWD runs one turn of PROMPT; the state its `wait` answers."""
    ok(srv, "write", "agent/ctl", f"new sim {cwd} name={name}")
    ok(srv, "write", f"agent/{name}/in", input=prompt)
    return ok(srv, "read", f"agent/{name}/wait").strip()


def _files(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_file_is_written_in_the_sessions_directory(anvil_server: AnvilServer, tmp_path: Path) -> None:
    srv, cwd = anvil_server, tmp_path / "repo"
    cwd.mkdir()
    (cwd / "fix.txt").write_text("old text, replaced\n")
    assert _turn(srv, cwd, "sim:write fix.txt the fixed  line \n") == "await"
    assert _files(cwd) == {"fix.txt": "the fixed  line \n"}  # the rest of the line, as it was, and a newline
    out = ok(srv, "read", "agent/dev/out")
    assert out.startswith("[simulated]"), out
    assert "[simulated] wrote fix.txt (17 bytes)" in out, out
    assert "sim:write" not in out, out  # an answer quoted in the next prompt must not write again


def test_several_writes_in_order_with_their_directories(anvil_server: AnvilServer, tmp_path: Path) -> None:
    srv, cwd = anvil_server, tmp_path / "repo"
    cwd.mkdir()
    prompt = "make two files\nsim:write src/deep/a.py print('a')\n  sim:write b.txt\nsim:write src/deep/a.py twice\n"
    assert _turn(srv, cwd, prompt) == "await"
    assert _files(cwd) == {"b.txt": "\n", "src/deep/a.py": "twice\n"}  # the later write of a.py replaced it
    out = ok(srv, "read", "agent/dev/out")
    said = [line for line in out.splitlines() if line.startswith("[simulated] wrote")]
    assert said == ["[simulated] wrote src/deep/a.py (11 bytes)", "[simulated] wrote b.txt (1 bytes)",
                    "[simulated] wrote src/deep/a.py (6 bytes)"], out  # fmt: skip


@pytest.mark.parametrize(("path", "why"), [
    ("/etc/anvilfs-sim-write", "the path is absolute"),
    ("../outside.txt", "has a `..` component"),
    ("sub/../../outside.txt", "has a `..` component"),
    ("out/escaped.txt", "through a symbolic link"),
    ("out", "through a symbolic link"),
    ("sub", "is a directory"),
])  # fmt: skip
def test_a_path_out_of_the_directory_fails_the_turn_and_nothing_is_written(
    anvil_server: AnvilServer, tmp_path: Path, path: str, why: str
) -> None:
    srv, cwd, outside = anvil_server, tmp_path / "repo", tmp_path / "elsewhere"
    cwd.mkdir(), outside.mkdir(), (cwd / "sub").mkdir()
    (cwd / "out").symlink_to(outside)
    before = _files(tmp_path)
    # a good write first: it is not made either, since every path is checked before any is written
    assert _turn(srv, cwd, f"sim:write fine.txt ok\nsim:write {path} nope\n") == "error"
    assert _files(tmp_path) == before
    assert not (outside / "escaped.txt").exists()
    status = ok(srv, "read", "agent/dev/status")
    assert status.startswith(f"error simulated sim:write {path}: "), status
    assert why in status and "nothing was written" in status, status
    assert "sim:write PATH TEXT" in ok(srv, "read", "agent/errors")  # and how to do it right


def test_a_write_without_a_path_fails_the_turn(anvil_server: AnvilServer, tmp_path: Path) -> None:
    assert _turn(anvil_server, tmp_path, "sim:write\n") == "error"
    assert "sim:write without a path" in ok(anvil_server, "read", "agent/dev/status")
    assert list(tmp_path.iterdir()) == []

"""The state directory is private: made 0700 with 0600 files, refused when open to others, no link followed."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from harness.server import REPO_ROOT, start_server


@pytest.fixture
def base():
    path = Path(tempfile.mkdtemp(prefix="anvs.", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_a_state_directory_open_to_others_is_refused_with_the_fix(base):
    state = base / "state"
    state.mkdir()
    os.chmod(state, 0o777)
    result = subprocess.run(
        [sys.executable, "-m", "anvilfs", "serve", "--namespace", str(base / "ns"), "--state", str(state)],
        capture_output=True, text=True, timeout=30, cwd=REPO_ROOT, env=os.environ | {"XDG_CONFIG_HOME": str(base / "cfg")},
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 1
    assert "has mode 0777" in result.stderr and f"chmod 700 {state}" in result.stderr
    assert "Traceback" not in result.stderr
    assert _mode(state) == 0o777  # refused, not quietly changed


def test_what_the_server_writes_is_private(base):
    srv = start_server(base)
    try:
        assert srv.run_cli("write", "agent/ctl", "new sim /tmp name=bot1").returncode == 0
        assert srv.run_cli("write", "agent/bot1/in", "hello").returncode == 0
        assert srv.run_cli("read", "agent/bot1/wait").stdout == "await\n"
    finally:
        srv.stop()
    state = base / "state"
    assert _mode(state) == 0o700 and not (state / "sessions").exists()  # sessions are in the database
    files = sorted(p.name for p in state.iterdir() if p.name.startswith("anvilfs.db"))
    assert "anvilfs.db" in files
    assert {name: _mode(state / name) for name in files} == dict.fromkeys(files, 0o600)


def test_a_link_planted_in_the_state_directory_is_not_read_or_written_through(base):
    """In the sessions of an older anvilfs, which the start imports (sessions/imported.py), and where the
    database's write-ahead log goes (SQLite would follow it)."""
    victim = base / "victim"
    victim.write_text('[session]\nname = "bot1"\nbackend = "sim"\ncwd = "/tmp"\n')
    sessions = base / "state" / "sessions"
    sessions.mkdir(parents=True, mode=0o700)
    os.chmod(base / "state", 0o700)
    os.symlink(victim, sessions / "bot1.toml")
    srv = start_server(base)
    try:
        assert "bot1" not in srv.run_cli("read", "agent/list").stdout  # not imported through the link
        assert srv.run_cli("write", "agent/ctl", "new sim /tmp name=bot1").returncode == 0
    finally:
        srv.stop()
    [kept] = (base / "state" / "imported").iterdir()  # imported/TIME/
    assert os.path.islink(kept / "sessions" / "bot1.toml")  # left for the user to look at
    os.symlink(victim, base / "state" / "anvilfs.db-wal")
    result = subprocess.run(
        [sys.executable, "-m", "anvilfs", "serve", "--namespace", str(base / "ns"), "--state", str(base / "state")],
        capture_output=True, text=True, timeout=30, cwd=REPO_ROOT, env=os.environ | {"XDG_CONFIG_HOME": str(base / "cfg")},
        stdin=subprocess.DEVNULL)
    assert result.returncode == 1 and "Traceback" not in result.stderr and "anvilfs.db-wal" in result.stderr, \
        result.stderr
    assert victim.read_text().startswith("[session]")


def test_a_link_planted_among_the_beads_is_reported_and_the_server_starts(base):
    srv = start_server(base)
    try:
        assert srv.run_cli("write", "agent/beads/ctl", 'new "Task" dev "d"').returncode == 0
    finally:
        srv.stop()
    victim = base / "victim"
    victim.write_text("[bead]\nid = 'x'\n")
    os.symlink(victim, base / "state" / "beads" / "planted-009.toml")
    srv = start_server(base, log_name="again.trace")
    try:
        listing = srv.run_cli("read", "agent/beads/list").stdout
        assert "task-001 pending" in listing and "planted-009 broken - - " in listing and "symbolic link" in listing
        assert "symbolic link" in srv.run_cli("read", "agent/errors").stdout
    finally:
        srv.stop()


def test_a_state_whose_git_config_was_changed_is_refused_in_one_line(base):
    srv = start_server(base)
    srv.stop()
    with open(base / "state" / ".git" / "config", "a") as config:
        config.write('[core]\n\tfsmonitor = "touch /tmp/anvilfs-pwned"\n')
    result = subprocess.run(
        [sys.executable, "-m", "anvilfs", "serve", "--namespace", str(base / "ns"), "--state", str(base / "state")],
        capture_output=True, text=True, timeout=30, cwd=REPO_ROOT, env=os.environ | {"XDG_CONFIG_HOME": str(base / "cfg")},
        stdin=subprocess.DEVNULL)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert "config is not the one anvilfs wrote" in result.stderr

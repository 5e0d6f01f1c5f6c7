"""A client command ends with os._exit once its output is flushed (cli.run): nothing it printed is lost.

The console script and `python -m anvilfs` both go through run(); the
interpreter's teardown is skipped, so these check what the teardown would
otherwise guarantee: standard output arrives whole through a pipe, however
much there is, and the exit status and the error line are the command's.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from harness.server import AnvilServer
from harness.server import anvil_server as running_server

anvil_server = running_server

CONSOLE_SCRIPT = Path(sys.executable).with_name("anvilfs")
FIRST_LINE = "x" * 300_000  # the sim agent's answer quotes it: more than a pipe or stdout's buffer holds


def _commands(srv: AnvilServer, *args: str) -> list[list[str]]:
    return [[str(CONSOLE_SCRIPT), "-a", srv.address, *args], [sys.executable, "-m", "anvilfs", "-a", srv.address, *args]]


def _run(argv: list[str], input: str = "") -> subprocess.CompletedProcess[bytes]:
    # buffered standard output, as a user's shell gives it (this machine's environment may set PYTHONUNBUFFERED)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    return subprocess.run(argv, input=input.encode(), capture_output=True, timeout=30, env=env)


def test_a_large_answer_arrives_whole_through_a_pipe(anvil_server: AnvilServer) -> None:
    srv = anvil_server
    assert CONSOLE_SCRIPT.exists(), f"no console script beside {sys.executable}: run scripts/venv test"
    made = _run([str(CONSOLE_SCRIPT), "-a", srv.address, "write", "ctl", "new sim /tmp name=big"])
    assert made.returncode == 0, made.stderr
    sent = _run([str(CONSOLE_SCRIPT), "-a", srv.address, "write", "big/in"], input=FIRST_LINE + "\n")
    assert sent.returncode == 0, sent.stderr
    waited = _run([str(CONSOLE_SCRIPT), "-a", srv.address, "read", "big/wait"])
    assert (waited.returncode, waited.stdout) == (0, b"await\n"), waited
    for argv in _commands(srv, "read", "big/out"):
        r = _run(argv)
        assert (r.returncode, r.stderr) == (0, b""), (argv, r.returncode, r.stderr)
        assert FIRST_LINE.encode() in r.stdout and r.stdout.endswith(b"\n"), (argv, len(r.stdout))
        assert r.stdout.startswith(b"[simulated] big, turn 1: "), r.stdout[:80]


def test_a_failing_command_keeps_its_status_and_its_error_line(anvil_server: AnvilServer) -> None:
    for argv in _commands(anvil_server, "read", "nosuch"):
        r = _run(argv)
        assert r.returncode == 1, (argv, r)
        assert r.stdout == b"" and r.stderr.decode().startswith("anvilfs: nosuch: "), (argv, r.stderr)


def test_printed_output_arrives_though_the_process_ends_without_teardown(anvil_server: AnvilServer) -> None:
    # ls and stat print through sys.stdout's text buffer (read writes and flushes each chunk itself)
    srv = anvil_server
    for i in range(20):
        assert _run([str(CONSOLE_SCRIPT), "-a", srv.address, "write", "ctl", f"new sim /tmp name=s{i:02d}"]).returncode == 0
    for argv in _commands(srv, "ls", "-l", "/"):
        r = _run(argv)
        assert (r.returncode, r.stderr) == (0, b""), (argv, r)
        names = [line.split()[-1] for line in r.stdout.decode().splitlines()]
        assert {f"s{i:02d}" for i in range(20)} <= set(names), (argv, names)
    for argv in _commands(srv, "stat", "s07/status"):
        r = _run(argv)
        assert r.returncode == 0 and r.stdout.startswith(b"'status' "), (argv, r)


def test_a_profiled_client_still_writes_its_profile(anvil_server: AnvilServer) -> None:
    # under a profiler or tracer run() exits the usual way, so that the report written at exit is not lost
    r = _run([sys.executable, "-m", "cProfile", "-m", "anvilfs", "-a", anvil_server.address, "ls", "/"])
    assert r.returncode == 0 and b"function calls" in r.stdout and b"ctl" in r.stdout, r

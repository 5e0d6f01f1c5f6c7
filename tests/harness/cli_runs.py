"""Client commands run as a shell user types them (``python -m anvilfs ...``), for the CLI tests.

    ok(srv, "write", "agent/ctl", "new sim /tmp name=bot1")   # must succeed: its stdout
    fails(srv, "read", "agent/nope")                          # must fail: its stderr
    alone("--version")                                        # no server involved
"""

from __future__ import annotations

import os
import subprocess
import sys

from .server import AnvilServer


def ok(srv: AnvilServer, *args: str, input: str | None = None) -> str:
    """Run a client command that must succeed; return its stdout."""
    r = srv.run_cli(*args, input=input)
    assert r.returncode == 0, f"anvilfs {' '.join(args)} -> {r.returncode}\n{r.stderr}\n{srv.trace_tail()}"
    assert r.stderr == "", r.stderr
    return r.stdout


def fails(srv: AnvilServer, *args: str, input: str | None = None) -> str:
    """Run a client command that must fail; return its stderr."""
    r = srv.run_cli(*args, input=input)
    assert r.returncode != 0, f"anvilfs {' '.join(args)} succeeded:\n{r.stdout}\n{srv.trace_tail()}"
    assert r.stdout == "", r.stdout
    return r.stderr


def list_rows(srv: AnvilServer) -> dict[str, list[str]]:
    return {line.split()[0]: line.split() for line in ok(srv, "read", "agent/list").splitlines()}


def alone(*args: str, env: dict[str, str] | None = None, input: str = "") -> subprocess.CompletedProcess[str]:
    """``python -m anvilfs ARGS`` with no server involved."""
    return subprocess.run([sys.executable, "-m", "anvilfs", *args], input=input, capture_output=True, text=True,
                          env=os.environ | {"COLUMNS": "100"} | (env or {}), timeout=30)

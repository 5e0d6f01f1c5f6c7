"""Client commands run as a shell user types them (``python -m anvilfs ...``), for the CLI tests.

    ok(srv, "write", "agent/ctl", "new sim /tmp name=bot1")   # must succeed: its stdout
    fails(srv, "read", "agent/nope")                          # must fail: its stderr
    alone("--version")                                        # no server involved
    stamp(srv, "bot1/status")                                 # (qid.version, mtime)
"""

from __future__ import annotations

import os
import re
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


_STAT = re.compile(r" q \([0-9a-f]{16} (\d+) [0-9a-f]{2}\) .* mt (\d+) ")


def stamp(srv: AnvilServer, path: str) -> tuple[int, int]:
    """(qid.version, mtime) of agent/PATH as `anvilfs stat` prints them."""
    r = srv.run_cli("stat", f"agent/{path}")
    assert r.returncode == 0, r.stderr
    found = _STAT.search(r.stdout)
    assert found, r.stdout
    return int(found.group(1)), int(found.group(2))


def list_rows(srv: AnvilServer) -> dict[str, list[str]]:
    return {line.split()[0]: line.split() for line in ok(srv, "read", "agent/list").splitlines()}


def alone(*args: str, env: dict[str, str] | None = None, input: str = "") -> subprocess.CompletedProcess[str]:
    """``python -m anvilfs ARGS`` with no server involved."""
    return subprocess.run([sys.executable, "-m", "anvilfs", *args], input=input, capture_output=True, text=True,
                          env=os.environ | {"COLUMNS": "100"} | (env or {}), timeout=30)

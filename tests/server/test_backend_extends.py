"""A backend that extends a built-in, run by a real `anvilfs serve --config` (docs/backends.md).

`claude` on the server's PATH is tests/fakes/fake_agent.py: it takes the
built-in claude's print-mode arguments, keeps conversations by id as claude
does (`--session-id` refuses an id in use, `--resume` one never started) and
says it is fake. The table gives only `env` and `timeout`: the argv and
resume_argv that run are the built-in claude's.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from harness.cli_runs import ok
from harness.fakes import FAKE_AGENT
from harness.server import AnvilServer, anvil_server

CONFIG = """\
[backends.claude-fake]
extends = "claude"
timeout = 1
env = {{ FAKE_AGENT_STATE = "{state}" }}
"""


def fake_claude(directory: Path) -> Path:
    """A directory whose `claude` is the fake agent."""
    bin_dir = directory / "bin"
    bin_dir.mkdir()
    program = bin_dir / "claude"
    program.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE_AGENT}" "$@"\n')
    program.chmod(0o755)
    return bin_dir


def turn(srv: AnvilServer, name: str, prompt: str) -> str:
    """Send a prompt; the state word the turn ended in."""
    ok(srv, "write", f"agent/{name}/in", prompt)
    return ok(srv, "read", f"agent/{name}/wait")


def test_a_session_runs_on_a_backend_that_extends_the_builtin_claude(tmp_path: Path):
    state = tmp_path / "fake-state"
    config = tmp_path / "config.toml"
    config.write_text(CONFIG.format(state=state))
    path = f"{fake_claude(tmp_path)}:{os.environ['PATH']}"
    with anvil_server(extra_args=["--config", str(config)], env={"PATH": path}) as srv:
        assert "claude-fake command ready\n" in ok(srv, "read", "agent/backends")
        ok(srv, "write", "agent/ctl", f"new claude-fake {tmp_path} name=a")
        assert ok(srv, "read", "agent/a/wait") == "idle\n"

        assert turn(srv, "a", "fake:env") == "await\n", ok(srv, "read", "agent/a/log")
        out = ok(srv, "read", "agent/a/out")
        assert f"FAKE_AGENT_STATE={state}\n" in out  # the table's env
        first = re.search(r"conversation (\S+) turn 1:", out)  # the built-in's argv: --session-id ID
        assert first, out

        assert turn(srv, "a", "again") == "await\n", ok(srv, "read", "agent/a/log")
        # the built-in's resume_argv: --resume ID (--session-id again would be refused: "already in use")
        assert f"conversation {first.group(1)} turn 2:" in ok(srv, "read", "agent/a/out")

        assert turn(srv, "a", "fake:hang") == "error\n"  # the table's timeout ends a turn that never would
        assert ok(srv, "read", "agent/a/status") == "error timed out after 1 s\n"

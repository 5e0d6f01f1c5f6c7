"""`pid` and a bead's `context` move (qid.version, mtime) when their content does, and only then.

Both change with no change of what their stamps followed before: an agent's
pid is set by its backend (a command agent's process begins after its
turn's record), and a bead's context is its convoy's context too. Through
`anvilfs stat` against a real server, as tests/wire/test_stamps.py does for
status and out.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from anvilfs.ninep import Dialect
from anvilfs.ninep import consts as c
from harness.cli_runs import ok, stamp
from harness.fakes import FAKE_AGENT
from harness.server import AnvilServer, anvil_server

# one turn at a time across the backend's sessions: a second session's turn begins and waits, with no process
CONFIG = """\
[backends.fake]
kind = "command"
argv = ["{python}", "{fake}", "-p"]
one_at_a_time = true
env = {{ FAKE_AGENT_GATE = "{gate}" }}
"""


class Follower:
    """A stream file (`events`, a session's `stream`) opened now, so that it sees what comes from here on."""

    def __init__(self, srv: AnvilServer, path: str):
        self.path, self.seen = path, ""
        self.client = srv.connect(dialect=Dialect.P2000U)
        self.fid = self.client.open(path, c.OREAD)

    def until(self, text: str) -> None:
        """Read on until `text` shows, then close; each read blocks until more comes (the socket's timeout
        fails one that never ends)."""
        with self.client:
            while text not in self.seen:
                chunk = self.client.read_chunk(self.fid, 0).decode()
                assert chunk, f"{self.path} ended without {text!r}:\n{self.seen}"
                self.seen += chunk


def test_pid_moves_when_the_agents_process_begins_and_ends_and_not_otherwise(tmp_path: Path):
    gate = tmp_path / "gate"  # the fake's slow answer waits after its first piece until this file exists
    config = tmp_path / "config.toml"
    config.write_text(CONFIG.format(python=sys.executable, fake=FAKE_AGENT, gate=gate))
    with anvil_server(extra_args=["--config", str(config)]) as srv:
        for name in ("a", "b"):
            ok(srv, "write", "agent/ctl", f"new fake {tmp_path} name={name}")
            assert ok(srv, "read", f"agent/{name}/wait") == "idle\n"
        assert stamp(srv, "b/pid") == stamp(srv, "b/pid")  # nothing changed: nothing moved

        ok(srv, "write", "agent/a/in", "fake:slow")
        Follower(srv, "a/stream").until("[fake agent] conversation")  # a's process runs, and holds the backend
        events = Follower(srv, "events")
        ok(srv, "write", "agent/b/in", "fake:hang")
        events.until(" b running\n")  # b's turn began; its process waits for a's turn to end
        waiting, log = stamp(srv, "b/pid"), stamp(srv, "b/log")
        assert ok(srv, "read", "agent/b/pid") == ""

        t0 = int(time.time())
        gate.touch()
        assert ok(srv, "read", "agent/a/wait") == "await\n"
        Follower(srv, "b/stream").until("hanging until killed")  # b's process runs
        running = stamp(srv, "b/pid")
        assert ok(srv, "read", "agent/b/pid").strip().isdigit()
        assert running[0] > waiting[0] and running[1] >= t0, (waiting, running)
        assert stamp(srv, "b/log") == log  # the session did not change: pid moved by itself
        assert ok(srv, "read", "agent/b/status") == "running\n"

        ok(srv, "write", "agent/b/ctl", "kill")
        assert ok(srv, "read", "agent/b/wait") == "stopped\n"
        stopped = stamp(srv, "b/pid")
        assert ok(srv, "read", "agent/b/pid") == ""
        assert stopped[0] > running[0], (running, stopped)
        assert stamp(srv, "b/pid") == stopped


def created(srv: AnvilServer, ctl: str, command: str) -> str:
    """The id a `new` written to a ctl file gives (read back on the same open)."""
    with srv.connect(dialect=Dialect.P2000U) as client:
        fid = client.open(ctl, c.ORDWR)
        client.write_chunk(fid, 0, command.encode())
        return client.read_chunk(fid, 0).decode().strip()


def test_a_beads_context_moves_with_its_convoys_context(anvil_server: AnvilServer):
    srv = anvil_server
    convoy = created(srv, "convoys/ctl", "new Auth 'Add OAuth'")
    other = created(srv, "convoys/ctl", "new Docs 'Write them'")
    bead = created(srv, "beads/ctl", f"new 'Implement OAuth' developer 'Use the library' convoy={convoy}")
    before, convoys_own = stamp(srv, f"beads/{bead}/context"), stamp(srv, f"convoys/{convoy}/context")
    assert stamp(srv, f"beads/{bead}/context") == before  # nothing changed: nothing moved

    ok(srv, "write", f"agent/convoys/{other}/context", "Another convoy's context.")
    assert stamp(srv, f"beads/{bead}/context") == before  # not its convoy: its context is the same

    ok(srv, "write", f"agent/convoys/{convoy}/context", "The app is a Flask service.")
    assert ok(srv, "read", f"agent/beads/{bead}/context") == "The app is a Flask service.\nUse the library\n"
    after = stamp(srv, f"beads/{bead}/context")
    assert after[0] != before[0] and after[1] >= before[1], (before, after)
    moved = stamp(srv, f"convoys/{convoy}/context")  # the convoy's own file too
    assert moved[0] != convoys_own[0] and moved[1] >= convoys_own[1], (convoys_own, moved)

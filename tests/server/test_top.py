"""`anvilfs top` against a real server: the table once, and a table that follows `events` (in a pipe:
plain text; on a pseudo-terminal: redrawn in place), ended by Ctrl-C with 130 or by the server's end."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable

import pytest

from harness.server import REPO_ROOT, AnvilServer

WAIT = 30  # seconds: the deadline of every wait here


class Output:
    """What a running process writes to one file descriptor, read with deadlines."""

    def __init__(self, fd: int):
        self.fd = fd
        self.text = ""

    def until(self, done: Callable[[str], bool], what: str, timeout: float = WAIT) -> str:
        deadline = time.monotonic() + timeout
        while not done(self.text):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                raise AssertionError(f"timed out after {timeout}s waiting for {what}; output so far:\n{self.text}")
            try:
                data = os.read(self.fd, 65536)
            except OSError:  # a pty's master reads EIO once the child has gone
                data = b""
            if not data:
                raise AssertionError(f"output ended while waiting for {what}:\n{self.text}")
            self.text += data.decode(errors="replace")
        return self.text


def start(srv: AnvilServer, *args: str, stdout=subprocess.PIPE) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "anvilfs", *args], stdin=subprocess.DEVNULL, stdout=stdout,
                            stderr=subprocess.PIPE, env=srv.env(), cwd=REPO_ROOT)


def interrupt(proc: subprocess.Popen) -> tuple[int, str]:
    """Ctrl-C, as a terminal sends it: the exit status and what went to stderr."""
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=WAIT)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError("anvilfs top did not end on SIGINT") from None
    return proc.returncode, err.decode(errors="replace")


def cli(srv: AnvilServer, *args: str, input: str = "") -> str:
    r = srv.run_cli(*args, input=input)
    assert r.returncode == 0, (args, r.stderr)
    return r.stdout


NOTHING_SPENT = "total spent: nothing yet (no turn counted)\n"


def last_table(text: str) -> list[str]:
    return text.rstrip("\n").split("\n\n")[-1].splitlines()


def test_once_prints_the_table_and_exits(anvil_server: AnvilServer) -> None:
    srv = anvil_server
    roles = srv.base / "xdg-config" / "anvilfs" / "roles"  # the server's configuration directory
    roles.mkdir(parents=True)
    (roles / "reviewer.md").write_text("You review code.\n")
    assert cli(srv, "top", "--once") == "NAME  STATUS  ROLE  QUEUE  SPENT  LAST EVENT\n" + NOTHING_SPENT
    cli(srv, "write", "agent/ctl", "new sim /tmp name=bot1 role=reviewer")
    cli(srv, "write", "agent/ctl", "new sim /tmp name=bot2")
    cli(srv, "write", "agent/bot2/in", input="sim:hang\n")  # running until interrupted
    stream = start(srv, "read", "agent/bot2/stream")  # the turn running, or else the next to start
    try:
        Output(stream.stdout.fileno()).until(lambda t: "hanging until interrupted" in t, "bot2's turn to run")
        cli(srv, "write", "agent/bot2/in", input="next\n")  # queued behind it
    finally:
        stream.kill()
        stream.communicate(timeout=WAIT)
    assert cli(srv, "top", "--once").splitlines() == [
        "NAME  STATUS   ROLE      QUEUE  SPENT  LAST EVENT",
        "bot1  idle     reviewer  0      -      -",
        "bot2  running  -         1      -      -",
        NOTHING_SPENT.strip(),
    ]


def test_once_shows_what_each_session_and_each_open_convoy_spent_and_the_total(anvil_server: AnvilServer) -> None:
    srv = anvil_server
    convoy = cli(srv, "rdwr", "agent/convoys/ctl", input="new 'ship it' 'shipped'\n").split()[0]
    done = cli(srv, "rdwr", "agent/convoys/ctl", input="new 'old one' 'done'\n").split()[0]
    cli(srv, "write", f"agent/convoys/{done}/ctl", "abandon")  # a finished convoy is not shown
    bead = cli(srv, "rdwr", "agent/beads/ctl", input=f"new one dev 'do it' convoy={convoy}\n").split()[0]
    for name, prompt in (("priced", "sim:usage=100,20,1.5"), ("tokens", "sim:usage=1200,34"),
                         ("both", "sim:usage=1,1,0.25"), ("gone", "sim:usage=40,4"), ("idle", "")):
        cli(srv, "write", "agent/ctl", f"new sim /tmp name={name}")
        if name == "priced":
            cli(srv, "write", f"agent/beads/{bead}/ctl", "claim priced")
        if prompt:
            cli(srv, "write", f"agent/{name}/in", input=f"{prompt}\n")
            assert cli(srv, "read", f"agent/{name}/wait").startswith("await")
    cli(srv, "write", "agent/both/in", input="no figures reported\n")
    assert cli(srv, "read", "agent/both/wait").startswith("await")
    cli(srv, "write", "agent/gone/ctl", "stop")
    cli(srv, "write", "agent/gone/ctl", "remove")
    walks = srv.trace().count("wnames [usage]")
    assert cli(srv, "top", "--once").splitlines() == [
        "NAME    STATUS  ROLE  QUEUE  SPENT     LAST EVENT",
        "priced  await   -     0      $1.50     -",
        "tokens  await   -     0      1.2k tok  -",
        "both    await   -     0      $0.25+    -",
        "idle    idle    -     0      -         -",
        "CONVOY       STATUS       DONE  SPENT  TITLE",
        f"{convoy}  in_progress  0/1   $1.50  ship it",
        "total spent $1.75+ in 5 turns, 1.4k tok (removed sessions: 44 tok)",
    ]
    assert srv.trace().count("wnames [usage]") == walks + 1, "agent/usage is read once, not once per session"


def test_following_redraws_at_events_as_plain_text_until_ctrl_c(anvil_server: AnvilServer) -> None:
    srv = anvil_server
    cli(srv, "write", "agent/ctl", "new sim /tmp name=bot1")
    top = start(srv, "top")
    try:
        out = Output(top.stdout.fileno())
        out.until(lambda t: "bot1  idle" in t, "the first table")
        cli(srv, "write", "agent/ctl", "new sim /tmp name=bot2")
        out.until(lambda t: any(line.startswith("bot2 ") for line in last_table(t)), "a table with bot2")
        cli(srv, "write", "agent/bot1/in", input="hello\n")
        out.until(lambda t: any(line.startswith("bot1  await") and line.endswith(" await simulated")
                                for line in last_table(t)), "bot1 in await, with its last event")
        status, err = interrupt(top)
    finally:
        if top.poll() is None:
            top.kill()
    assert (status, err) == (130, ""), (status, err)
    assert "\x1b" not in out.text, repr(out.text)  # no escape codes in a pipe
    assert out.text.startswith("NAME  STATUS  ROLE  QUEUE  SPENT  LAST EVENT\nbot1  idle    -     0      -      -\n"
                               f"{NOTHING_SPENT}\n"), out.text
    tables = out.text.rstrip("\n").split("\n\n")
    assert len(tables) == len(set(tables)), out.text  # a table is printed only when it changed


def test_on_a_terminal_the_table_is_redrawn_in_place(anvil_server: AnvilServer) -> None:
    srv = anvil_server
    cli(srv, "write", "agent/ctl", "new sim /tmp name=bot1")
    master, slave = pty.openpty()
    try:
        top = start(srv, "top", stdout=slave)
        os.close(slave)
        slave = -1
        out = Output(master)
        out.until(lambda t: "bot1" in t, "the first table")
        cli(srv, "write", "agent/bot1/in", input="hello\n")
        out.until(lambda t: t.count("\x1b[H\x1b[2J") >= 2 and "await simulated" in t.rsplit("\x1b[2J", 1)[-1],
                  "a second screen, with bot1's await")
        status, err = interrupt(top)
    finally:
        os.close(master)
        if slave >= 0:
            os.close(slave)
    assert (status, err) == (130, ""), (status, err)
    screen = out.text.rsplit("\x1b[H\x1b[2J", 1)[-1].replace("\r\n", "\n")
    assert screen.startswith("anvilfs top  1 sessions  ") and "\nNAME  STATUS  ROLE  QUEUE  SPENT" in screen, screen


def test_the_end_of_the_server_ends_top_with_a_message(anvil_server: AnvilServer) -> None:
    srv = anvil_server
    top = start(srv, "top")
    try:
        Output(top.stdout.fileno()).until(lambda t: "NAME" in t, "the first table")
        srv.stop()
        _, err = top.communicate(timeout=WAIT)
    finally:
        if top.poll() is None:
            top.kill()
    assert top.returncode == 1, (top.returncode, err)
    lines = err.decode().splitlines()  # "(Broken pipe)" or not, as the two connections saw it first
    assert len(lines) == 1 and lines[0].startswith("anvilfs: agent/: the server closed the connection"), err


@pytest.mark.parametrize("bad", ["--bogus", "x"])
def test_top_refuses_what_it_does_not_take(anvil_server: AnvilServer, bad: str) -> None:
    r = anvil_server.run_cli("top", bad)
    assert r.returncode == 2 and f"unrecognized arguments: {bad}" in r.stderr, r.stderr
    assert "--once" in anvil_server.run_cli("top", "--help").stdout

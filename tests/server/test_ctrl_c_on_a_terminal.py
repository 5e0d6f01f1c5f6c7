"""Ctrl-C on a real terminal (a pty) while a script runs: what happens to its `anvilfs notify &`.

The clients take SIGINT back when started with it ignored (cli.py,
_take_sigint), so a script's background `anvilfs notify &`, which shares
the script's process group, ends with the script's foreground command.
What keeps it (docs/using.md says so): `setsid`, or job control (`set -m`),
both of which put it in a process group of its own, out of the terminal's
reach. A subshell's `trap '' INT` does not (that is what anvilfs undoes),
nor does `nohup` (SIGHUP only).

Each case runs bash on a pty, waits for notify to watch events, and
types Ctrl-C (the pty's line discipline sends SIGINT to the foreground
process group, as a terminal does). A notify that ended is seen to end; one
that lives proves it by telling a message sent after the Ctrl-C.
"""

from __future__ import annotations

import os
import pty
import select
import shlex
import signal
import sys
import time
from pathlib import Path

import pytest

from anvilfs.ninep import Dialect
from harness.mailbox import mail
from harness.server import anvil_server

pytestmark = pytest.mark.needs("bash", "setsid")  # the terminal's shell, and the case that detaches notify

WAIT = 20  # seconds: no step here comes near it
NOTIFY = f"{shlex.quote(sys.executable)} -m anvilfs notify"
CASES = {  # the script's line that starts notify -> whether it outlives the Ctrl-C
    "plain &": (f'{NOTIFY} "$TOLD" 2>"$ERR" &', False),
    "nohup": (f'nohup {NOTIFY} "$TOLD" 2>"$ERR" &', False),  # it ignores SIGHUP alone
    "trap '' INT in a subshell": (f'( trap \'\' INT; exec {NOTIFY} "$TOLD" 2>"$ERR" ) &', False),
    "setsid": (f'setsid {NOTIFY} "$TOLD" 2>"$ERR" &', True),
    "set -m": (f'set -m; {NOTIFY} "$TOLD" 2>"$ERR" & set +m', True),
}


@pytest.fixture(scope="module")
def srv():
    with anvil_server(trace=False) as server:
        with server.connect(dialect=Dialect.P2000U) as client:
            client.write_file("ctl", b"new sim /tmp name=dev\n")
        yield server


def until(predicate, what: str, pump: int | None = None) -> None:
    """Poll `predicate` until true (draining the pty `pump` meanwhile), failing after WAIT seconds."""
    deadline = time.monotonic() + WAIT
    while not predicate():
        assert time.monotonic() < deadline, f"timed out after {WAIT}s waiting for {what}"
        if pump is not None and select.select([pump], [], [], 0.05)[0]:
            try:
                os.read(pump, 4096)
            except OSError:  # EIO: the pty's other side is closed
                pump = None
        else:
            time.sleep(0.05)  # poll interval, bounded by the deadline


def ended(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] in "ZX"  # an orphan not reaped yet has ended too
    except (FileNotFoundError, ProcessLookupError):  # gone; ESRCH when it is reaped between the open and the read
        return True


def script(tmp: Path, line: str) -> Path:
    told = tmp / "told.sh"
    told.write_text(f'#!/bin/sh\necho "$3" >> {shlex.quote(str(tmp / "told"))}\n')
    told.chmod(0o755)
    path = tmp / "script.sh"
    path.write_text(f"cd {shlex.quote(str(tmp))}\nTOLD={shlex.quote(str(told))}\nERR={shlex.quote(str(tmp / 'err'))}\n{line}\n"
                    f"echo $$ $! > {shlex.quote(str(tmp / 'pids'))}\nsleep 300\n")
    return path


@pytest.mark.parametrize("case", list(CASES))
def test_ctrl_c_on_a_scripts_foreground_command_and_its_background_notify(srv, tmp_path, case):
    line, lives = CASES[case]
    path, pids = script(tmp_path, line), tmp_path / "pids"
    # the terminal's own shell runs the script, as a user's does: it outlives the Ctrl-C, so nothing
    # gets the SIGHUP of a terminal whose session ends, and what ends, ends of the SIGINT
    shell, tty = pty.fork()
    if shell == 0:
        os.execve("/bin/bash", ["bash", "--norc", "--noprofile", "-i"], srv.env() | {"PS1": "$ "})
    notify = None
    try:
        os.write(tty, f"bash {shlex.quote(str(path))}\n".encode())
        # both pids: the shell's `echo > pids` makes the file (empty) before it writes the line
        until(lambda: len(_read(pids).split()) == 2 and b"watching" in _read(tmp_path / "err"), "notify to watch", tty)
        script_pid, notify = map(int, pids.read_text().split())
        os.write(tty, b"\x03")  # Ctrl-C, typed
        until(lambda: ended(script_pid), "the script to end", tty)
        if lives:
            subject = f"sent after the Ctrl-C ({case})"  # a line of its own: not one told as still waiting
            with srv.connect(uname="dev", dialect=Dialect.P2000U) as client:
                mail(client, "dev", "human", subject, kind="REVIEW_REQUEST")
            told = tmp_path / "told"
            until(lambda: subject in _read(told).decode().splitlines(), "notify to tell the message", tty)
            assert not ended(notify)
        else:
            until(lambda: ended(notify), "notify to end of the Ctrl-C", tty)
    finally:
        if notify is not None and not ended(notify):
            os.kill(notify, signal.SIGTERM)
            until(lambda: ended(notify), "notify to end of SIGTERM")
        os.kill(shell, signal.SIGKILL)
        os.waitpid(shell, 0)
        os.close(tty)


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""

"""Linux v9fs sizes its reads from stat (issue 24): `out` read whole in each cache mode, after turns.

With cache=loose the kernel reads a file through its page cache, as far as
the size its stat said, and so read nothing while every length was 0; with
cache=none and mmap `cat` reads to EOF, but `stat` said 0 all the same.
Here the guest reads `out` after a first turn, then after a later, longer
answer, and `stat -c %s` must agree with what it read each time.

Turns are driven from the host, with the sim backend: in loose mode the
guest's writes wait in its page cache, and `in` (write-only) cannot even be
opened for writing (the kernel opens a second fid O_RDWR to write back
through). Turn 2 hangs (sim:hang) with a longer prompt queued behind it, so
the session stays busy until the host interrupts it; the guest, once it has
read the first answer, asks for that by making a session `go` (a ctl write
with O_DIRECT, which goes to the server at once in every mode); the host,
following `events`, sees it and interrupts; the guest's read of `wait`
(O_DIRECT too, as loose would give the cached size 0) ends after turn 3.

In loose mode the kernel never asks again about a file it has cached: the
second read gives the old answer unless the caches are dropped, which the
snippet does there. That is the kernel's choice ("loose": no consistency),
not the server's: the length it is given when it asks is the whole answer.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from pathlib import Path

import pytest

from anvilfs.ninep import consts as c
from harness.server import AnvilServer, start_server
from harness.vm import ensure_assets, run_in_guest, sections

pytestmark = pytest.mark.vm

SNIPPET = r"""
step() { echo "@@ $1"; }
step out1;  cat vm/out;                                               echo "rc=$?"
step size1; stat -c %s vm/out;                                        echo "rc=$?"
step go;    echo 'new sim /tmp name=go' | dd of=ctl oflag=direct conv=notrunc 2>/dev/null; echo "rc=$?"
step wait;  dd if=vm/wait iflag=direct 2>/dev/null;                   echo "rc=$?"
DROP
step out2;  cat vm/out;                                               echo "rc=$?"
step size2; stat -c %s vm/out;                                        echo "rc=$?"
step end
"""
DROP = 'step drop; sync; echo 3 > /proc/sys/vm/drop_caches; echo "rc=$?"'
LONG = "a third prompt, whose first line the answer quotes, so that this answer is the longer one\n"
CASES = [("9p2000.L", "cache=none"), ("9p2000.L", "cache=mmap"), ("9p2000.L", "cache=loose"), ("9p2000.u", "cache=loose")]
DEADLINE = 120  # seconds a host-side read may block (the guest's own timeout is shorter)


@pytest.fixture(scope="session")
def guest_assets() -> None:
    ensure_assets()


def _turns_before_the_guest(srv: AnvilServer) -> str:
    """Turn 1 done, turn 2 hanging, turn 3 queued; the answer of turn 1."""
    with srv.connect("host", timeout=DEADLINE) as host:
        host.write_file("ctl", b"new sim /tmp name=vm\n")
        host.write_file("vm/in", b"first\n")
        assert host.read_file("vm/wait") == b"await\n"
        stream = host.open("vm/stream", c.OREAD)  # the next turn's output: its first piece says it began
        host.write_file("vm/in", b"sim:hang\n")
        assert b"hanging until interrupted" in host.read_chunk(stream, 0)
        host.write_file("vm/in", LONG.encode())
        return host.read_file("vm/out").decode()


def _interrupt_on_go(srv: AnvilServer, failed: list[BaseException]) -> threading.Thread:
    """Follow `events` from now on; once the guest made `go`, interrupt the hanging turn."""
    host = srv.connect("host", timeout=DEADLINE)
    events = host.open("events", c.OREAD)

    def follow() -> None:
        try:
            seen = ""
            while " go " not in seen:
                seen += host.read_chunk(events, 0).decode()  # blocks for the next lines (socket deadline)
            host.write_file("vm/ctl", b"interrupt\n")
        except BaseException as exc:  # the guest then times out: the test reports this instead
            failed.append(exc)
        finally:
            host.close()

    thread = threading.Thread(target=follow, name="interrupt-on-go", daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize(("version", "cache"), CASES, ids=[f"{v}-{o}" for v, o in CASES])
def test_out_is_read_whole_after_turns(guest_assets: None, version: str, cache: str) -> None:
    base = Path(tempfile.mkdtemp(prefix="anvlen.", dir="/tmp"))
    srv = start_server(base)
    try:
        first = _turns_before_the_guest(srv)
        failed: list[BaseException] = []
        follower = _interrupt_on_go(srv, failed)
        snippet = SNIPPET.replace("DROP", DROP if cache == "cache=loose" else "")
        r = run_in_guest(srv.socket, snippet, version=version, opts=cache, timeout=90)
        follower.join(DEADLINE)
        why = f"{r}\nhost: {failed}\n{srv.trace_tail()}"
        assert not failed and r.mounted, why
        last = srv.run_cli("read", "agent/vm/out").stdout
        assert "turn 3" in last and LONG.strip() in last and len(last) > len(first), why
        s = sections(r.output)
        assert s["out1"] == (first.splitlines(), 0), why  # loose read nothing while the length was 0
        assert s["size1"] == ([str(len(first.encode()))], 0), why
        assert s["wait"] == (["await"], 0), why
        assert s["out2"] == (last.splitlines(), 0), why  # the longer answer, whole
        assert s["size2"] == ([str(len(last.encode()))], 0), why
    finally:
        srv.stop()
        shutil.rmtree(base, ignore_errors=True)

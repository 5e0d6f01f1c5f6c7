"""The server's memory under the amplification attacks of issue 6 (items 2-4), by hand.

    .venv/bin/python benchmarks/memory.py                 # this worktree's server
    .venv/bin/python benchmarks/memory.py --code /work/main   # another checkout's server, to compare

Each attack runs against a fresh `python -m anvilfs serve` (from --code), with
one sim session `b1` whose `log` is about 1 MiB (one prompt of 1,000,000
bytes and its answer). The server's RSS is read from /proc/PID/status:
VmRSS just before the attack, VmHWM (the peak since start) after it.

  a  400 Treads of 1 MiB at offset 0 of `log`, in one send from one connection;
     meanwhile a second connection's Tstat is timed
  b  300 fids on one connection, each open on `log` and read once (1 MiB)
  c  20,000 reads of `events` in one connection, which all block (past the
     server's limit they are refused; each refusal is an error event, which
     answers the reads blocked at the time: all three are counted)

It prints numbers and asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from sessions import memory  # benchmarks/sessions.py: VmRSS and VmHWM in MiB

from anvilfs.client import Client
from anvilfs.ninep import Dialect
from anvilfs.ninep import messages as m

MSIZE = 1 << 20
P2000 = Dialect.P2000


def connect(path: Path) -> Client:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(120)
    sock.connect(str(path))
    return Client(sock, msize=MSIZE, uname="bench")


def send_at_once(client: Client, msgs) -> None:
    """Many requests in one send: one batch for the server (their tags are the client core's, so receive() knows them)."""
    client.sock.sendall(b"".join(client.protocol.request(msg)[1] for msg in msgs))


class Server:
    def __init__(self, code: Path):
        self.base = Path(tempfile.mkdtemp(prefix="anvil-mem."))
        env = os.environ | {"PYTHONPATH": str(code), "XDG_CONFIG_HOME": str(self.base / "xdg")}
        self.socket = self.base / "ns" / "agent"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "anvilfs", "serve", "--namespace", str(self.base / "ns"), "--state", str(self.base / "st")],
            cwd=code, env=env, stdout=subprocess.DEVNULL, stderr=open(self.base / "server.log", "wb"))
        deadline = time.monotonic() + 30
        while not self.socket.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"server did not start: {(self.base / 'server.log').read_text()}")
            time.sleep(0.05)

    def make_log(self) -> None:
        """Session b1 with a log of about 1 MiB."""
        with connect(self.socket) as c:
            c.write_chunk(c.open("ctl", 1), 0, b"new sim /tmp name=b1\n")
            prompt = c.open("b1/in", 1)
            c.write_all(prompt, b"p" * 1_000_000)
            c.clunk(prompt)
            c.read_chunk(c.open("b1/wait", 0), 0, 100)  # blocks until the turn ends

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


def attack_reads(srv: Server) -> str:
    c, other = connect(srv.socket), connect(srv.socket)
    log = c.open("b1/log", 0)
    send_at_once(c, (m.Tread(tag=10 + i, fid=log, offset=0, count=MSIZE) for i in range(400)))
    time.sleep(0.1)  # so the server is at work on the batch when the other client asks
    start = time.monotonic()
    other.stat("list")
    waited = time.monotonic() - start
    got = sum(len(c.receive().data) for _ in range(400))
    c.close(), other.close()
    return f"{got >> 20} MiB read back; another client's Tstat waited {waited * 1000:.0f} ms"


def attack_fids(srv: Server) -> str:
    with connect(srv.socket) as c:
        for _ in range(300):
            c.read_chunk(c.open("b1/log", 0), 0, MSIZE)
    return "300 fids open, each read once"


def attack_blocked(srv: Server) -> str:
    c = connect(srv.socket)
    events = c.open("events", 0)
    counts = {"refused": 0, "answered": 0}

    def drain() -> None:  # replies (refusals) must be read while the requests are sent
        while True:
            reply = c.receive()
            if isinstance(reply, m.Rstat):
                return
            counts["refused"] += isinstance(reply, m.Rerror)
            counts["answered"] += isinstance(reply, m.Rread)  # each refusal is an event, which wakes readers

    reader = threading.Thread(target=drain)
    reader.start()
    send_at_once(c, (m.Tread(tag=i, fid=events, offset=0, count=8192) for i in range(1, 20_001)))
    c.send(m.Tstat(tag=30_000, fid=c.root))  # answered once all the reads before it were handled
    reader.join(120)
    c.close()
    still = 20_000 - counts["refused"] - counts["answered"]
    return f"{still} still blocked, {counts['answered']} answered (by error events), {counts['refused']} refused"


ATTACKS = {"a": attack_reads, "b": attack_fids, "c": attack_blocked}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--code", type=Path, default=Path(__file__).resolve().parents[1],
                        help="the checkout whose anvilfs is served (default: this one)")
    parser.add_argument("--attacks", default="abc")
    args = parser.parse_args()
    print(f"server code: {args.code}")
    print(f"{'attack':8} {'RSS before':>11} {'peak':>8} {'growth':>8}  notes")
    for name in args.attacks:
        srv = Server(args.code)
        try:
            srv.make_log()
            before = memory(srv.proc.pid)["VmRSS"]
            note = ATTACKS[name](srv)
            peak = memory(srv.proc.pid)["VmHWM"]
            print(f"{name:8} {before:>7} MiB {peak:>4} MiB {peak - before:>4} MiB  {note}")
        finally:
            srv.stop()


if __name__ == "__main__":
    main()

"""A benchmark's `anvilfs serve` on a state directory of its own, and the full tree it builds there through
the files (reads.py, restarts.py).

    proc = start(base)                       # BASE/state, BASE/ns, BASE/server.log; the stall log in BASE/stalls
    beads, convoys = build(connect(base, deadline), args)   # args.sessions, .convoys, .beads
    kept = copy_tree(DIR, base)              # or a tree reads.py --keep kept: its ids
    proc, took = restart(base, proc, sessions)   # SIGTERM, start, seconds to the first `list` with every session
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from anvilfs.client import Client, ServerError
from anvilfs.ninep import consts as c

CONFIG = "[limits]\nmax_sessions = 100000\n"
STALL_MS = 2  # what the server logs: steps longer than this
PIN: set[int] | None = None  # reads.py --pin: the CPU the server (and its git) runs on; everything else has the others


def start(base: Path) -> subprocess.Popen:
    (base / "config.toml").write_text(CONFIG)
    env = os.environ | {"XDG_CONFIG_HOME": str(base / "xdg"), "ANVILFS_STALLS": str(base / "stalls"),
                        "ANVILFS_STALLS_MS": str(STALL_MS)}
    return subprocess.Popen([sys.executable, "-m", "anvilfs", "serve", "--namespace", str(base / "ns"),
                             "--state", str(base / "state"), "--config", str(base / "config.toml")],
                            env=env, stderr=open(base / "server.log", "a"),
                            preexec_fn=(lambda: os.sched_setaffinity(0, PIN)) if PIN else None)


def connect(base: Path, deadline: float) -> Client:
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(str(base / "ns" / "agent"))
            return Client(sock)
        except OSError:
            sock.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.005)


def ctl(client: Client, path: str, lines: list[str]) -> list[str]:
    """Each line written on one open fid, its answer read back."""
    fid = client.open(path, c.ORDWR)
    answers = []
    for line in lines:
        client.write_chunk(fid, 0, line.encode() + b"\n")
        answers.append(client.read_chunk(fid, 0).decode().strip())
    client.clunk(fid)
    return answers


def build(client: Client, args) -> tuple[list[str], list[str]]:
    """The tree; returns the beads' and the convoys' ids in the order made."""
    t0 = time.perf_counter()
    ctl(client, "ctl", [f"new sim /tmp name=s{i:04d}" for i in range(args.sessions)])
    convoys = ctl(client, "convoys/ctl", [f'new "Convoy {i}" "goal {i}"' for i in range(args.convoys)])
    chain = max(args.beads // 10, 1)
    fid, beads = client.open("beads/ctl", c.ORDWR), []
    for i in range(args.beads):
        dep = f" {beads[-1]}" if i % chain else ""
        client.write_chunk(fid, 0, f'new "Task {i}" worker "do {i}"{dep} convoy={convoys[i % len(convoys)]}\n'.encode())
        beads.append(client.read_chunk(fid, 0).decode().strip())
    client.clunk(fid)
    for i, bead in enumerate(beads):
        if i % chain < chain // 10:
            fid = client.open(f"beads/{bead}/ctl", c.OWRITE)
            client.write_chunk(fid, 0, b"claim bench lease=3600\n")
            client.write_chunk(fid, 0, b"complete done\n")
            client.clunk(fid)
    print(f"built {args.sessions} sessions, {len(convoys)} convoys, {len(beads)} beads in {time.perf_counter() - t0:.0f} s")
    return beads, convoys


def copy_tree(tree: Path, base: Path) -> dict:
    """A tree kept by reads.py --keep copied to BASE/state; its ids (beads, convoys, sessions)."""
    shutil.copytree(tree / "state", base / "state", symlinks=True)
    return json.loads((tree / "ids.json").read_text())


def restart(base: Path, proc: subprocess.Popen, sessions: int,
            while_stopped: Callable[[], None] = lambda: None) -> tuple[subprocess.Popen, float]:
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=120)
    while_stopped()
    t0 = time.perf_counter()
    proc = start(base)
    try:
        return proc, up(base, sessions, t0)
    except BaseException:  # the caller holds the stopped one: this one must not outlive the run
        proc.kill()
        proc.wait()
        raise


def cpu_s(proc: subprocess.Popen, children: bool = False) -> float:
    """The CPU seconds (user and system, all its threads) the process has used so far (Linux); with
    `children`, those of its children it waited for too (the server's git)."""
    fields = Path(f"/proc/{proc.pid}/stat").read_text().rpartition(")")[2].split()
    used = int(fields[11]) + int(fields[12]) + ((int(fields[13]) + int(fields[14])) if children else 0)
    return used / os.sysconf("SC_CLK_TCK")


def up(base: Path, sessions: int, t0: float) -> float:
    """Seconds from t0 to the first `list` with every session."""
    deadline = time.monotonic() + 120
    while True:
        try:
            with connect(base, deadline) as client:
                if client.read_file("list").count(b"\n") >= sessions:
                    return time.perf_counter() - t0
        except (OSError, ServerError):
            pass
        if time.monotonic() > deadline:
            raise SystemExit(f"the server did not come back:\n{(base / 'server.log').read_text()[-3000:]}")
        time.sleep(0.005)

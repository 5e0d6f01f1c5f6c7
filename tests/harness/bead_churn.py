"""Bead changes streamed at a server until it dies: what the SIGKILL tests kill it in the middle of."""

from __future__ import annotations

import signal
import threading
import time

from anvilfs.client import ServerError
from anvilfs.ninep import consts as c

from .server import AnvilServer


def stream_changes(srv: AnvilServer, round_no: int, answered: list, stop: threading.Event) -> None:
    """create, claim, complete, over and over, until the server dies or `stop` is set; each change is
    appended to `answered` as (bead, its status now, its history message) once its reply came."""
    try:
        with srv.connect("writer", timeout=20) as client:
            ctl = client.open("beads/ctl", c.ORDWR)
            for i in range(100_000):
                if stop.is_set():
                    return
                client.write_chunk(ctl, 0, f'new "Round {round_no} task {i}" worker "d"\n'.encode())
                bead = client.read_chunk(ctl, 0).decode().strip()
                answered.append((bead, "pending", f"Created: Round {round_no} task {i} ({bead}"))
                fid = client.open(f"beads/{bead}/ctl", c.OWRITE)
                client.write_chunk(fid, 0, b"claim w lease=3600\n")
                answered.append((bead, "in_progress", f"Claimed: {bead} by w"))
                client.write_chunk(fid, 0, b"complete\n")
                answered.append((bead, "completed", f"Completed: Round {round_no} task {i} ({bead})"))
                client.clunk(fid)
    except (OSError, ServerError, ConnectionError):
        return


def killed_while_changing(srv: AnvilServer, round_no: int, wanted: int, after: float) -> list:
    """The server SIGKILLed `after` seconds once `wanted` changes of stream_changes were answered (a random
    point of its work, the caller's randomness); the changes answered, every one of them before the kill."""
    answered: list = []
    stop = threading.Event()
    writer = threading.Thread(target=stream_changes, args=(srv, round_no, answered, stop))
    writer.start()
    deadline = time.monotonic() + 60
    while len(answered) < wanted and time.monotonic() < deadline:
        time.sleep(0.001)  # polling another process's progress, bounded by the deadline
    time.sleep(after)
    srv.stop(sig=signal.SIGKILL)
    stop.set()
    writer.join(timeout=30)
    assert not writer.is_alive(), "the writer did not end after the server was killed"
    assert len(answered) >= wanted, f"round {round_no}: only {len(answered)} changes answered in 60 s"
    return answered

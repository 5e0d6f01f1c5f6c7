"""Item 3: how soon a blocked `events` read and a blocked `wait` read are answered after the change.

One process, three connections, one clock (perf_counter):

  B  the writer: puts a session in `running` with the prompt `sim:hang`
     (the sim agent then hangs until interrupted), later writes `interrupt`
     to its ctl, which ends the turn at once (running -> await);
  W  a Tread on the session's `wait`, parked while the session runs;
  E  a Tread on `events`, parked after the `running` line was read.

A read is known to be parked (not merely sent) when a null RPC sent after
it on the same connection has been answered, since the server reads each
connection's requests in order. Latency = from just before the `interrupt`
Twrite is sent to the moment select() says W's (or E's) Rread has arrived.

The sim backend's own answer to a prompt takes 3 steps of 20 ms, and a
prompt cannot be the trigger for `wait` (a `wait` opened before the prompt
answers at once: the session is idle), hence the hang-and-interrupt cycle.
Measured idle, then with 8 C clients doing status reads all the while.
"""

from __future__ import annotations

import contextlib
import os
import select
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

from cbench import start_load, stop_load
from report import FlushProbe, StealTimeline, Target, figure, percentile, say
from servers import Server, admin_client

from anvilfs.client import Client, ServerError
from anvilfs.ninep import consts as c
from anvilfs.ninep import messages as m

SESSION = "wake"
STEP_TIMEOUT = 10.0  # s for any one reply, on a loaded machine
PARKED = 0xFF00      # the tag of the parked Treads (Client.rpc counts its tags up from 1)
SYNC = 0xFF01
TARGETS = {"idle": Target("<=", 0.6, " ms"), "load": Target("<=", 2.0, " ms")}


def receive_by(client: Client, deadline: float) -> m.Message:
    """The next reply on a connection where at most one is in flight, before a deadline."""
    left = deadline - time.monotonic()
    if left <= 0 or not select.select([client.sock], [], [], left)[0]:
        raise TimeoutError(f"no reply within {STEP_TIMEOUT} s")
    reply = client.receive()
    if isinstance(reply, m.Rerror):
        raise ServerError(reply.ename)
    return reply


def park_read(client: Client, fid: int, deadline: float) -> None:
    """Send a Tread on fid and make sure the server holds it: a null RPC behind it is answered first."""
    client.send(m.Tread(tag=PARKED, fid=fid, offset=0, count=client.msize - c.IOHDRSZ))
    newfid = client.new_fid()
    client.send(m.Twalk(tag=SYNC, fid=client.root, newfid=newfid, wnames=()))
    reply = receive_by(client, deadline)
    if not isinstance(reply, m.Rwalk):
        raise RuntimeError(f"the read was answered before the change: {reply}")
    client.rpc(m.Tclunk(tag=0, fid=newfid))


def read_events_until(events: Client, fid: int, word: str, deadline: float) -> None:
    """Read `events` until the session's `word` line has come (the state the next sample starts from)."""
    while True:
        events.send(m.Tread(tag=PARKED, fid=fid, offset=0, count=events.msize - c.IOHDRSZ))
        lines = receive_by(events, deadline).data.decode().splitlines()
        if any(line.split()[1:3] == [SESSION, word] for line in lines):
            return


def one_sample(b: Client, w: Client, e: Client, e_fid: int, ctl_fid: int) -> tuple[float, float, float]:
    """One hang-and-interrupt cycle: (events latency, wait latency) in seconds, and when it began
    (time.monotonic, the steal timeline's clock)."""
    deadline = time.monotonic() + STEP_TIMEOUT
    b.write_file(f"{SESSION}/in", b"sim:hang\n")
    read_events_until(e, e_fid, "running", deadline)
    w_fid = w.open(f"{SESSION}/wait", c.OREAD)
    park_read(w, w_fid, deadline)
    park_read(e, e_fid, deadline)
    began, t0 = time.monotonic(), time.perf_counter()
    b.send(m.Twrite(tag=1, fid=ctl_fid, offset=0, data=b"interrupt\n"))
    arrived: dict[int, float] = {}
    waiting = [w.sock, e.sock]
    while waiting:
        left = deadline - time.monotonic()
        # only the sockets not answered yet: one whose reply has come stays readable (it is read
        # below), and a select on it would return at once, a busy loop on the server's CPU that
        # kept the other reply from being sent for a time slice (3-6 ms, half the samples)
        ready = select.select(waiting, [], [], max(left, 0))[0]
        if not ready:
            raise TimeoutError(f"a parked read was not answered within {STEP_TIMEOUT} s of the interrupt")
        t = time.perf_counter()
        for sock in ready:
            arrived[sock.fileno()] = t
            waiting.remove(sock)
    for client, what in ((w, "await"), (e, f"{SESSION} await")):
        reply = client.receive()
        if not isinstance(reply, m.Rread) or what not in reply.data.decode():
            raise RuntimeError(f"expected {what!r}, got {reply}")
    if not isinstance(receive_by(b, deadline), m.Rwrite):
        raise RuntimeError("interrupt refused")
    w.clunk(w_fid)
    return arrived[e.sock.fileno()] - t0, arrived[w.sock.fileno()] - t0, began


def sample(server: Server, samples: int) -> tuple[list[float], list[float], list[float]]:
    clients = [admin_client(server.sock) for _ in range(3)]
    b, w, e = clients
    try:
        e_fid = e.open("events", c.OREAD)
        ctl_fid = b.open(f"{SESSION}/ctl", c.OWRITE)
        got = [one_sample(b, w, e, e_fid, ctl_fid) for _ in range(samples)]
        return [ev for ev, _, _ in got], [wt for _, wt, _ in got], [t for _, _, t in got]
    finally:
        for client in clients:
            client.close()


def make_session(server: Server) -> None:
    with admin_client(server.sock) as admin:
        admin.write_file("ctl", f"new sim /tmp name={SESSION}\n".encode())
        deadline = time.monotonic() + STEP_TIMEOUT
        while admin.read_file(f"{SESSION}/status").startswith(b"starting"):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{SESSION} still starting after {STEP_TIMEOUT} s")
            time.sleep(0.01)  # poll interval, bounded by the deadline


def report(kind: str, events: list[float], wait: list[float], began: list[float], steal: StealTimeline) -> None:
    quiet = [steal.quiet(t) for t in began]
    for name, lat in (("events", events), ("wait", wait)):
        ms = [x * 1e3 for x in lat]
        figure(f"{kind}: {name} read answered, median", statistics.median(ms), "ms", None, f"{len(ms)} samples")
        figure(f"{kind}: {name} read answered, p99", percentile(ms, 0.99), "ms", TARGETS[kind],
               f"max {max(ms):.2f}")
        calm = [x for x, q in zip(ms, quiet) if q]
        if calm:  # the host's steal stalls the VM's CPUs whatever runs: the samples it left alone
            figure(f"{kind}: {name}, p99 of the {len(calm)} taken while the host stole nothing",
                   percentile(calm, 0.99), "ms", TARGETS[kind], f"median {statistics.median(calm):.2f}")


def run_wake(server: Server, binary: Path, samples: int, pin: Sequence[str], client_cpu: int | None = None,
             state: Path | None = None) -> None:
    """`client_cpu`: where the measuring process runs; by default with the server (CPU 0) when pinned,
    where each reply it is woken by preempts the server (the figure then includes CPU 0's queue).
    `state`: a directory on the server state's file system (beside it, not in it), where a FlushProbe
    times the disk's own durable write meanwhile: the save queue's thread writes the turn's end then."""
    where = f", the measuring client on CPU {client_cpu}" if client_cpu is not None else ""
    say(f"\n## wake: a parked events / wait read answered after `interrupt` (running -> await), {samples} samples{where}")
    mask = os.sched_getaffinity(0)
    if client_cpu is not None:
        os.sched_setaffinity(0, {client_cpu})
    elif pin:
        os.sched_setaffinity(0, {0})  # the measuring process shares CPU 0 with the server too
    try:
        make_session(server)
        for kind in ("idle", "load"):
            load = start_load(binary, server, procs=8, pin=pin) if kind == "load" else None
            try:
                probe = FlushProbe(state) if state is not None else contextlib.nullcontext()
                with StealTimeline() as timeline, probe:
                    got = sample(server, samples)
                report(kind, *got, timeline)
                say(f"  the host's steal while the {kind} samples were taken: {timeline.share():.1%} of this VM's CPU time")
                if state is not None:
                    say(f"  one 100-byte append and fdatasync beside the server's state meanwhile: {probe.summary()}")
            finally:
                if load is not None:
                    stop_load(load)
    finally:
        os.sched_setaffinity(0, mask)

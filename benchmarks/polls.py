"""Status-file polls per second: anvilfs against diod, same client, same protocol.

Run by hand (not by CI); it prints numbers and never asserts on them:

    .venv/bin/python benchmarks/polls.py [--seconds 3] [--warmup 0.5] [--sessions 20] [--rounds 1]
        [--connections 1,8] [--pin none|same|split] [--servers anvilfs,diod]
        [--profile FILE] [--anvilfs-cmd CMD]

One poll = Twalk(root -> bN/status) + Tlopen(flags 0) + Tread until an
empty reply + Tclunk, over a unix socket, in 9P2000.L (the only dialect diod
speaks; anvilfs speaks it too). Both servers are driven by the project's own
blocking client (anvilfs.client.Client, its rpc() and codec) in 9P2000.L,
with the aname each wants (diod its export path): ninep_l.connect.

anvilfs gets N sim sessions b0..b{N-1} (written to agent/ctl as
`new sim /tmp name=bN`); diod exports a directory with N real files
bN/status holding the same bytes as anvilfs's b0/status. Polls go round-robin
over bN/status on both.

Each measurement runs C client processes (multiprocessing, so the Python
client is not bound by one GIL), each with its own connection; they warm up,
meet at a barrier, then poll for --seconds. polls/s is the sum over the
processes of polls / elapsed. The server's CPU time (utime+stime from
/proc, all threads) is read as the clients pass the start and end barriers,
giving server CPU microseconds per poll.

--pin matters on a small VM: a wake-up across cores is expensive, so where
the scheduler happens to put the server and a lone client changes the
1-connection numbers by 2-3x from run to run (see history.md, "Reading the numbers").

Each server is started by benchmarks/servers.py in a temporary directory, is waited
for by connecting to its socket with a deadline, and is killed in a finally.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import multiprocessing as mp
import os
import platform
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

from ninep_l import connect
from servers import anvilfs_server, cpu_seconds, diod_missing, diod_server

from anvilfs.client import Client, ServerError
from anvilfs.ninep import consts as c
from anvilfs.ninep import messages as m

def poll(client: Client, fid: int, names: tuple[str, str]) -> int:
    """One poll: walk + lopen + read to EOF + clunk. Returns the bytes read."""
    reply = client.rpc(m.Twalk(tag=0, fid=client.root, newfid=fid, wnames=names))
    if len(reply.wqids) != len(names):
        raise ServerError(f"walk to {'/'.join(names)} stopped after {len(reply.wqids)}")
    try:
        client.rpc(m.Tlopen(tag=0, fid=fid, flags=0))
        count = client.msize - c.IOHDRSZ
        offset = 0
        while data := client.rpc(m.Tread(tag=0, fid=fid, offset=offset, count=count)).data:
            offset += len(data)
    finally:
        client.rpc(m.Tclunk(tag=0, fid=fid))
    return offset


# ---------------------------------------------------------------- workers


def _record_cpu(pid: int, cell) -> None:
    """Barrier action: note the server's CPU time as everyone starts or stops."""
    cell.value = cpu_seconds(pid)


def _worker(sock_path: str, aname: str, sessions: int, start: int, warmup: float,
            seconds: float, barrier, end_barrier, results, cpus: set[int] | None) -> None:
    try:
        if cpus:
            os.sched_setaffinity(0, cpus)
        client = connect(sock_path, aname)
        fid = client.new_fid()
        paths = [(f"b{i}", "status") for i in range(sessions)]
        i = start % sessions
        end = time.monotonic() + warmup
        while time.monotonic() < end:
            poll(client, fid, paths[i])
            i = (i + 1) % sessions
        barrier.wait()
        polls = 0
        t0 = time.monotonic()
        end = t0 + seconds
        now = t0
        while now < end:
            poll(client, fid, paths[i])
            i = (i + 1) % sessions
            polls += 1
            now = time.monotonic()
        elapsed = now - t0
        end_barrier.wait()
        client.close()
        results.put((polls, elapsed, None))
    except BaseException as exc:  # report, never hang the parent
        for b in (barrier, end_barrier):
            with contextlib.suppress(Exception):
                b.abort()
        results.put((0, 0.0, f"{type(exc).__name__}: {exc}"))


def measure(sock_path: str, aname: str, sessions: int, connections: int,
            warmup: float, seconds: float, server_pid: int,
            client_cpus: set[int] | None = None) -> tuple[float, float]:
    """Polls per second summed over `connections` client processes, and the
    server's CPU microseconds per poll over the measured interval."""
    ctx = mp.get_context("fork")
    cpu0, cpu1 = ctx.Value("d", 0.0), ctx.Value("d", 0.0)
    barrier = ctx.Barrier(connections, action=functools.partial(_record_cpu, server_pid, cpu0))
    end_barrier = ctx.Barrier(connections, action=functools.partial(_record_cpu, server_pid, cpu1))
    results = ctx.Queue()
    procs = [
        ctx.Process(target=_worker, args=(sock_path, aname, sessions, k * sessions // connections,
                                          warmup, seconds, barrier, end_barrier, results, client_cpus))
        for k in range(connections)
    ]
    for p in procs:
        p.start()
    got = []
    try:
        for _ in procs:
            got.append(results.get(timeout=warmup + seconds + 60))
    finally:
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
                p.join()
    errors = [e for _, _, e in got if e]
    if errors:
        raise RuntimeError(f"{len(errors)} worker(s) failed: {errors[0]}")
    polls = sum(n for n, _, _ in got)
    return sum(n / t for n, t, _ in got), (cpu1.value - cpu0.value) * 1e6 / max(polls, 1)


# ---------------------------------------------------------------- main


def run(args) -> dict[tuple[str, int], list[tuple[float, float]]]:
    """Every (server, connections) case, --rounds times: [(polls/s, server cpu us/poll)]."""
    results: dict[tuple[str, int], list[tuple[float, float]]] = {}
    anvilfs_cmd = shlex.split(args.anvilfs_cmd) if args.anvilfs_cmd else None
    if args.profile:
        code = ("import cProfile, runpy, sys; sys.argv[0] = 'anvilfs'; "
                f"cProfile.run('runpy.run_module(\"anvilfs\", run_name=\"__main__\")', {str(args.profile)!r})")
        anvilfs_cmd = [sys.executable, "-c", code] if anvilfs_cmd is None else (
            [sys.executable, "-m", "cProfile", "-o", str(args.profile)] + anvilfs_cmd[1:])
    ncpu = os.cpu_count() or 1
    server_cpus, client_cpus = {
        "none": (None, None),
        "same": ({0}, {0}),
        "split": ({0}, set(range(1, ncpu)) or {0}),
    }[args.pin]
    # taskset execs the server, so the pid stays the server's and every thread inherits the mask
    pin = ("taskset", "-c", ",".join(map(str, sorted(server_cpus)))) if server_cpus else ()
    with tempfile.TemporaryDirectory(prefix="anvilfs-bench-") as tmpdir:
        tmp = Path(tmpdir)
        status = b"idle simulated\n"  # replaced by anvilfs's own b0/status once it has run
        for r in range(args.rounds):
            for which in args.servers:
                rt = tmp / f"{which}-{r}"
                rt.mkdir()
                names = [f"b{i}" for i in range(args.sessions)]
                if which == "anvilfs":
                    cm = anvilfs_server(rt, names, anvilfs_cmd, pin)
                else:
                    cm = diod_server(rt, names, status, pin)
                with cm as got:
                    if which == "anvilfs":
                        server, status, _ = got
                    else:
                        server = got
                    for n in args.connections:
                        rate, cpu = measure(server.sock, server.aname, args.sessions, n,
                                            args.warmup, args.seconds, server.proc.pid, client_cpus)
                        results.setdefault((which, n), []).append((rate, cpu))
                        print(f"  round {r + 1}: {which:8} {n} conn: {rate:9.0f} polls/s, "
                              f"server {cpu:6.1f} cpu-us/poll", file=sys.stderr, flush=True)
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=3.0, help="measured time per case (default 3)")
    ap.add_argument("--warmup", type=float, default=0.5, help="warm-up per case before the barrier (default 0.5)")
    ap.add_argument("--sessions", type=int, default=20, help="sessions / files polled round-robin (default 20)")
    ap.add_argument("--connections", type=lambda s: [int(x) for x in s.split(",")], default=[1, 8],
                    help="comma-separated connection counts (default 1,8)")
    ap.add_argument("--rounds", type=int, default=1, help="repeat everything; medians are reported (default 1)")
    ap.add_argument("--servers", type=lambda s: [x for x in s.split(",") if x], default=["anvilfs", "diod"],
                    help="comma-separated subset of anvilfs,diod (default both)")
    ap.add_argument("--profile", metavar="FILE", type=Path,
                    help="run the anvilfs server under cProfile and dump its stats to FILE "
                         "(rates are then not comparable; read with python -m pstats FILE)")
    ap.add_argument("--anvilfs-cmd", metavar="CMD",
                    help="command that runs the anvilfs CLI, instead of 'python -m anvilfs' "
                         "(e.g. a patched build); 'serve --namespace ... --state ...' is appended")
    ap.add_argument("--pin", choices=["none", "same", "split"], default="none",
                    help="CPU placement: none = the OS decides (default); same = server and clients "
                         "all on CPU 0; split = server on CPU 0, clients on the other CPUs")
    args = ap.parse_args(argv)
    unknown = set(args.servers) - {"anvilfs", "diod"}
    if unknown:
        ap.error(f"unknown server(s): {', '.join(sorted(unknown))}")
    if "diod" in args.servers and (why := diod_missing()):
        print(f"polls.py: {why}", file=sys.stderr)
        return 2
    if args.profile:
        args.profile = args.profile.resolve()

    load = os.getloadavg()[0]
    print(f"# {time.strftime('%Y-%m-%d %H:%M')}  {platform.node()}  {platform.machine()}  "
          f"{os.cpu_count()} cpus  Python {platform.python_version()}  load {load:.2f}", flush=True)
    if load > 0.5:
        print("# warning: the machine is busy (1-minute load above 0.5): numbers will be low and noisy",
              flush=True)
    print(f"# 9P2000.L over a unix socket; poll = walk+lopen+read-to-EOF+clunk; "
          f"{args.sessions} files round-robin; {args.seconds:g} s per case after {args.warmup:g} s warm-up; "
          f"{args.rounds} round(s), median; pin {args.pin}{'; anvilfs under cProfile' if args.profile else ''}", flush=True)
    results = run(args)

    med = {k: (statistics.median(r for r, _ in v), statistics.median(cpu for _, cpu in v))
           for k, v in results.items()}
    # latency: mean wall time of one poll on one connection (connections / rate)
    print(f"{'server':8}  {'conns':>5}  {'polls/s':>9}  {'latency-us':>10}  {'server cpu-us/poll':>18}")
    for (which, n), (rate, cpu) in sorted(med.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        print(f"{which:8}  {n:5d}  {rate:9.0f}  {n * 1e6 / rate:10.1f}  {cpu:18.1f}")
    targets = {1: 0.8, 8: 0.6}
    for n in args.connections:
        if ("anvilfs", n) in med and ("diod", n) in med:
            ratio = med[("anvilfs", n)][0] / med[("diod", n)][0]
            target = targets.get(n)
            note = f"  (target >= {target:.1f}x)" if target else ""
            print(f"anvilfs/diod at {n} conn: {ratio:.2f}x{note}")
    if args.profile:
        print(f"# cProfile stats of the anvilfs server: {args.profile}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: reads of big files, event-loop stalls and restart on a full tree (issue 32, item 6; by hand).

    .venv/bin/python benchmarks/reads.py [--beads 10000] [--convoys 1000] [--sessions 1000] [--no-web]
    .venv/bin/python benchmarks/reads.py --keep DIR      # and keep the built tree in DIR (state and ids)
    .venv/bin/python benchmarks/reads.py --tree DIR      # measure on a copy of a kept tree: no build
    .venv/bin/python benchmarks/reads.py --stalls-to FILE  # and keep the server's stall log
    .venv/bin/python benchmarks/reads.py --pin             # the server on a CPU of its own (a diagnosis)
    .venv/bin/python benchmarks/reads.py --web-nice 0      # `anvilfs web` not niced (its default is 10)

Starts a real `anvilfs serve` with ANVILFS_STALLS set (anvilfs/server/stalls.py: every trio task
step over 2 ms is logged, from inside the server) and builds its tree through the files, over one
connection: N sim sessions (`ctl`), C convoys (`convoys/ctl`), B beads (`beads/ctl`) in chains of
B/10 links (each bead depends on the one made before, so `graph` has B/10 waves), bead i in
convoy i mod C; then the first tenth of each chain is claimed and completed. Then it prints:

- restart: SIGTERM, start again on the same state, time to the first `list` that has every session
  and the server's CPU time to then
  (with --tree, the copy's first start is waited for and printed first, held to no target, as it is
  no restart: its files have other inodes and times than the parse cache's rows in STATE/anvilfs.db
  say, so each is checked against its row by its bytes, anvilfs/storage/parsed.py; before 2026-12-07
  04:00 each was parsed), and with --tree a second restart
  (`restart again`): at the first, the rows of the files the copy wrote less than 2 s before the first
  start's look are racy and checked against the files' bytes; at the second, none is (a server's
  restart after it ran a while, for the files it did not change). Without --tree, `restart` follows
  the build: every file was written by the server, its row made as it was written (racy, so checked);
- --keep copies the state while no server runs (between the stop and the start of `restart`);
- each file's read through a connected client, from the first Tread to EOF (the walk and open
  before it are not counted), three ways: the first read after the restart (cold), the median of
  five more (warm), and the longest of five reads each right after a change of a bead (changed);
  a directory's read is its listing (`ls beads/`);
- the longest stall of the server's event loop over those reads;
- with `anvilfs web` open on the tree, while the benchmark makes a change (a bead claimed or
  completed, a prompt to a sim session) every 50 ms for 5 s: another client's round trips (a read of
  one session's `status` every 2 ms from a process of its own: median, 99th percentile, max and how
  many passed 20 ms), the longest stall, the CPU each process used, and the changed reads again;
- after each phase, the host meanwhile: the share of CPU time its hypervisor stole, how busy the
  cores were, the load average, and how long a fixed Python workload took at the phase's two ends
  (benchmarks/host.py: the host's speed, which changes by half within minutes and which neither steal
  nor load shows); the speed alone after each restart and at the run's two ends. These make two runs'
  figures comparable, or not;
- last, each target with the worst figure of the run and where it was.

Targets (issue 32): every read under 20 ms, no stall over 20 ms, restart under 2 s, with the web too.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from anvilfs.client import Client
from anvilfs.ninep import consts as c
import tree_server  # benchmarks/tree_server.py
from host import host_line, host_mark, speed_line  # benchmarks/host.py
from tree_server import build, connect, copy_tree, cpu_s, restart, start, up

TARGET_MS = 20.0
# the worst of each target's figures so far, and where: the verdict printed last
WORST = {"read": (0.0, "-"), "stall": (0.0, "-"), "restart": (0.0, "-")}


WEB_NICE: int | None = None  # --web-nice: `anvilfs web --nice N` (None: the web's own default, 10)


def files(beads: list[str], convoys: list[str]) -> list[str]:
    bead, convoy = beads[len(beads) // 2], convoys[len(convoys) // 2]
    return ["list", "beads/list", "beads/ready", "beads/ready.worker", "beads/graph", "convoys/list",
            "errors", "backends", "beads/", "convoys/", "/", f"beads/{bead}/", f"beads/{bead}/status",
            f"beads/{bead}/context", f"convoys/{convoy}/beads", f"convoys/{convoy}/progress", "s0001/status",
            "s0001/queue", "human/approvals"]


def read_ms(client: Client, path: str) -> float:
    """From the first Tread to EOF."""
    fid = client.open(path, c.OREAD)  # "/" walks no name: a clone of the root
    t0, offset = time.perf_counter(), 0
    while data := client.read_chunk(fid, offset):
        offset += len(data)
    took = (time.perf_counter() - t0) * 1000
    client.clunk(fid)
    return took


def stalls(base: Path, since: float) -> tuple[float, str, float, float, float]:
    """The longest stall the server logged after `since` (epoch seconds): its wall ms, its task, the CPU ms
    the loop's thread spent in it and the ms it waited for a core (nan where not known); and the most CPU
    ms any one logged step took (the work a step did, where the wall time also counts the process waiting
    for a core on a loaded machine, or for the interpreter's lock)."""
    worst, most_cpu = (0.0, "-", 0.0, float("nan")), 0.0
    path = base / "stalls"
    if path.exists():
        for line in path.read_text().splitlines():
            when, ms, rest = line.split(" ", 2)
            task, cpu, runq = rest.rsplit(" ", 2)  # a task's name may hold spaces
            if float(when) >= since:
                most_cpu = max(most_cpu, float(cpu))
                if float(ms) > worst[0]:
                    worst = (float(ms), task, float(cpu), float("nan") if runq == "-" else float(runq))
    return (*worst, most_cpu)


def _worst(target: str, value: float, where: str) -> None:
    if value > WORST[target][0]:
        WORST[target] = (value, where)


def stall_line(base: Path, since: float) -> str:
    ms, task, cpu, runq, most_cpu = stalls(base, since)
    _worst("stall", ms, task)
    # CPU and wait may count up to StallLog.BASELINE of the steps before this one (and the wait lags a switch):
    # where they pass the step's time, it slept for none of it, not for less than none
    asleep = max(ms - cpu - runq, 0.0)
    return (f"  longest stall of the server's loop: {ms:.1f} ms ({task}: {cpu:.1f} ms of CPU, {runq:.1f} waiting "
            f"for a core, {asleep:.1f} asleep; the most CPU in one step: {most_cpu:.1f} ms)"
            f"{'' if ms < TARGET_MS else '   MISS'}")


def keep(base: Path, where: Path | None, beads: list[str], convoys: list[str], sessions: int) -> None:
    if where is not None:
        shutil.copytree(base / "state", where / "state", symlinks=True)
        (where / "ids.json").write_text(json.dumps({"beads": beads, "convoys": convoys, "sessions": sessions}))


def report_restart(base: Path, proc: subprocess.Popen, what: str, took: float) -> None:
    _worst("restart", took, what)
    print(f"{what}: {took:.2f} s to the first `list` with every session, {cpu_s(proc):.2f} s of the server's "
          f"CPU{'' if took < 2 else '   MISS'}")
    loads = [line for line in (base / "server.log").read_text().splitlines() if " files: " in line]
    print("".join(f"  {line.removeprefix('anvilfs: ')}\n" for line in loads[-2:]), end="")  # this start's
    print(f"  {speed_line()}")  # right after the start: the speed it most likely had


class Changer:
    """Changes on a connection of their own, each a change of the board and of a session: a ready bead
    claimed, or unclaimed again (so every file drawn from the beads moves), and a prompt to a sim session."""

    def __init__(self, base: Path, beads: list[str], sessions: int):
        self.client, self.beads, self.sessions = connect(base, time.monotonic() + 10), beads, min(sessions, 100)
        self.next = 0

    def change(self) -> None:
        bead = self.beads[(self.next // 2) % len(self.beads)]
        verb = b"claim bench lease=3600\n" if self.next % 2 == 0 else b"unclaim\n"
        self.next += 1
        self.client.write_file(f"beads/{bead}/ctl", verb)
        self.client.write_file(f"s{self.next % self.sessions:04d}/in", b"hello\n")


def reads(client: Client, paths: list[str], changer: Changer | None = None) -> dict[str, float]:
    return {path: (changer.change() if changer else None, read_ms(client, path))[1] for path in paths}


def table(rows: dict[str, list[float]], heads: list[str], web: bool) -> None:
    print(f"  {'file':34}" + "".join(f"{h:>12}" for h in heads))
    for path, values in rows.items():
        for head, value in zip(heads, values):
            _worst("read", value, f"{path} {head}{', web open' if web else ''}")
        marks = "".join(f"{v:>9.1f} ms" for v in values)
        print(f"  {path:34}{marks}{'' if max(values) < TARGET_MS else '   MISS'}")


def read_phase(base: Path, client: Client, paths: list[str], changer: Changer, title: str, cold: bool) -> None:
    since, host = time.time(), host_mark()
    first = reads(client, paths) if cold else None
    warm = [reads(client, paths) for _ in range(5)]
    changed = [reads(client, paths, changer) for _ in range(5)]
    print(title)
    heads = (["cold"] if cold else []) + ["warm", "changed"]
    table({p: ([first[p]] if cold else []) + [statistics.median(w[p] for w in warm), max(ch[p] for ch in changed)]
           for p in paths}, heads, web=not cold)
    print(stall_line(base, since))
    print(host_line(host))


def web_phase(base: Path, server: subprocess.Popen, client: Client, paths: list[str], changer: Changer) -> None:
    env = os.environ | {"XDG_CONFIG_HOME": str(base / "xdg")}
    web = subprocess.Popen([sys.executable, "-m", "anvilfs", "-a", f"unix!{base / 'ns' / 'agent'}", "web",
                            *(["--nice", str(WEB_NICE)] if WEB_NICE is not None else [])], env=env,
                           stdout=subprocess.PIPE, stderr=open(base / "web.log", "a"), text=True)
    try:
        if not web.stdout.readline().startswith("http"):
            raise SystemExit(f"anvilfs web did not start:\n{(base / 'web.log').read_text()}")
        since, host = time.time(), host_mark()
        cpu_before = (cpu_s(server), cpu_s(server, children=True), cpu_s(web), sum(os.times()[:2]))
        # the other client is a process of its own: a thread here would wait for this one's GIL too
        prober = subprocess.Popen([sys.executable, __file__, "--probe", str(base / "ns" / "agent"), "5"],
                                  stdout=subprocess.PIPE, text=True)
        end = time.monotonic() + 5
        while time.monotonic() < end:
            changer.change()
            time.sleep(0.05)
        trips = sorted(float(ms) for ms in prober.communicate(timeout=60)[0].split())
        cpu = [after - before for after, before in zip((cpu_s(server), cpu_s(server, children=True), cpu_s(web),
                                                        sum(os.times()[:2])), cpu_before)]
        print("with anvilfs web open, a change every 50 ms for 5 s:")
        print(f"  another client's status read (walk, open, read, clunk): median {statistics.median(trips):.1f} ms, "
              f"99th percentile {trips[len(trips) * 99 // 100]:.1f} ms, max {trips[-1]:.1f} ms, "
              f"{sum(t > TARGET_MS for t in trips)} of {len(trips)} over {TARGET_MS:.0f} ms")
        print(stall_line(base, since))
        print(f"  CPU seconds in those 5 s (2 cores: 10 s): the server {cpu[0]:.2f}, its git {cpu[1] - cpu[0]:.2f}, "
              f"anvilfs web {cpu[2]:.2f}, this benchmark {cpu[3]:.2f}")
        print(host_line(host))
        read_phase(base, client, paths, changer, "reads with anvilfs web open:", cold=False)
    finally:
        web.send_signal(signal.SIGINT)
        web.wait(timeout=30)


def probe(socket_path: str, seconds: float) -> None:
    """The other client of the web phase (a process of its own): reads s0002/status every 2 ms for `seconds`,
    printing each round trip's milliseconds."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(socket_path)
    trips, end = [], time.monotonic() + seconds
    with Client(sock) as client:
        while time.monotonic() < end:
            t0 = time.perf_counter()
            client.read_file("s0002/status")
            trips.append((time.perf_counter() - t0) * 1000)
            time.sleep(0.002)
    print(" ".join(f"{t:.2f}" for t in trips))


def main() -> None:
    if sys.argv[1:2] == ["--probe"]:
        return probe(sys.argv[2], float(sys.argv[3]))
    ap = argparse.ArgumentParser()
    ap.add_argument("--beads", type=int, default=10_000)
    ap.add_argument("--convoys", type=int, default=1000)
    ap.add_argument("--sessions", type=int, default=1000)
    ap.add_argument("--no-web", action="store_true")
    ap.add_argument("--keep", type=Path, help="copy the built tree (its state and ids) to this directory")
    ap.add_argument("--tree", type=Path, help="measure on a copy of a tree kept by --keep instead of building one")
    ap.add_argument("--stalls-to", type=Path, help="copy the server's stall log (every step over 2 ms) here")
    ap.add_argument("--pin", action="store_true", help="the server on the first CPU, the benchmark and the web on "
                    "the others: what is left of a wait when nothing else wants the server's core")
    ap.add_argument("--web-nice", type=int, metavar="N", help="run `anvilfs web --nice N` (default: the web's own, 10; "
                    "0: at this benchmark's priority, as before 2026-12-06 22:00)")
    args = ap.parse_args()
    global WEB_NICE
    WEB_NICE = args.web_nice
    if args.pin:
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) < 2:
            raise SystemExit("--pin needs two CPUs")
        tree_server.PIN = {cpus[0]}
        os.sched_setaffinity(0, set(cpus[1:]))  # this process and what it starts after (the web, the prober)
    print(speed_line())
    base = Path(tempfile.mkdtemp(prefix="anvr.", dir="/tmp"))
    if args.tree:  # the tree's figures (its counts) are the kept ones
        kept = copy_tree(args.tree, base)
        beads, convoys, args.sessions, args.beads = kept["beads"], kept["convoys"], kept["sessions"], len(kept["beads"])
        print(f"tree of {args.sessions} sessions, {len(convoys)} convoys, {len(beads)} beads from {args.tree}")
    t0, proc = time.perf_counter(), start(base)
    try:
        if not args.tree:
            with connect(base, time.monotonic() + 30) as client:
                beads, convoys = build(client, args)
        else:  # up first, as after a build: what is restarted is a server that ran on this state
            print(f"first start on the copy: {up(base, args.sessions, t0):.2f} s, {cpu_s(proc):.2f} s of CPU "
                  "(its files new to this state; a start on a copy, not a restart: held to no target)")
        # kept while no server runs: a copy of a live anvilfs.db is torn (docs/using.md: never cp it), as
        # the trees kept before 2026-12-07 04:00 were (benchmarks/history.md)
        proc, took = restart(base, proc, args.sessions, lambda: keep(base, args.keep, beads, convoys, args.sessions))
        report_restart(base, proc, "restart", took)
        if args.tree:  # the files the copy wrote just before the first start's look were checked by their bytes
            proc, took = restart(base, proc, args.sessions)
            report_restart(base, proc, "restart again", took)
        paths = files(beads, convoys)
        chain = max(args.beads // 10, 1)
        ready = [b for i, b in enumerate(beads) if i % chain == chain // 10]  # the first open bead of each chain
        changer = Changer(base, ready, args.sessions)
        with connect(base, time.monotonic() + 10) as client:
            read_phase(base, client, paths, changer, "reads (first Tread to EOF):", cold=True)
            if not args.no_web:
                web_phase(base, proc, client, paths, changer)
        verdict()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if args.stalls_to and (base / "stalls").exists():
            shutil.copyfile(base / "stalls", args.stalls_to)
        shutil.rmtree(base, ignore_errors=True)


def verdict() -> None:
    """The targets, each with its worst figure of the run."""
    read, stall, took = WORST["read"], WORST["stall"], WORST["restart"]
    print("targets:")
    print(f"  every read under {TARGET_MS:.0f} ms: {'met' if read[0] < TARGET_MS else 'MISS'} (the longest {read[0]:.1f} "
          f"ms, {read[1]})")
    print(f"  no stall over {TARGET_MS:.0f} ms: {'met' if stall[0] < TARGET_MS else 'MISS'} (the longest {stall[0]:.1f} "
          f"ms, {stall[1]})")
    print(f"  restart under 2 s: {'met' if took[0] < 2 else 'MISS'} (the longest {took[0]:.2f} s, {took[1]})")
    print(speed_line())


if __name__ == "__main__":
    main()

"""Benchmark: a conductor watching many sessions (run by hand; prints numbers).

    .venv/bin/python benchmarks/conductor.py [--shape lanes|barrier] [--sessions 100] [--rounds 30] [--turn 1]
        [--poll 1] [--agent sim|true] [--pairs 1 | --server-state /dev/shm] [--profile conductor.svg]
        [--profile-server server.txt] [--conductor-dir DIR]

Starts `anvilfs serve` and runs the conductor as a real process (`python -m
conductor run`) on one of two workflows, repeats of --rounds with
`exhausted = "next"`:

- lanes (the default): one `each` over the N sessions whose body is a
  repeat of prompt, wait: each session is prompted again as soon as it is
  itself done, whatever the others do. The per-session reaction.
- barrier: each round prompts every session, waits for all, checks one
  `out` for a phrase it never has (the workflow as it was before lanes),
  and goes on: the 100-at-once fan-out.

The agents are the server's simulated ones (a sim turn is 3 step_delays,
no process) or, with --agent true, a command backend running `true` (a
process per turn). A sim session's turn takes about --turn seconds (real
agents take seconds), each session on a sim backend of its own whose
step_delay is spread from 0.75 to 1.25 times turn/3, so that their awaits
do not all land at once (in lanes; barrier rounds line them up again).
An observer follows `agent/events` and stamps each line as it arrives: a
session's `await` line and its `prompt queued` line.

What is measured: the conductor's reaction. In lanes, from a session's own
`await` line to its own next `prompt queued` line, one sample per session
and round ((rounds-1) x N): the issue's figure. In barrier, a round's wait
is satisfied when the last session of the round reaches `await`; from that
line to each session's next `prompt queued` line is one sample of "every
prompt", and to the round's first `prompt queued` one sample of "first
prompt" (rounds-1); its own await to its next prompt is given too, for
comparison (it has the wait for the slowest session in it). Median and p99, in blocking mode (the conductor
blocks on each session's `wait`) and, with --poll S, polling `queue` and
`status` every S seconds. Both stamps come from the same observer, so its
own delay cancels out to within its scheduling.

After each run it prints what one durable write cost on the disk under
the server's state during the run (report.FlushProbe: 100 bytes appended
and fdatasynced every 50 ms by a thread of the benchmark, 20 flushes a
second on top of the run's own: the floor of a reaction, which has the
prompt's on its path), and the flush requests the disk under the server's
state completed meanwhile (from /sys/dev/block; the conductor's record is
on the same disk unless --server-state moves the server's), per second and
per turn: what the latency's tail follows.

The sitting (the default, issue 33's target): the blocking run with the
server's state on the disk, then the same with it on /dev/shm (tmpfs,
where its fsyncs cost nothing; the conductor's record stays on the disk),
--pairs times, and then one fdatasync's p99 on the disk alone
(fsync_floor.measure, 400 samples); it prints the three p99s, the load
average before and after, and whether the target holds: the p99 on the
disk no more than the p99 on /dev/shm plus one fdatasync's p99 (medians
over the pairs). --server-state DIR runs the one blocking run with the
server's state under DIR instead (/dev/shm: what is left is the
conductor's part and the machine's CPU). --profile records the
conductor with py-spy (an SVG flame graph, or collapsed stacks if the name
ends in .txt); --profile-server records the server the same way.
--conductor-dir runs the conductor package found in DIR instead (another
commit's: `git archive COMMIT conductor | tar -x -C DIR`), to compare.
--trace marks each reaction's steps in the server and the conductor
(trace/sitecustomize.py) and prints the reaction taken apart after the
blocking run (reaction_trace.py): which part its tail is in.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from anvilfs.client import Client  # noqa: E402
from harness.server import REPO_ROOT, start_server  # noqa: E402

import fsync_floor  # noqa: E402  (benchmarks/, the script's own directory)
import reaction_trace  # noqa: E402
from report import FlushProbe, StealTimeline, percentile  # noqa: E402

TRACER = str(Path(__file__).resolve().parent / "trace")

PYSPY = os.environ.get("PYSPY", "/tmp/pyspy/bin/py-spy")


def backends(n: int, turn: float) -> tuple[str, list[str]]:
    """The server's config, and each session's backend: sim-I with a step_delay of its own, and `instant`."""
    delays = [turn / 3 * (0.75 + 0.5 * i / max(n - 1, 1)) for i in range(n)]
    config = "".join(f'[backends.sim-{i}]\nkind = "sim"\nstep_delay = {d:.4f}\n' for i, d in enumerate(delays))
    return config + '[backends.instant]\nkind = "command"\nargv = ["true"]\n', [f"sim-{i}" for i in range(n)]


def head(names: list[str], cwd: Path, chosen: list[str]) -> str:
    sessions = "".join(f'[sessions.{n}]\nbackend = "{b}"\ncwd = "{cwd}"\n' for n, b in zip(names, chosen))
    return f'name = "bench"\n{sessions}[groups]\nall = {names!r}\n'.replace("'", '"')


def lanes(rounds: int) -> str:
    return f'''[[steps]]
id = "lanes"
kind = "each"
sessions = ["all"]
  [[steps.steps]]
  id = "loop"
  kind = "repeat"
  max_rounds = {rounds}
  exhausted = "next"
    [[steps.steps.steps]]
    id = "go"
    kind = "prompt"
    to = ["{{session}}"]
    text = "round {{round}}"
    [[steps.steps.steps]]
    id = "done"
    kind = "wait"
    sessions = ["{{session}}"]
'''


def barrier(rounds: int) -> str:
    return f'''[[steps]]
id = "loop"
kind = "repeat"
max_rounds = {rounds}
exhausted = "next"
  [[steps.steps]]
  id = "go"
  kind = "prompt"
  to = ["all"]
  text = "round {{round}}"
  [[steps.steps]]
  id = "done"
  kind = "wait"
  sessions = ["all"]
  [[steps.steps]]
  id = "never"
  kind = "check"
  any = ["s0"]
  contains = "no such phrase"
'''


def observe(sock_path: Path, stamps: list, stop: threading.Event) -> None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(sock_path))
    from anvilfs.ninep import consts as c
    with Client(sock, uname="observer") as client:
        fid = client.open("events", c.OREAD)
        offset, rest = 0, b""
        while not stop.is_set():
            try:
                data = client.read_chunk(fid, offset)
            except ConnectionError:
                return  # the server stopped: the run is over
            now = time.monotonic()
            offset += len(data)
            rest += data
            *lines, rest = rest.split(b"\n")
            stamps += [(now, line.decode()) for line in lines]


def own_reaction(stamps: list, steal: StealTimeline) -> dict[str, list[float]]:
    """Per session, from its own await to its own next prompt queued (ms); and those split by whether
    the host stole CPU time from the VM in the 0.05-0.1 s from just before they began."""
    awaited, spans = {}, []
    for now, line in stamps:
        words = line.split()
        if len(words) < 3 or not words[1].startswith("s"):
            continue
        if words[2] == "await":
            awaited[words[1]] = now
        elif words[2:4] == ["prompt", "queued"] and words[1] in awaited:
            spans.append((awaited.pop(words[1]), now))
    every, quiet, stolen = [], [], []
    for start, end in spans:
        every.append((end - start) * 1000)
        (quiet if steal.quiet(start) else stolen).append(every[-1])
    return {"its own next prompt": every,
            "its own next prompt, in stretches the host stole nothing": quiet,
            "its own next prompt, in stretches it stole some": stolen}


def reaction(stamps: list, n: int) -> dict[str, list[float]]:
    """Per round, from the last session's await: to each session's next prompt queued, and to the first (ms)."""
    awaits, every, first, waiting = 0, [], [], None
    for now, line in stamps:
        words = line.split()
        if len(words) < 3 or not words[1].startswith("s"):
            continue
        if words[2] == "await":
            awaits += 1
            if awaits % n == 0:
                waiting, fresh = now, True
        elif words[2:4] == ["prompt", "queued"] and waiting is not None:
            every.append((now - waiting) * 1000)
            if fresh:
                first.append(every[-1])
                fresh = False
    return {"every prompt": every, "first prompt": first}


@dataclass
class Options:
    shape: str
    sessions: int
    rounds: int
    turn: float
    agent: str
    server_state: str | None
    profile: str | None
    profile_server: str | None
    conductor_dir: str | None
    trace: bool = False


def device_flushes(path: Path) -> int | None:
    """Flush requests the block device under `path` has completed (/sys/dev/block/M:N/stat, field 16,
    Linux 5.5 and later; a partition's whole disk), or None where that cannot be read (tmpfs)."""
    dev = os.stat(path).st_dev
    where = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
    try:
        where = where.resolve()
        if (where / "partition").exists():
            where = where.parent
        fields = (where / "stat").read_text().split()
        return int(fields[15]) if len(fields) > 15 else None
    except OSError:
        return None


def spied(argv: list[str], out: str) -> list[str]:
    return [PYSPY, "record", "-r", "500", "-f", "raw" if out.endswith(".txt") else "flamegraph", "-o", out, *argv]


@dataclass
class Run:
    samples: dict[str, list[float]]  # what -> ms, as own_reaction and reaction give them
    flush_p99: float  # ms: the probe's fdatasync under the server's state during the run


def run(opts: Options, poll: float | None) -> Run:
    base = Path(tempfile.mkdtemp(prefix="condb."))
    state = Path(tempfile.mkdtemp(prefix="condb.", dir=opts.server_state)) if opts.server_state else None
    config, sims = backends(opts.sessions, opts.turn)
    (base / "config.toml").write_text(config)
    (base / "work").mkdir()
    names = [f"s{i}" for i in range(opts.sessions)]
    chosen = sims if opts.agent == "sim" else ["instant"] * opts.sessions
    steps = lanes(opts.rounds) if opts.shape == "lanes" else barrier(opts.rounds)
    (base / "bench.toml").write_text(head(names, base / "work", chosen) + steps)
    traced = opts.trace and not poll
    if traced:  # trace/sitecustomize.py in the server and the conductor (both inherit the environment)
        (base / "trace").mkdir()
        os.environ["ANVILFS_TRACE_DIR"] = str(base / "trace")
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [TRACER, os.environ.get("PYTHONPATH")]))
    srv = start_server(base, state=state, extra_args=["--config", str(base / "config.toml")], trace=False)
    stamps, stop, timeline = [], threading.Event(), StealTimeline()
    watcher = threading.Thread(target=observe, args=(srv.socket, stamps, stop), daemon=True)
    spy = None
    try:
        watcher.start()
        argv = [sys.executable, "-m", "conductor", "run", "-a", srv.address, "--state", str(base / "st"),
                *(["--poll", str(poll)] if poll else []), str(base / "bench.toml")]
        if opts.profile and not poll:
            argv = spied(["--", *argv], opts.profile)
        if opts.profile_server and not poll:
            spy = subprocess.Popen(spied(["-p", str(srv.proc.pid)], opts.profile_server), stdout=subprocess.DEVNULL)
        flushes, began = device_flushes(srv.state), time.monotonic()
        with timeline, FlushProbe(srv.state) as probe:
            done = subprocess.run(argv, capture_output=True, text=True, cwd=opts.conductor_dir or REPO_ROOT,
                                  env=os.environ | {"PYTHONPATH": os.pathsep.join(
                                      filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}, timeout=600)
        if done.returncode != 0:
            raise SystemExit(f"conductor failed: {done.stdout}{done.stderr[-2000:]}")
        print(f"  the host's steal during the run: {timeline.share():.1%} of this VM's CPU time")
        print(f"  one 100-byte append and fdatasync under the server's state, every 50 ms during the run: "
              f"{probe.summary()}")
        if flushes is not None:  # what the disk under the server's state did (the conductor's too, if shared)
            flushes = device_flushes(srv.state) - flushes
            print(f"  device flushes under the server's state during the run: {flushes} "
                  f"({flushes / (time.monotonic() - began):.0f}/s, {flushes / (opts.sessions * opts.rounds):.1f} "
                  "per turn)")
        time.sleep(0.2)  # let the observer take the last lines (a benchmark, not a test)
    finally:
        if spy is not None:
            spy.send_signal(signal.SIGINT)  # py-spy writes its file and ends
            spy.wait(60)
        stop.set()
        srv.stop()
        if traced:
            reaction_trace.report(base / "trace")
            del os.environ["ANVILFS_TRACE_DIR"]
        shutil.rmtree(base, ignore_errors=True)
        if state:
            shutil.rmtree(state, ignore_errors=True)
    samples = own_reaction(stamps, timeline) | (reaction(stamps, opts.sessions) if opts.shape == "barrier" else {})
    return Run(samples, percentile(probe.times, 0.99) if probe.times else float("nan"))


OWN = "its own next prompt"  # the figure: a session's await to its own next prompt


def sitting(opts: Options, pairs: int) -> None:
    """Issue 33's target in one sitting: disk and /dev/shm runs, interleaved, then an fdatasync alone."""
    print(f"load average at the start: {_load()}")
    disk, shm, during = [], [], []
    for pair in range(1, pairs + 1):
        for where, p99s in ((None, disk), ("/dev/shm", shm)):
            opts.server_state = where
            done = run(opts, None)
            report(f"pair {pair}, server's state on {where or 'the disk'}, blocking", done.samples)
            p99s.append(_p99(done.samples[OWN]))
            if where is None:
                during.append(done.flush_p99)
    opts.server_state = None
    alone = percentile(fsync_floor.measure(tempfile.gettempdir()).times, 0.99)
    print(f"load average at the end: {_load()}")
    d, m = statistics.median(disk), statistics.median(shm)
    print(f"p99 await -> {OWN}, server's state on the disk: {d:.1f} ms  (each pair: {_ms(disk)})")
    print(f"p99 await -> {OWN}, server's state on /dev/shm: {m:.1f} ms  (each pair: {_ms(shm)})")
    print(f"p99 of one fdatasync on the disk ({tempfile.gettempdir()}), alone: {alone:.2f} ms  "
          f"(during the disk runs: {_ms(during)})")
    verdict = "holds" if d <= m + alone else f"misses by {d - m - alone:.1f} ms"
    print(f"target: disk p99 <= /dev/shm p99 + fdatasync p99: {d:.1f} <= {m:.1f} + {alone:.2f} = "
          f"{m + alone:.1f} ms: {verdict}")


def _p99(values: list[float]) -> float:
    return percentile(values, 0.99) if values else float("nan")


def _ms(values: list[float]) -> str:
    return ", ".join(f"{v:.1f}" for v in values)


def _load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def report(label: str, samples: dict[str, list[float]]) -> None:
    for what, values in samples.items():
        if not values:
            print(f"{label}, await -> {what}: no samples")
            continue
        values.sort()
        p99 = _p99(values)
        print(f"{label}, await -> {what}: {len(values)} samples, median {statistics.median(values):.1f} ms, "
              f"p99 {p99:.1f} ms, max {values[-1]:.1f} ms")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shape", choices=["lanes", "barrier"], default="lanes",
                   help="lanes: each session prompted again after its own await (an each); "
                        "barrier: each round prompts all and waits for all")
    p.add_argument("--sessions", type=int, default=100)
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--poll", type=float, default=1.0, help="the polling interval of the second run (0: skip it)")
    p.add_argument("--poll-rounds", type=int, default=10, help="rounds of the polling run (each takes a poll or two)")
    p.add_argument("--turn", type=float, default=1.0, help="a sim turn's seconds, spread 0.75-1.25x over the sessions")
    p.add_argument("--agent", choices=["sim", "true"], default="sim",
                   help="sim: the server's simulated agent (no process); "
                        "true: a command backend running `true`, one process per turn")
    p.add_argument("--server-state", metavar="DIR",
                   help="one blocking run with the server's state under DIR (/dev/shm: free fsyncs), not the sitting")
    p.add_argument("--pairs", type=int, default=1, help="the sitting's pairs of runs, disk and /dev/shm interleaved")
    p.add_argument("--profile", metavar="FILE", help="py-spy the blocking run's conductor into FILE (.svg or .txt)")
    p.add_argument("--profile-server", metavar="FILE", help="py-spy the blocking run's server into FILE")
    p.add_argument("--conductor-dir", metavar="DIR", help="run the conductor package in DIR (another commit's)")
    p.add_argument("--trace", action="store_true",
                   help="mark the reaction's steps in server and conductor, and print it taken apart")
    args = p.parse_args()
    opts = Options(args.shape, args.sessions, args.rounds, args.turn, args.agent, args.server_state, args.profile,
                   args.profile_server, args.conductor_dir, args.trace)
    what = f"{args.shape}, {args.sessions} sessions, turns of {args.turn:g} s"
    if args.server_state:
        report(f"blocking, {what}", run(opts, None).samples)
    else:
        print(f"{what}, {args.rounds} rounds")
        sitting(opts, args.pairs)
    if args.poll:
        opts.rounds = args.poll_rounds
        report(f"polling every {args.poll:g} s, {what}", run(opts, args.poll).samples)


if __name__ == "__main__":
    main()

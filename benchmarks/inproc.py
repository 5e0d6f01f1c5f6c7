"""The server's synchronous per-request path alone: a Connection fed frames in one process, no sockets.

    .venv/bin/python benchmarks/inproc.py                       # µs per operation of each case
    .venv/bin/python benchmarks/inproc.py --cases getattr_log   # one case (or several)
    .venv/bin/python benchmarks/inproc.py --profile out.prof    # cProfile of the status reads
    .venv/bin/python benchmarks/inproc.py --calls               # Python calls per operation (cProfile's count)

What it measures: the Python a request costs between the frame arriving and
its reply bytes being queued, which is what issue 11's ping-pong rows pay on
top of the system calls and the context switches (the same for every server).
An App with --sessions sim sessions `sNNNN` (no state directory: nothing is
written) is served by a Connection over a trio memory stream that is never
read; the frames of one operation (9P2000.L) are fed to it and its handling
is run the way its receive loop runs it, and the replies are dropped. One
operation of `status`: Twalk root -> sNNNN/status, Tlopen, Tread, Tread at
the end, Tclunk (5 RPCs, round robin over the sessions); of `null`: a Twalk
clone of the root and its Tclunk; of `poll100`: one of speed.py's poll100
phases, 100 requests of one kind in one receive (walks, then lopens, reads,
clunks, round robin), as the server meets them from a pipelining client; of `getattr`: what
Linux (v9fs, cache=none) sends to stat a file, a Twalk to sNNNN/status, its Tgetattr and Tclunk
(3 RPCs, round robin); of `getattr_log` and `getattr_out`: the same for s0001's `log` (about
1 MiB: five turns of 100 KiB prompts, whose answers quote them, not all ASCII) and its `out`
(the last answer, 100 KiB). Each figure is the best of --reps runs of --ops operations (the least disturbed by the
rest of the machine).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path

import trio
import trio.testing

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from anvilfs.app import App  # noqa: E402
from anvilfs.ninep import Dialect, codec_for  # noqa: E402
from anvilfs.ninep import messages as m  # noqa: E402
from anvilfs.server.connection import Connection  # noqa: E402
from anvilfs.server.serve import _settle_garbage_collector  # noqa: E402
from anvilfs.sessions import SessionLimits  # noqa: E402

ROOT, FILE = 1, 2


def frames(codec, *messages: m.Message) -> bytes:
    return b"".join(codec.encode(msg) for msg in messages)


def status_frames(codec, names: list[str]) -> list[bytes]:
    return [frames(codec,
                   m.Twalk(tag=1, fid=ROOT, newfid=FILE, wnames=(name, "status")),
                   m.Tlopen(tag=1, fid=FILE, flags=0),
                   m.Tread(tag=1, fid=FILE, offset=0, count=8192),
                   m.Tread(tag=1, fid=FILE, offset=len(b"idle simulated\n"), count=8192),
                   m.Tclunk(tag=1, fid=FILE))
            for name in names]


def poll_frames(codec, names: list[str]) -> list[bytes]:
    """poll100's four phases (speed.py): 100 walks in one receive, then 100 lopens, 100 reads, 100 clunks."""
    fids = list(enumerate(range(FILE, FILE + len(names))))  # (tag, fid)
    return [frames(codec, *(m.Twalk(tag=i, fid=ROOT, newfid=fid, wnames=(name, "status"))
                            for (i, fid), name in zip(fids, names))),
            frames(codec, *(m.Tlopen(tag=i, fid=fid, flags=0) for i, fid in fids)),
            frames(codec, *(m.Tread(tag=i, fid=fid, offset=0, count=8192) for i, fid in fids)),
            frames(codec, *(m.Tclunk(tag=i, fid=fid) for i, fid in fids))]


def getattr_frames(codec, names: list[str], file: str) -> list[bytes]:
    return [frames(codec,
                   m.Twalk(tag=1, fid=ROOT, newfid=FILE, wnames=(name, file)),
                   m.Tgetattr(tag=1, fid=FILE, request_mask=0x7FF),
                   m.Tclunk(tag=1, fid=FILE))
            for name in names]


def null_frames(codec) -> list[bytes]:
    return [frames(codec, m.Twalk(tag=1, fid=ROOT, newfid=FILE, wnames=()), m.Tclunk(tag=1, fid=FILE))]


class Fed:
    """A Connection whose frames come from `feed`; the replies of the last feed are kept in `replies`."""

    def __init__(self, app: App):
        stream, _ = trio.testing.memory_stream_pair()
        self.conn = Connection(stream, app.root)
        self.handshake()

    def handshake(self) -> None:
        p2000 = codec_for(Dialect.P2000)
        self.feed(p2000.encode(m.Tversion(tag=0xFFFF, msize=65536 + 24, version="9P2000.L")))
        self.codec = codec_for(Dialect.P2000L)
        self.feed(self.codec.encode(m.Tattach(tag=1, fid=ROOT, uname="bench", n_uname=0)))
        if self.codec.decode(self.replies).__class__ is not m.Rattach:
            raise SystemExit(f"the attach was refused: {self.codec.decode(self.replies)}")

    def feed(self, data: bytes) -> None:
        conn = self.conn
        conn._handle_frames(data)
        self.replies = bytes(conn._out)
        conn._out.clear()


def run_ops(fed: Fed, batches: list[bytes], ops: int) -> float:
    """Seconds for `ops` operations, going round `batches`."""
    feed, n = fed.feed, len(batches)
    began = time.perf_counter()
    for i in range(ops):
        feed(batches[i % n])
    return time.perf_counter() - began


async def main_async(args) -> None:
    async with trio.open_nursery() as nursery:
        app = App(limits=SessionLimits(max_sessions=max(256, args.sessions)))
        await nursery.start(app.run)
        fed = Fed(app)
        names = [f"s{i:04d}" for i in range(1, args.sessions + 1)]
        ctl = frames(fed.codec, m.Twalk(tag=1, fid=ROOT, newfid=FILE, wnames=("ctl",)),
                     m.Tlopen(tag=1, fid=FILE, flags=1))
        fed.feed(ctl)
        for name in names:
            fed.feed(frames(fed.codec, m.Twrite(tag=1, fid=FILE, offset=0, data=f"new sim /tmp name={name}\n".encode())))
        fed.feed(frames(fed.codec, m.Tclunk(tag=1, fid=FILE)))
        with trio.fail_after(30):
            while any(app.sessions.get(n).state.value == "starting" for n in names):
                await trio.sleep(0.01)  # the sims' start is their own tasks: a deadline bounds it
        fed.feed(status_frames(fed.codec, names[:1])[0])
        if b"idle simulated" not in fed.replies:
            raise SystemExit(f"unexpected status read: {fed.replies!r}")
        for batch in status_frames(fed.codec, names):  # every session's directory made once, as in a server
            fed.feed(batch)
        await long_turns(app, names[0])
        _settle_garbage_collector()  # as `serve` does once it has started
        cases = {"status": (status_frames(fed.codec, names), 5), "null": (null_frames(fed.codec), 2),
                 "poll100": (poll_frames(fed.codec, names[:100]), 100),  # an "operation" here is one phase
                 "getattr": (getattr_frames(fed.codec, names, "status"), 3),
                 "getattr_log": (getattr_frames(fed.codec, names[:1], "log"), 3),
                 "getattr_out": (getattr_frames(fed.codec, names[:1], "out"), 3)}
        cases = {what: case for what, case in cases.items() if not args.cases or what in args.cases}
        for what, (batches, rpcs) in cases.items():
            if args.profile or args.calls:
                prof = cProfile.Profile()
                prof.enable()
                run_ops(fed, batches, args.ops)
                prof.disable()
                stats = pstats.Stats(prof)
                print(f"{what}: {stats.total_calls / args.ops:.0f} Python calls per operation "
                      f"({stats.total_calls / args.ops / rpcs:.0f} per RPC)")
                if args.profile:
                    stats.dump_stats(f"{args.profile}.{what}")
                    stats.sort_stats("tottime").print_stats(25)
                continue
            best = min(run_ops(fed, batches, args.ops) for _ in range(args.reps))
            per = best / args.ops * 1e6
            print(f"{what}: {per:.1f} µs per operation, {per / rpcs:.1f} µs per RPC "
                  f"(best of {args.reps} runs of {args.ops})")
        nursery.cancel_scope.cancel()


async def long_turns(app: App, name: str, turns: int = 5, width: int = 100_000) -> None:
    """Give `name` a log of about 1 MiB: `turns` prompts whose first line is `width` bytes and a word not in ASCII,
    quoted by their answers (a length in bytes then needs the text encoded: ~1 ms a MiB)."""
    session = app.sessions.get(name)
    for turn in range(turns):
        app.sessions.submit(name, f"{turn} " + "x" * width + " café\n", "bench")  # not all ASCII, as answers often are
        with trio.fail_after(30):
            while session.turn_count <= turn or session.busy:
                await trio.sleep(0.01)  # the sim's turn is its own task: a deadline bounds it
    if len(session.log_text()) < turns * width * 2:
        raise SystemExit(f"the log of {name} is {len(session.log_text())} bytes: its turns did not run")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sessions", type=int, default=1000)
    p.add_argument("--ops", type=int, default=20000)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--profile", metavar="FILE", help="cProfile the operations into FILE.status, FILE.null, FILE.poll100")
    p.add_argument("--calls", action="store_true", help="print the Python calls per operation only")
    p.add_argument("--cases", nargs="+", metavar="CASE", help="run only these (status null poll100 getattr getattr_log getattr_out)")
    trio.run(main_async, p.parse_args())


if __name__ == "__main__":
    main()

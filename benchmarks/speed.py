"""anvilfs against diod 1.0.24 on the table of issue 11, in one interleaved run.

Run by hand (not by CI); it prints figures with their targets and asserts nothing:

    .venv/bin/python benchmarks/speed.py [--sections status1,null,...] [--reps 5] [--seconds 2]
        [--pin same|none] [--anvilfs-cmd CMD] [--floor] [--server-state DIR]

Sections (default all):
  status1  status reads from 1 connection       status8  the same from 8 connections
  null     null RPC round trip                   poll100  a poll of 100 sessions pipelined by phase
  cli      one `anvilfs read` process (and plan9port's `9p` as the reference)
  wake     item 3: a blocked `events` / `wait` read answered after the change, idle and under load
  scale    item 4: RSS, restart time and `list` read time with 1,000 sessions

The table rows use one C client (benchmarks/ninep_bench.c, built here with
gcc -O2) in 9P2000.L over a unix socket against both servers: anvilfs with
1,000 sim sessions s0001..s1000 made through its ctl, diod exporting 1,000
real files sNNNN/status with the same bytes. With --pin same (the default,
as in the issue) the servers and every client run on CPU 0. Each
repetition runs anvilfs, then diod; the ratio is taken per repetition and
the median of the ratios is the figure. --floor adds a third server to
the rows, benchmarks/floor_server.py: a minimal trio 9P server (requests
handled inline, replies batched per receive), the floor for CPython.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import cbench
import speed_cli
import speed_rows
import speed_scale
import speed_wake
from report import header, say
from servers import anvilfs_server, diod_missing, diod_server, floor_server

SECTIONS = ("status1", "status8", "null", "poll100", "cli", "wake", "scale")
SESSIONS = [f"s{i:04d}" for i in range(1, 1001)]
REPO = Path(__file__).resolve().parents[1]


def server_commit() -> str:
    """The commit of this checkout (the server measured unless --anvilfs-cmd says otherwise)."""
    try:
        out = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty"],
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 2)[2])
    ap.add_argument("--sections", default=",".join(SECTIONS),
                    help=f"comma-separated subset of {','.join(SECTIONS)} (default all)")
    ap.add_argument("--reps", type=int, default=5, help="repetitions of each row (default 5)")
    ap.add_argument("--seconds", type=float, default=2.0, help="measured seconds per repetition (default 2)")
    ap.add_argument("--samples", type=int, default=200, help="wake-up samples, idle and under load each (default 200)")
    ap.add_argument("--wake-client-cpu", type=int, default=None, metavar="N",
                    help="run the wake section's measuring client on CPU N (default: with the server when pinned)")
    ap.add_argument("--pin", choices=["same", "none"], default="same",
                    help="same: servers and clients all on CPU 0 (default); none: the OS decides")
    ap.add_argument("--floor", action="store_true",
                    help="run the table's rows on benchmarks/floor_server.py too: the least a trio server costs")
    ap.add_argument("--server-state", metavar="DIR",
                    help="keep anvilfs's socket and state under DIR (/dev/shm: its fsyncs cost nothing, so the "
                         "wake shows the server's own part without the disk's flush)")
    ap.add_argument("--anvilfs-cmd", metavar="CMD",
                    help="command that runs the anvilfs CLI instead of this checkout's "
                         "(e.g. '/work/main/.venv/bin/python -m anvilfs'); used for `serve` and for the cli row")
    args = ap.parse_args(argv)
    args.sections = [s for s in args.sections.split(",") if s]
    unknown = set(args.sections) - set(SECTIONS)
    if unknown:
        ap.error(f"unknown section(s): {', '.join(sorted(unknown))}")
    args.anvilfs_cmd = shlex.split(args.anvilfs_cmd) if args.anvilfs_cmd else None
    return args


def uncompiled() -> str | None:
    """Why this checkout's client and server would compile their modules at every start, or None."""
    source = Path(__file__).resolve().parents[1] / "anvilfs" / "cli.py"
    if os.environ.get("PYTHONDONTWRITEBYTECODE") and not Path(importlib.util.cache_from_source(str(source))).exists():
        return ("PYTHONDONTWRITEBYTECODE is set and anvilfs has no bytecode caches: every process compiles it "
                "(~40 ms of the cli row, ~0.3 s of a restart); run scripts/venv first")
    return None


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    pin = ("taskset", "-c", "0") if args.pin == "same" else ()
    table = [s for s in args.sections if s in speed_rows.ROWS]
    if table and (why := diod_missing()):
        print(f"speed.py: {why}", file=sys.stderr)
        return 2
    server = " ".join(args.anvilfs_cmd) if args.anvilfs_cmd else f"this checkout, {server_commit()}"
    header(f"anvilfs ({server}) against diod; 9P2000.L, unix socket, C client; pin {args.pin}; "
           f"{args.reps} reps of {args.seconds:g} s; sections {','.join(args.sections)}")
    if not args.anvilfs_cmd and (why := uncompiled()):
        say(f"# warning: {why}")
    binary = cbench.build()
    with tempfile.TemporaryDirectory(prefix="anvilfs-speed-") as tmpdir, contextlib.ExitStack() as stack:
        tmp = Path(tmpdir)
        if args.server_state:
            own = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="anvilfs-speed-", dir=args.server_state)))
        else:
            own = tmp / "anvilfs"
            own.mkdir()
        anvilfs, status, made = stack.enter_context(anvilfs_server(own, SESSIONS, args.anvilfs_cmd, pin))
        say(f"# anvilfs: {len(SESSIONS)} sim sessions made through ctl: all answered in {made[0]:.2f} s "
            f"(pipelined on one fid), none starting after {made[1]:.2f} s; status {status!r}")
        servers = [anvilfs]
        if table:
            (tmp / "diod").mkdir()
            servers.append(stack.enter_context(diod_server(tmp / "diod", SESSIONS, status, pin)))
        if table and args.floor:
            (tmp / "floor").mkdir()
            servers.append(stack.enter_context(floor_server(tmp / "floor", SESSIONS, status, pin)))
        if table:
            speed_rows.warm_up(binary, servers, pin)
        for key in table:
            speed_rows.run_row(key, binary, servers, args.reps, args.seconds, pin)
        if "cli" in args.sections:
            speed_cli.run_cli(anvilfs, status, args.anvilfs_cmd, pinned=bool(pin))
        if "wake" in args.sections:
            speed_wake.run_wake(anvilfs, binary, args.samples, pin, args.wake_client_cpu, state=own)
        if "scale" in args.sections:  # last: it restarts the server
            speed_scale.run_scale(anvilfs, own, binary, args.anvilfs_cmd, pin)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: many sessions on the per-turn command backend (run by hand; prints numbers).

    .venv/bin/python benchmarks/sessions.py [--sessions 200] [--turns 5]

Starts `anvilfs serve` with one command backend whose agent is a tiny shell
command (`cat` the prompt, then print the time it ends), creates N sessions,
and drives each over its own 9P connection: write a prompt to `in`, block
on `wait`, read `out`; T turns each, all sessions at once. The clients are
trio tasks in this one process, speaking 9P2000 through the project's
sans-IO codec (threads would make the GIL part of the latency). It prints:

- turns per second over the whole run;
- the server's resident memory (VmRSS at the end, VmHWM peak);
- the server's CPU time per turn;
- the latency from a turn ending (the agent's last act is printing
  time.time()-equivalent `date +%s.%N`) to the client's blocked `wait`
  read returning: median and p99. This includes the agent process
  exiting, the server reaping it, the state change and the 9P reply.

With --pace 0 every session prompts again the moment its turn ends, which
keeps this 2-core machine saturated (agents, server and clients share it),
so the latency then is mostly queueing. --pace P adds a think time of mean
P seconds, offering about N/P turns per second: the latency below capacity.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import trio

from anvilfs.client import Client, dial, resolve
from anvilfs.ninep import Dialect, FrameBuffer, decode, encode
from anvilfs.ninep import consts as c
from anvilfs.ninep import messages as m

CONFIG = '[backends.tiny]\nkind = "command"\nargv = ["sh", "-c", "cat; date +%s.%N"]\n[limits]\nmax_sessions = 100000\n'


def start(base: Path) -> subprocess.Popen:
    (base / "config.toml").write_text(CONFIG)
    env = os.environ | {"XDG_CONFIG_HOME": str(base / "xdg")}
    program = ["/tmp/profserve.py"] if os.environ.get("PROFILE") else ["-m", "anvilfs"]
    proc = subprocess.Popen([sys.executable, *program, "serve", "--namespace", str(base / "ns"),
                             "--state", str(base / "state"), "--config", str(base / "config.toml")],
                            env=env, stderr=open(base / "server.log", "w"))
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            connect(base).close()
            return proc
        except Exception:
            time.sleep(0.05)
    raise SystemExit(f"server did not start:\n{(base / 'server.log').read_text()}")


def connect(base: Path) -> Client:
    return Client(dial(resolve("x", f"unix!{base / 'ns' / 'agent'}")))


def write(client: Client, path: str, data: bytes) -> None:
    fid = client.open(path, c.OWRITE)
    try:
        client.write_chunk(fid, 0, data)
    finally:
        client.clunk(fid)


class AsyncClient:
    """Just enough of a 9P2000 client for the benchmark, on trio, one request at a time."""

    def __init__(self, stream: trio.SocketStream):
        self.stream = stream
        self.frames = FrameBuffer(1 << 20)
        self.next_fid = 1

    @classmethod
    async def connect(cls, base: Path) -> AsyncClient:
        self = cls(await trio.open_unix_socket(str(base / "ns" / "agent")))
        await self.rpc(m.Tversion(tag=c.NOTAG, msize=65536, version="9P2000"))
        await self.rpc(m.Tattach(tag=0, fid=0, uname="bench"))
        return self

    async def rpc(self, msg: m.Message) -> m.Message:
        await self.stream.send_all(encode(msg, Dialect.P2000))
        while (frame := self.frames.next_frame()) is None:
            self.frames.feed(await self.stream.receive_some(65536))
        reply = decode(frame, Dialect.P2000)
        if isinstance(reply, m.Rerror):
            raise RuntimeError(reply.ename)
        return reply

    async def open(self, path: str, mode: int) -> int:
        fid, self.next_fid = self.next_fid, self.next_fid + 1
        await self.rpc(m.Twalk(tag=1, fid=0, newfid=fid, wnames=tuple(path.split("/"))))
        await self.rpc(m.Topen(tag=1, fid=fid, mode=mode))
        return fid

    async def write(self, path: str, data: bytes) -> None:
        fid = await self.open(path, c.OWRITE)
        await self.rpc(m.Twrite(tag=1, fid=fid, offset=0, data=data))
        await self.rpc(m.Tclunk(tag=1, fid=fid))

    async def read(self, path: str) -> bytes:
        fid, out = await self.open(path, c.OREAD), bytearray()
        while data := (await self.rpc(m.Tread(tag=1, fid=fid, offset=len(out), count=65000))).data:
            out += data
        await self.rpc(m.Tclunk(tag=1, fid=fid))
        return bytes(out)


async def drive(base: Path, name: str, turns: int, latencies: list[float], errors: list[str], pace: float) -> None:
    rng = random.Random(name)
    try:
        client = await AsyncClient.connect(base)
        for turn in range(turns):
            if pace:
                await trio.sleep(rng.uniform(0, 2 * pace))  # think time: offered load = sessions / pace
            await client.write(f"{name}/in", f"turn {turn} of {name}\n".encode())
            status = await client.read(f"{name}/wait")
            returned = time.time()
            out = (await client.read(f"{name}/out")).decode()
            if status != b"await\n":
                errors.append(f"{name}: wait gave {status!r}")
                continue
            latencies.append(returned - float(out.strip().splitlines()[-1]))
        await client.stream.aclose()
    except Exception as exc:
        errors.append(f"{name}: {type(exc).__name__}: {exc}")


async def drive_all(base: Path, names: list[str], turns: int, latencies: list[float], errors: list[str], pace: float) -> None:
    async with trio.open_nursery() as nursery:
        for name in names:
            nursery.start_soon(drive, base, name, turns, latencies, errors, pace)


def cpu_seconds(pid: int) -> float:
    """utime + stime of the process (its own threads, not its children)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def memory(pid: int) -> dict[str, int]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) // 1024
    return fields


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--pace", type=float, default=0.0,
                        help="mean think time between a session's turns, seconds (0: prompt again at once, saturating)")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="anvb.", dir="/tmp"))
    proc = start(base)
    try:
        names = [f"b{i}" for i in range(args.sessions)]
        with connect(base) as client:
            for name in names:
                write(client, "ctl", f"new tiny /tmp name={name}\n".encode())
        latencies: list[float] = []
        errors: list[str] = []
        began, cpu_before = time.monotonic(), cpu_seconds(proc.pid)
        trio.run(drive_all, base, names, args.turns, latencies, errors, args.pace)
        elapsed, cpu = time.monotonic() - began, cpu_seconds(proc.pid) - cpu_before
        mem = memory(proc.pid)
        total = len(latencies)
        lat = sorted(x * 1000 for x in latencies)
        print(f"{args.sessions} sessions x {args.turns} turns, pace {args.pace:g} s: "
              f"{total} turns in {elapsed:.2f} s = {total / elapsed:.1f} turns/s")
        print(f"server cpu: {cpu:.2f} s = {cpu / max(total, 1) * 1000:.2f} ms per turn ({cpu / elapsed:.0%} of one core)")
        print(f"server memory: VmRSS {mem['VmRSS']} MB, peak VmHWM {mem['VmHWM']} MB (target < 200 MB)")
        if lat:
            p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
            print(f"turn end -> wait returns: median {statistics.median(lat):.2f} ms, p99 {p99:.2f} ms, "
                  f"max {lat[-1]:.2f} ms (target p99 < 5 ms)")
        if errors:
            print(f"{len(errors)} errors, first: {errors[0]}")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()

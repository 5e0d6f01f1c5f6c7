"""``anvilfs serve`` under ``strace -f``: every flush it (or what it starts) makes, and from which thread.

    srv = start_traced(base)                     # the server, strace's child; srv.proc is strace
    ... load ...                                 # time.time() before and after: the window to look at
    stop_traced(srv)
    trace = FlushTrace.read(base / TRACE, server_pid(srv))
    trace.flushes                                # [Flush(when, tid, call, path, where)]

`where` says whose the flush was: "loop" (the thread running trio's event
loop: the one that waits in epoll_wait, trio's I/O wait on Linux; Python
threads carry no name of their own a trace could show), "thread" (another
thread of the server, e.g. the database's writer), or "child" (a process
it started, e.g. git). Threads belong to the server by the clone calls
(CLONE_THREAD) that made them, all traced.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from .server import AnvilServer, start_server

TRACE = "flushes.strace"
FLUSH_CALLS = ("fsync", "fdatasync", "sync_file_range", "syncfs", "msync", "sync")
LOOP_WAITS = ("epoll_wait", "epoll_pwait", "epoll_pwait2")
_CLONES = ("clone", "clone3")
_LINE = re.compile(r"^(\d+) +(\d+\.\d+) (?:<\.\.\. (\w+) resumed>(.*)|(\w+)\((.*))$")


def start_traced(base: Path, **kwargs) -> AnvilServer:
    """A server under strace, which writes what it saw to base/TRACE."""
    calls = ",".join(FLUSH_CALLS + LOOP_WAITS + _CLONES)
    # -ttt: seconds since the epoch, to compare with time.time(); -y: a descriptor's path;
    # --seccomp-bpf: only the traced calls stop the server (the others run at full speed)
    strace = ["strace", "-f", "-qq", "-ttt", "-y", "--seccomp-bpf", f"--trace={calls}", "-o", str(base / TRACE), "--"]
    return start_server(base, wrap=strace, **kwargs)


def server_pid(srv: AnvilServer) -> int:
    """The server's own process: strace's only child."""
    children = Path(f"/proc/{srv.proc.pid}/task/{srv.proc.pid}/children").read_text().split()
    assert len(children) == 1, f"strace has children {children}, not one server"
    return int(children[0])


def stop_traced(srv: AnvilServer, pid: int, timeout: float = 30) -> int:
    """SIGTERM to the server itself (not to strace, which would let it go); strace ends with it."""
    try:
        os.kill(pid, signal.SIGTERM)
        srv.proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        srv.stop(sig=signal.SIGKILL)
    srv.returncode = srv.proc.returncode
    return srv.returncode


@dataclass(frozen=True)
class Flush:
    when: float
    tid: int
    call: str
    path: str  # what the descriptor named, as strace -y shows it
    where: str  # loop, thread or child

    def __str__(self) -> str:
        return f"{self.when:.6f} {self.where} {self.tid} {self.call}({self.path})"


@dataclass
class FlushTrace:
    pid: int
    loop_tids: set[int]
    flushes: list[Flush]

    @classmethod
    def read(cls, path: Path, pid: int) -> FlushTrace:
        calls, clones, pending = [], [], {}
        for line in path.read_text(errors="replace").splitlines():
            if not (m := _LINE.match(line)):
                continue  # a signal, an exit: nothing to count
            tid, when, resumed, rest_resumed, call, args = m.groups()
            tid, when = int(tid), float(when)
            if resumed:  # the end of a call another thread's line interrupted
                if resumed in _CLONES and tid in pending:
                    clones.append((tid, pending.pop(tid) + rest_resumed))
                continue
            if call in _CLONES:
                if args.endswith("<unfinished ...>"):
                    pending[tid] = args
                else:
                    clones.append((tid, args))
            elif call in FLUSH_CALLS or call in LOOP_WAITS:
                calls.append((when, tid, call, args))
        threads = _threads_of(pid, clones)
        loop_tids = {tid for _, tid, call, _ in calls if call in LOOP_WAITS and tid in threads}
        flushes = [Flush(when, tid, call, _descriptor(args), _where(tid, threads, loop_tids))
                   for when, tid, call, args in calls if call in FLUSH_CALLS]
        return cls(pid, loop_tids, flushes)

    def between(self, start: float, end: float) -> list[Flush]:
        return [f for f in self.flushes if start <= f.when <= end]

    @staticmethod
    def assert_none_in_loop(flushes: list[Flush]) -> None:
        """The check every flush test makes: not one of `flushes` came from the event loop's thread."""
        in_loop = [f for f in flushes if f.where == "loop"]
        assert not in_loop, (f"{len(in_loop)} of {len(flushes)} flushes came from the event loop's thread:\n"
                             f"{FlushTrace.summary(in_loop)}")

    @staticmethod
    def summary(flushes: list[Flush]) -> str:
        """How many of each call from each kind of thread, and the paths they flushed."""
        counts = Counter((f.where, f.call) for f in flushes)
        lines = [f"{n:6d} {call} from the {where}" for (where, call), n in sorted(counts.items())]
        paths = Counter((f.where, f.call, _shape(f.path)) for f in flushes)
        lines += [f"{n:6d} {where} {call} {path}" for (where, call, path), n in paths.most_common(30)]
        return "\n".join(lines)


def _threads_of(pid: int, clones: list[tuple[int, str]]) -> set[int]:
    """The server's threads: its main one, and those its threads made with CLONE_THREAD."""
    threads, grew = {pid}, True
    while grew:
        grew = False
        for parent, text in clones:
            result = re.search(r"= (\d+)", text.rsplit(")", 1)[-1])
            if parent in threads and "CLONE_THREAD" in text and result and int(result.group(1)) not in threads:
                threads.add(int(result.group(1)))
                grew = True
    return threads


def _where(tid: int, threads: set[int], loop_tids: set[int]) -> str:
    return "loop" if tid in loop_tids else "thread" if tid in threads else "child"


def _descriptor(args: str) -> str:
    m = re.match(r"\d+<(.*?)>(?:[,)]| <unfinished)", args)
    return m.group(1) if m else args.split(",")[0]


def _shape(path: str) -> str:
    """A path with its varying parts (temp dir, numbers, ids) made alike, to count kinds of files."""
    path = re.sub(r"^.*?/state(?=/|$)", "STATE", path)
    path = re.sub(r"/objects/[0-9a-f]{2}(/[0-9a-f]+|/tmp_obj_\w+)?", "/objects/XX", path)
    path = re.sub(r"\.[0-9a-f]{12}\.tmp$", ".TMP", path)
    return re.sub(r"\d+", "N", path)

"""Event-loop stalls, measured inside the server: for benchmarks, off unless asked for.

    ANVILFS_STALLS=PATH [ANVILFS_STALLS_MS=5] anvilfs serve ...

One trio task step runs with the loop held: while it runs no other client is
answered. With ANVILFS_STALLS set, each step that took longer than
ANVILFS_STALLS_MS milliseconds (default 5) appends a line to PATH:

    EPOCH_SECONDS MILLISECONDS TASK_NAME CPU_MILLISECONDS RUNQUEUE_MILLISECONDS

(benchmarks/reads.py reads the longest of a time window). The line is
written after the step, outside any measured time; nothing else is timed.
The CPU time is the thread's in the step: on a machine shared with other
work, a step's wall time can be many times the work it did. The run-queue
time (Linux's /proc/thread-self/schedstat; `-` where there is none) is how
long the thread was ready but waited for a core; what the wall time has
beyond the two, the thread slept: blocked on a system call or waiting for
the interpreter's lock while another thread (the writer) ran. Collections
of the garbage collector over the threshold get a line of their own, their
task `gc.generationN` (they happen within a step, and count in its time).
"""

from __future__ import annotations

import gc
import os
import time

import trio

ENV, ENV_MS = "ANVILFS_STALLS", "ANVILFS_STALLS_MS"


class StallLog(trio.abc.Instrument):
    """Times each task step; the ones over `threshold` seconds go to `path`, one line each.

    It runs at every step, so after a step it reads the clock alone, and the thread's CPU time and its wait
    on a run queue only after a long one. Before a step it reads them only if it last did BASELINE seconds
    ago or more: each read is a system call or two (in this VM, a fifth of the loop's time in reads.py when
    read at every step), and a step's CPU and wait then count at most BASELINE of the steps just before it.
    (schedstat's CPU field is not used: Linux updates it at a tick or a switch, up to 4 ms behind, where
    thread_time asks for the time now.)"""

    BASELINE = 0.0005  # seconds

    def __init__(self, path: str, threshold: float):
        self.path, self.threshold = path, threshold
        self._began = self._gc_began = self._gc_cpu = 0.0
        self._began_cpu = self._began_queued = 0  # nanoseconds
        self._baseline_at = float("-inf")  # when they were read
        self._clock = time.perf_counter
        self._schedstat: int | None = None  # opened at the first step, in the loop's own thread

    def _sched(self) -> tuple[int, int]:
        """This thread's CPU nanoseconds so far and its nanoseconds on a run queue (-1 where Linux does not say)."""
        if self._schedstat is None:
            try:
                self._schedstat = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
            except OSError:
                self._schedstat = -1
        cpu = time.thread_time_ns()
        return cpu, -1 if self._schedstat < 0 else int(os.pread(self._schedstat, 128, 0).split()[1])

    def collected(self, phase: str, info: dict) -> None:
        """gc.callbacks: times each collection, logged as a step is."""
        if phase == "start":
            self._gc_began, self._gc_cpu = self._clock(), time.thread_time()
            return
        took, cpu = self._clock() - self._gc_began, time.thread_time() - self._gc_cpu
        if took > self.threshold:
            with open(self.path, "a") as out:
                out.write(f"{time.time():.3f} {took * 1000:.1f} gc.generation{info['generation']} {cpu * 1000:.1f} -\n")

    def before_task_step(self, task) -> None:
        began = self._clock()
        if began - self._baseline_at >= self.BASELINE:
            self._began_cpu, self._began_queued = self._sched()
            self._baseline_at = began
        self._began = began

    def after_task_step(self, task) -> None:
        ended = self._clock()
        took = ended - self._began
        if took > self.threshold:
            cpu, queued = self._sched()
            runq = "-" if queued < 0 else f"{(queued - self._began_queued) / 1e6:.1f}"
            line = f"{time.time():.3f} {took * 1000:.1f} {task.name} {(cpu - self._began_cpu) / 1e6:.1f} {runq}\n"
            self._began_cpu, self._began_queued, self._baseline_at = cpu, queued, ended  # the next step's, fresh
            with open(self.path, "a") as out:
                out.write(line)


def from_environment() -> list[trio.abc.Instrument]:
    """The instruments trio.run should get: a StallLog when ANVILFS_STALLS names a file, else none."""
    path = os.environ.get(ENV)
    if not path:
        return []
    log = StallLog(path, float(os.environ.get(ENV_MS, "5")) / 1000)
    gc.callbacks.append(log.collected)
    return [log]

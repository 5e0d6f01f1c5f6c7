"""Printing benchmark figures next to their targets, and the machine's state at the start."""

from __future__ import annotations

import bisect
import os
import platform
import statistics
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

BUSY_LOAD = 0.5  # 1-minute load average above which the numbers are not to be trusted


@dataclass(frozen=True)
class Target:
    """`value OP limit` is what the issue asks for; OP is ">=" or "<="."""

    op: str
    limit: float
    unit: str = ""

    def met(self, value: float) -> bool:
        return value >= self.limit if self.op == ">=" else value <= self.limit

    def text(self) -> str:
        return f"{self.op} {self.limit:g}{self.unit}"


def say(line: str = "") -> None:
    print(line, flush=True)


def figure(name: str, value: float, unit: str, target: Target | None, note: str = "") -> None:
    """One figure with its target and OK/MISS (or no verdict if it has no target)."""
    verdict = f"target {target.text():>10}  {'OK' if target.met(value) else 'MISS'}" if target else ""
    say(f"  {name:44} {value:10.{_digits(value)}f} {unit:8} {verdict}{'  ' + note if note else ''}")


def _digits(value: float) -> int:
    return 0 if abs(value) >= 100 else 2 if abs(value) < 10 else 1


def spread(values: Sequence[float]) -> str:
    """median (min-max) of a few repetitions, for the notes."""
    median, low, high = statistics.median(values), min(values), max(values)
    return f"{median:.{_digits(median)}f} ({low:.{_digits(low)}f}-{high:.{_digits(high)}f})"


def percentile(values: Sequence[float], p: float) -> float:
    """The p-th fraction (0..1) of values by nearest rank."""
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(p * (len(s) - 1))))]


class _Sampling:
    """A thread that takes a sample (`_take`) at once and then every `every` s, while the block runs."""

    def __init__(self, every: float) -> None:
        self.every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        while True:
            self._take()
            if self._stop.wait(self.every):
                return

    def _take(self) -> None:
        raise NotImplementedError


class FlushProbe(_Sampling):
    """What one durable write costs on the disk under `where` while the block runs: a thread appends 100
    bytes to a file of its own there and fdatasyncs them every `every` s (adding that many flushes to
    the disk's own), and keeps the times. The floor of any latency with such a write on its path,
    taken in the same seconds as that latency; `fsync_floor.py` takes it alone."""

    def __init__(self, where: str | os.PathLike, every: float = 0.05) -> None:
        super().__init__(every)
        self.where = where
        self.times: list[float] = []  # ms each write and fdatasync took
        self._fd, self._path = -1, ""

    def __enter__(self) -> FlushProbe:
        self._fd, self._path = tempfile.mkstemp(dir=self.where, prefix="flush-probe.")
        return super().__enter__()

    def __exit__(self, *exc) -> None:
        try:
            super().__exit__(*exc)
        finally:
            os.close(self._fd)
            os.unlink(self._path)

    def _take(self) -> None:
        began = time.perf_counter()
        os.write(self._fd, b"x" * 100)
        os.fdatasync(self._fd)
        self.times.append((time.perf_counter() - began) * 1000)

    def summary(self) -> str:
        if not self.times:
            return "no samples"
        return (f"{len(self.times)} samples, median {percentile(self.times, 0.5):.2f} ms, "
                f"p90 {percentile(self.times, 0.9):.2f} ms, p99 {percentile(self.times, 0.99):.2f} ms, "
                f"max {max(self.times):.2f} ms")


class StealTimeline(_Sampling):
    """The host's steal (the `st` of vmstat: this VM's CPU time its host gave to others) sampled every
    `every` s by a thread while the block runs. A virtual CPU that is stolen from stalls whatever runs
    on it, so a latency's tail is printed with the run's `share()`, and `quiet()` tells the samples
    taken while the host took nothing from those taken while it did. /proc/stat counts in 10 ms
    ticks, so a stretch is quiet if less than about a tick (per CPU) was stolen in it; 0 where the
    kernel does not count steal."""

    def __init__(self, every: float = 0.05) -> None:
        super().__init__(every)
        self._points: list[tuple[float, int, int]] = []  # (monotonic, steal jiffies, all jiffies)
        self._times: list[float] = []  # the points' times, for bisect: made once the sampling ended

    def __exit__(self, *exc) -> None:
        super().__exit__(*exc)
        self._times = [t for t, _, _ in self._points]

    def _take(self) -> None:
        self._points.append((time.monotonic(), *_cpu_times()))

    def share(self) -> float:
        """The steal's share of all CPU time from the first sample to the last."""
        (_, steal0, all0), (_, steal1, all1) = self._points[0], self._points[-1]
        return (steal1 - steal0) / (all1 - all0) if all1 > all0 else 0.0

    def quiet(self, start: float) -> bool:
        """No steal counted in the two sampling intervals from the last sample before `start`: the same
        stretch (0.05-0.1 s) for a sample of any length under `every`, so that a slow sample is not
        likelier to be counted stolen only for being long."""
        i = bisect.bisect_right(self._times, start) - 1
        if i < 0 or i + 2 >= len(self._times):
            return False  # not covered by the sampling: counted as not quiet
        return self._points[i][1] == self._points[i + 2][1]


def _cpu_times() -> tuple[int, int]:
    """(steal, all) jiffies of the machine's CPUs, from the first line of /proc/stat."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except OSError:
        return 0, 0
    # user nice system idle iowait irq softirq steal [guest guest_nice, already counted in user]
    return (fields[7] if len(fields) > 7 else 0), sum(fields[:8])


def header(description: str) -> None:
    load = os.getloadavg()
    say(f"# {time.strftime('%Y-%m-%d %H:%M')}  {platform.node()}  {platform.machine()}  {os.cpu_count()} cpus  "
        f"Python {platform.python_version()}  load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    if load[0] > BUSY_LOAD:
        say(f"# warning: the machine is busy (1-minute load {load[0]:.2f} > {BUSY_LOAD}): "
            "figures will be low and noisy")
    say(f"# {description}")

"""The stall log of benchmarks (anvilfs/server/stalls.py): a long task step is logged with its work and waits."""

from __future__ import annotations

import time

import trio

from anvilfs.server.stalls import StallLog


def _spin(seconds: float) -> None:
    """Hold the loop with `seconds` of this thread's CPU time: no checkpoint, no sleep."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_a_step_over_the_threshold_is_logged_with_its_task_its_cpu_and_its_wait(tmp_path):
    """(Whether a short step is left out is the fake clock's test below: on a loaded machine any step, even a
    checkpoint's, can take 20 ms of wall time, as one did in a CI run.)"""
    path = tmp_path / "stalls"

    async def busy():
        _spin(0.03)
        await trio.lowlevel.checkpoint()

    async def asleep():
        time.sleep(0.03)  # blocked in a system call, the loop held all the same
        await trio.lowlevel.checkpoint()

    async def main():
        async with trio.open_nursery() as nursery:
            nursery.start_soon(busy, name="busy")
            nursery.start_soon(asleep, name="asleep")

    trio.run(main, instruments=[StallLog(str(path), 0.02)])
    lines = {fields[2]: fields for fields in (line.split() for line in path.read_text().splitlines())}
    assert {"busy", "asleep"} <= set(lines), lines
    busy_took, busy_cpu = float(lines["busy"][1]), float(lines["busy"][3])
    assert busy_took >= 30 and busy_cpu >= 30, lines["busy"]  # its CPU time is the step's own
    asleep_took, asleep_cpu = float(lines["asleep"][1]), float(lines["asleep"][3])
    assert asleep_took >= 30 and asleep_cpu < asleep_took, lines["asleep"]
    assert all(fields[4] == "-" or float(fields[4]) >= 0 for fields in lines.values()), lines  # the run-queue wait


def test_quick_steps_are_not_logged_and_read_the_threads_clocks_once_a_baseline(tmp_path):
    """Steps under the threshold leave no line; and before a step the CPU and run-queue figures are read only
    when the last read is BASELINE old: 200 steps of a microsecond each (a fake clock) read them once or
    twice, not 200 times. (A long step refreshes them at its end: the test above has a step right after a
    long one count only its own CPU.)"""
    reads = []
    log = StallLog(str(tmp_path / "stalls"), 0.02)
    ticks = iter(range(10**9))
    log._clock = lambda: next(ticks) * 1e-6
    real_sched = log._sched

    def counted():
        reads.append(1)
        return real_sched()
    log._sched = counted

    async def main():
        for _ in range(200):
            await trio.lowlevel.checkpoint()

    trio.run(main, instruments=[log])
    assert 1 <= len(reads) <= 2, len(reads)
    assert not (tmp_path / "stalls").exists()  # no step over the threshold: not a line

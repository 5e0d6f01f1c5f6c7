"""Benchmark: the git history of the state directory (run by hand; prints numbers).

    .venv/bin/python benchmarks/history.py [--existing 10000] [--creates 2000]

All with real git, fsync on (core.fsync=all), in a fresh state directory
under /tmp (--dir to put it on another disk). It prints:

- record(): the cost of one call (an fsynced journal append), median and p99;
- durable creates per second, all in: write_atomic of a bead file + record(),
  with GitHistory.run committing in groups meanwhile, and how long after the
  last create everything was in history, and in how many commits;
- commits per second when every change is flushed alone (record + flush);
- the time to commit 1,000 pending changes at once (a restart's recovery).

--existing N first commits N bead files, because `git add` looks at every
tracked file: the cost of a commit grows with the number of beads.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import tempfile
import time

import trio

from anvilfs.storage import GitHistory, PrivateDir


def bead(i: int, rev: int = 0) -> bytes:
    return f'id = "bench-{i:05d}"\ntitle = "Bead number {i}"\nstatus = "pending"\nrev = {rev}\n'.encode()


def commits(state: str) -> int:
    out = subprocess.run(["git", "--git-dir", f"{state}/.git", "rev-list", "--count", "--all"],
                         capture_output=True, text=True, env={"GIT_CONFIG_NOSYSTEM": "1", "PATH": "/usr/bin:/bin"})
    return int(out.stdout.strip() or 0)


async def prefill(root: PrivateDir, history: GitHistory, n: int) -> None:
    beads = root.subdir("beads")
    for i in range(n):
        beads.write_atomic(f"old-{i:05d}.toml", bead(i))
    history.record(f"Created: {n} existing beads")
    await history.flush()


def bench_record(history: GitHistory, n: int) -> None:
    costs = []
    for i in range(n):
        start = time.perf_counter()
        history.record(f"Updated: bench-{i:05d}")
        costs.append(time.perf_counter() - start)
    costs.sort()
    print(f"record():               median {statistics.median(costs) * 1e3:.3f} ms, "
          f"p99 {costs[int(len(costs) * 0.99)] * 1e3:.3f} ms  ({n} calls)")


async def bench_creates(root: PrivateDir, history: GitHistory, n: int, state: str) -> None:
    beads = root.subdir("beads")
    before = commits(state)
    async with trio.open_nursery() as nursery:
        await nursery.start(history.run)
        start = time.perf_counter()
        for i in range(n):
            beads.write_atomic(f"bench-{i:05d}.toml", bead(i))
            history.record(f"Created: bench-{i:05d} Bead number {i}")
            await trio.sleep(0)  # the next request; lets the history task run between them
        answered = time.perf_counter()
        await history.wait_committed()
        done = time.perf_counter()
        nursery.cancel_scope.cancel()
    print(f"durable creates:        {n / (answered - start):.0f}/s  (write_atomic + record, {n} beads, "
          f"history committing meanwhile)")
    print(f"  all in history:       {(done - answered) * 1e3:.0f} ms after the last answer, "
          f"{commits(state) - before} commits")


async def bench_single_commits(root: PrivateDir, history: GitHistory, n: int) -> None:
    beads = root.subdir("beads")
    start = time.perf_counter()
    for i in range(n):
        beads.write_atomic(f"bench-{i:05d}.toml", bead(i, rev=1))
        history.record(f"Completed: bench-{i:05d}")
        await history.flush()
    elapsed = time.perf_counter() - start
    print(f"commits one by one:     {n / elapsed:.1f}/s  ({elapsed / n * 1e3:.1f} ms each: add + commit)")


async def bench_pending(root: PrivateDir, history: GitHistory, n: int) -> None:
    beads = root.subdir("beads")
    for i in range(n):
        beads.write_atomic(f"bench-{i:05d}.toml", bead(i, rev=2))
        history.record(f"Updated: bench-{i:05d}")
    start = time.perf_counter()
    await history.flush()
    print(f"{n} pending changes:  committed in {(time.perf_counter() - start) * 1e3:.0f} ms (one commit)")


async def main(args) -> None:
    state = tempfile.mkdtemp(prefix="anvh.", dir=args.dir)
    try:
        root = PrivateDir(state)
        history = GitHistory(root, on_error=lambda text: print("error:", text))
        try:
            if args.existing:
                start = time.perf_counter()
                await prefill(root, history, args.existing)
                print(f"{args.existing} existing beads committed in {time.perf_counter() - start:.1f} s")
            bench_record(history, args.records)
            await history.flush()
            await bench_creates(root, history, args.creates, state)
            await bench_single_commits(root, history, args.commits)
            await bench_pending(root, history, 1000)
        finally:
            history.close()
    finally:
        shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--existing", type=int, default=0, help="bead files committed before measuring")
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--creates", type=int, default=2000)
    parser.add_argument("--commits", type=int, default=50)
    parser.add_argument("--dir", default="/tmp", help="where to make the state directory")
    trio.run(main, parser.parse_args())

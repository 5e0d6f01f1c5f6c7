"""Benchmark: the git history of the state directory (run by hand; prints numbers).

    .venv/bin/python benchmarks/history.py [--existing 10000] [--creates 2000]

All with real git, fsync on (core.fsync=all), in a fresh state directory
under /tmp (--dir to put it on another disk). It prints:

- record(): the cost of one call in the event loop (it only queues the message
  for the database's writer thread), and until it is on disk (one SQLite commit);
- durable creates per second, all in: a bead's file and its message, one job of
  the writer thread (TomlObjects.write), each awaited as a request is, with
  GitHistory.run committing in groups meanwhile, and how long after the
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

from anvilfs.storage import HISTORY_SCHEMA, Database, GitHistory, PrivateDir, TomlObjects


def bead(i: int, rev: int = 0) -> dict:
    return {"id": f"bench-{i:05d}", "title": f"Bead number {i}", "status": "pending", "rev": rev}


def commits(state: str) -> int:
    out = subprocess.run(["git", "--git-dir", f"{state}/.git", "rev-list", "--count", "--all"],
                         capture_output=True, text=True, env={"GIT_CONFIG_NOSYSTEM": "1", "PATH": "/usr/bin:/bin"})
    return int(out.stdout.strip() or 0)


async def prefill(beads: TomlObjects, history: GitHistory, n: int) -> None:
    for i in range(n):
        beads.write(f"old-{i:05d}", bead(i), new=True)
    await history.record(f"Created: {n} existing beads").wait()
    await history.flush()


async def bench_record(history: GitHistory, n: int) -> None:
    costs, durable = [], []
    for i in range(n):
        start = time.perf_counter()
        commit = history.record(f"Updated: bench-{i:05d}")
        costs.append(time.perf_counter() - start)
        await commit.wait()
        durable.append(time.perf_counter() - start)
    costs.sort()
    durable.sort()
    print(f"record():               median {statistics.median(costs) * 1e3:.3f} ms, "
          f"p99 {costs[int(len(costs) * 0.99)] * 1e3:.3f} ms  ({n} calls, in the loop)")
    print(f"  until on disk:        median {statistics.median(durable) * 1e3:.3f} ms, "
          f"p99 {durable[int(len(durable) * 0.99)] * 1e3:.3f} ms")


async def bench_creates(beads: TomlObjects, history: GitHistory, n: int, state: str) -> None:
    before = commits(state)
    async with trio.open_nursery() as nursery:
        await nursery.start(history.run)
        start = time.perf_counter()
        for i in range(n):  # each answered once on disk, as the server answers a request
            await beads.write(f"bench-{i:05d}", bead(i), new=True, message=f"Created: bench-{i:05d} Bead number {i}").wait()
        answered = time.perf_counter()
        await history.wait_committed()
        done = time.perf_counter()
        nursery.cancel_scope.cancel()
    print(f"durable creates:        {n / (answered - start):.0f}/s  (file + message, one job each, {n} beads, "
          f"history committing meanwhile)")
    print(f"  all in history:       {(done - answered) * 1e3:.0f} ms after the last answer, "
          f"{commits(state) - before} commits")


async def bench_single_commits(beads: TomlObjects, history: GitHistory, n: int) -> None:
    start = time.perf_counter()
    for i in range(n):
        beads.write(f"bench-{i:05d}", bead(i, rev=1), message=f"Completed: bench-{i:05d}")
        await history.flush()
    elapsed = time.perf_counter() - start
    print(f"commits one by one:     {n / elapsed:.1f}/s  ({elapsed / n * 1e3:.1f} ms each: add + commit)")


async def bench_pending(beads: TomlObjects, history: GitHistory, n: int) -> None:
    for i in range(n):
        commit = beads.write(f"bench-{i:05d}", bead(i, rev=2), message=f"Updated: bench-{i:05d}")
    await commit.wait()
    start = time.perf_counter()
    await history.flush()
    print(f"{n} pending changes:  committed in {(time.perf_counter() - start) * 1e3:.0f} ms (one commit)")


async def main(args) -> None:
    state = tempfile.mkdtemp(prefix="anvh.", dir=args.dir)
    try:
        root = PrivateDir(state)
        db = Database(root, "anvilfs.db", HISTORY_SCHEMA)
        history = GitHistory(root, db, on_error=lambda text: print("error:", text))
        beads = TomlObjects(root.subdir("beads"), "bead", db, history)
        try:
            if args.existing:
                start = time.perf_counter()
                await prefill(beads, history, args.existing)
                print(f"{args.existing} existing beads committed in {time.perf_counter() - start:.1f} s")
            await bench_record(history, args.records)
            await history.flush()
            await bench_creates(beads, history, args.creates, state)
            await bench_single_commits(beads, history, args.commits)
            await bench_pending(beads, history, 1000)
        finally:
            history.close()
            db.close()
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

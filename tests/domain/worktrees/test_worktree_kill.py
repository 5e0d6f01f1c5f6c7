"""SIGKILL of a process running merge steps, at random moments and at each named point: nothing lost, nothing twice.

After each kill the start-up repair runs, then the checks: no worktree
mid-rebase or mid-merge, `git fsck` clean, REPO's checkout clean and on
the base, the base's history linear, every bead's work in the base or in
its kept branch, every commit a session made reachable from the base or
its branch (or, rebased, in the branch's reflog), and no bead's commit in
the base twice. The queue then goes on from where it was, until each
entry is merged or in conflict.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys

import pytest
import trio

from anvilfs.faults import ENV as KILL_AT
from anvilfs.worktrees import claim, complete, create, merge_path_for, repair
from harness.deadlines import within
from harness.worktrees import GIT, check_repository, git, write

RUNNER = os.path.join(os.path.dirname(__file__), "merge_runner.py")
SESSION_RUNNER = os.path.join(os.path.dirname(__file__), "session_runner.py")
PROJECT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
GATE = ("sh", "-c", "sleep 0.2; test -f README")  # long enough for kills to land inside gates too
POINTS = ("worktrees-before-rebase", "worktrees-in-conflict", "worktrees-after-rebase", "worktrees-before-refs", "worktrees-between-refs",
          "worktrees-after-refs")


class Queue:
    """Sessions completing beads (each writing its own file; two editing one line), and the entries file."""

    def __init__(self, tmp_path):
        self.path = str(tmp_path / "entries.json")
        self.work: dict[str, tuple[str, str]] = {}
        self.tips: dict[str, str] = {}  # each bead's commit as its session completed it
        self.sessions = []

    async def add(self, repo, root, beads: int, clash: bool = False) -> None:
        if not self.sessions:
            self.sessions = [await create(GIT, repo, root, f"dev{n}") for n in range(3)]
        first = len(self.work)
        more = {f"b{n:03d}-001": (f"work/b{n:03d}.txt", f"bead {n}\n") for n in range(first, first + beads)}
        if clash:
            more.update({bead: ("shared.txt", f"one\ntwo by {bead}\nthree\n") for bead in ("clash-001", "clash-002")})
        for n, (bead, (name, text)) in enumerate(more.items()):
            wt = self.sessions[n % 3]
            await claim(GIT, wt, bead)
            write(os.path.join(wt.path, name), text)
            done = await complete(GIT, wt, bead)
            assert done.own_commits == 1
            self.tips[bead] = done.tip
        self.work.update(more)
        repo = self.sessions[0].repo
        with open(self.path, "w") as file:
            json.dump([dict(bead=b, branch=f"anvil/bead/{b}", repo=repo, base="main") for b in self.work], file)


def runner_env(point: str = "") -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") and k != KILL_AT}
    env["PYTHONPATH"] = PROJECT + os.pathsep + env.get("PYTHONPATH", "")
    if point:
        env[KILL_AT] = point
    return env


def argv(repo, root, tmp_path, entries) -> list[str]:
    return [sys.executable, RUNNER, repo, root, str(tmp_path / "progress.json"), entries, *GATE]


def progress(tmp_path) -> dict[str, str]:
    try:
        with open(tmp_path / "progress.json") as file:
            return json.load(file)
    except FileNotFoundError:
        return {}


async def check_after_repair(repo, root, queue: Queue, power_cut: bool = False) -> None:
    merges = merge_path_for(root, repo)
    with within(120, "the start-up repair (it waits for the killed runner's git and gates)"):
        repaired = await repair(GIT, repo, merges, lock_wait=90)
    if power_cut:  # a git killed between its lock and its rename: the repair names the lock, a person removes it
        heads = os.path.join(repo, ".git", "refs", "heads")
        assert all(lock.startswith(heads + os.sep) for lock in repaired.stale_locks), repaired.stale_locks
        for lock in repaired.stale_locks:
            os.unlink(lock)
    else:
        assert repaired.stale_locks == ()
    check_repository(repo, queue.work, queue.tips, on_main=not power_cut)


def descendants(pid: int) -> list[int]:
    """The processes below `pid` now (from /proc): a runner's gits and gates, each in a session of its own."""
    children: dict[int, list[int]] = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat") as file:
                parent = int(file.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
        children.setdefault(parent, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def cut_the_power(pid: int) -> None:
    """SIGKILL the runner and everything it started, frozen first so that none escapes: as a power cut would."""
    os.kill(pid, signal.SIGSTOP)
    frozen: set[int] = set()
    for _ in range(3):  # a child may have been starting its own child as we froze it
        for child in set(descendants(pid)) - frozen:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGSTOP)
            frozen.add(child)
    for victim in (*frozen, pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(victim, signal.SIGKILL)


async def run_to_the_end(repo, root, tmp_path, entries) -> None:
    log = tmp_path / "runner.log"
    with open(log, "ab") as out:
        try:
            with within(180, "the runner to merge what is left"):
                done = await trio.run_process(argv(repo, root, tmp_path, entries), env=runner_env(), check=False,
                                              stdout=out, stderr=out)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; its last steps:\n{log.read_text()[-3000:]}") from None
    assert done.returncode == 0, log.read_text()[-3000:]


def check_the_end(repo, tmp_path) -> None:
    states = progress(tmp_path)
    assert sorted(states.values()).count("conflict") == 1 and {states["clash-001"], states["clash-002"]} == {
        "merged", "conflict"}
    assert all(state == "merged" for bead, state in states.items() if not bead.startswith("clash"))
    subjects = git(repo, "log", "--format=%s", "main").splitlines()
    assert all(subjects.count(bead) == 1 for bead, state in states.items() if state == "merged")


@pytest.mark.timeout(900)
@pytest.mark.parametrize("power_cut", [False, True], ids=["server-killed", "power-cut"])
async def test_sigkill_at_twenty_random_moments_loses_nothing_and_merges_nothing_twice(repo, root, tmp_path,
                                                                                       power_cut):
    """server-killed: the runner alone dies, its git and gates finish. power-cut: everything dies at once, git
    too (REPO then has another branch checked out: a checkout half updated is a person's to look at)."""
    if power_cut:
        git(repo, "switch", "-q", "-c", "elsewhere")
    seed = random.randrange(1 << 30)
    chance = random.Random(seed)
    queue = Queue(tmp_path)
    with within(120, "the queue's beads"):
        await queue.add(repo, root, 10, clash=True)
    entries = queue.path
    kills = 0
    while kills < 20:
        runner = await trio.lowlevel.open_process(argv(repo, root, tmp_path, entries), env=runner_env(),
                                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with trio.move_on_after(chance.uniform(0.3, 1.5)):
            await runner.wait()
        if runner.returncode is None:
            if power_cut:
                cut_the_power(runner.pid)
            else:
                runner.send_signal(signal.SIGKILL)  # the runner alone, as a server is killed: its git finishes
            kills += 1
        with within(30, f"the killed runner to be gone (seed {seed})"):
            await runner.wait()
        await check_after_repair(repo, root, queue, power_cut)
        if runner.returncode == 0:  # the queue ran out before the twentieth kill: more beads
            with within(120, "more beads"):
                await queue.add(repo, root, 10)
    await run_to_the_end(repo, root, tmp_path, entries)
    await check_after_repair(repo, root, queue, power_cut)
    check_the_end(repo, tmp_path)


@pytest.mark.parametrize("point", POINTS)
async def test_sigkill_at_each_point_of_a_step(repo, root, tmp_path, point):
    queue = Queue(tmp_path)
    with within(120, "the queue's beads"):
        await queue.add(repo, root, 1, clash=True)
    entries = queue.path
    with within(120, f"the runner to kill itself at {point}"):
        killed = await trio.run_process(argv(repo, root, tmp_path, entries), env=runner_env(point), check=False,
                                        capture_stdout=True, capture_stderr=True)
    assert killed.returncode == -signal.SIGKILL, f"the runner never reached {point}: {killed.stderr.decode()}"
    await check_after_repair(repo, root, queue)
    await run_to_the_end(repo, root, tmp_path, entries)
    await check_after_repair(repo, root, queue)
    check_the_end(repo, tmp_path)


@pytest.mark.parametrize("point", ["worktrees-complete-added", "worktrees-complete-committed"])
async def test_a_complete_killed_midway_completes_once_when_asked_again(repo, root, point):
    with within(30, "a claimed bead with work left uncommitted"):
        wt = await create(GIT, repo, root, "dev1")
        await claim(GIT, wt, "a-001")
    write(os.path.join(wt.path, "a.txt"), "from a\n")
    record = json.dumps(dict(session=wt.session, repo=wt.repo, path=wt.path, base=wt.base, branch=wt.branch))
    with within(60, f"complete to kill itself at {point}"):
        killed = await trio.run_process([sys.executable, SESSION_RUNNER, record, "a-001"], env=runner_env(point),
                                        check=False, capture_stdout=True, capture_stderr=True)
    assert killed.returncode == -signal.SIGKILL, f"complete never reached {point}: {killed.stderr.decode()}"
    with within(30, "complete again"):
        done = await complete(GIT, wt, "a-001", "by the runner")
    assert done.own_commits == 1 and git(repo, "show", f"{done.tip}:a.txt") == "from a"
    assert git(wt.path, "status", "--porcelain") == "" and git(wt.path, "symbolic-ref", "-q", "HEAD", check=False) == ""

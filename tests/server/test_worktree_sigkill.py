"""SIGKILL of a real `anvilfs serve` at twenty random moments while worktree sessions complete beads and the merge
queue merges them (issue 31): after each restart nothing is mid-rebase, the queue goes on, nothing is merged twice
and no commit is lost.

Three sim sessions work in worktrees of one repository. A driver (a thread,
playing the agents and a conductor over one 9P connection) takes the beads
in turn: claim for a session, write the bead's own file in that session's
worktree, complete. Meanwhile the server's queue merges the completed
branches, each through a gate that sleeps a little, so that kills land
inside merge steps too (the gate and the step's git outlive the killed
server). The main thread kills the server with SIGKILL after a random delay
(the stimulus, not a synchronisation: the seed is in every failure's
message), starts it again on the same state directory and waits, with a
deadline, for the queue to settle (every completed bead merged, no entry
queued or merging). Then, with the driver stopped and every git the killed
server left running finished, it checks the repository:

    no worktree mid-rebase, mid-merge or mid-cherry-pick
    `git fsck` clean; REPO's checkout on main and clean; main linear (no merge commit)
    each bead's commit ("BEAD: TITLE") in main at most once, exactly once when merged, adding its file alone
    every commit a bead's branch had when it completed kept (main, the branch, or the branch's reflog)
    a session's worktree holds no change but the file of the bead it is working on

A verb whose answer the kill took is sent again, as a client would: the
driver reads the bead's status first (claim again while it is pending,
complete again while it is in progress). Any verb the server answers with an
error fails the test.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from anvilfs.client import ServerError
from harness.server import AnvilServer, start_server
from harness.worktrees import git, git_env, kept, make_repo, mid_operation, status, write

KILLS = 20
SESSIONS = ("dev1", "dev2", "dev3")
BEADS = 12  # made at the start; six more whenever the driver has finished all of them before the last kill
DELAY = (0.3, 3.0)  # seconds the driver runs before a kill: the stimulus, drawn from the seeded RNG
SETTLE = 120  # seconds for the queue to merge what was completed: far beyond what it needs
GATE = ("sh", "-c", "sleep 0.3; test -f README")  # a gate long enough for kills to land inside merge steps
GONE = 60  # seconds for the killed server's git processes to finish

pytestmark = pytest.mark.timeout(900)


class Rig:
    """The repository, the server on its state directory, the beads and what the test knows of them."""

    def __init__(self, base: Path, seed: int):
        self.base, self.seed = base, seed
        self.repo = make_repo(base / "repo")
        config = base / "xdg-config" / "anvilfs" / "config.toml"  # where start_server points the server
        config.parent.mkdir(parents=True)
        config.write_text(f'[repos."{self.repo}"]\ngates = {json.dumps([list(GATE)])}\n')
        self.starts = 0
        self.srv: AnvilServer = self.start()
        self.paths: dict[str, str] = {}  # session -> its worktree
        self.beads: list[str] = []  # in the order the driver takes them
        self.owner: dict[str, str] = {}  # bead -> the session it is worked by
        self.work: dict[str, tuple[str, str, str]] = {}  # bead -> (title, file, text)
        self.tips: dict[str, str] = {}  # bead -> the commit its complete made (its worktree's HEAD after)
        self.done: set[str] = set()

    # ------------------------------------------------------------ the server

    def start(self) -> AnvilServer:
        self.starts += 1
        return start_server(self.base, trace=False, timeout=60, log_name=f"server{self.starts}.log")

    def log_tail(self) -> str:
        return "\n".join(self.srv.trace().splitlines()[-60:])

    def why(self, what: str) -> str:
        """A failure's message: what went wrong, the seed, and what the queue and the server said."""
        try:
            with self.srv.connect("checker", timeout=10) as client:
                listing = client.read_file("merges/list").decode()
                beads = client.read_file("beads/list").decode()
        except Exception as exc:  # noqa: BLE001 - the message is for a failure already on its way
            listing = beads = f"(unreadable: {exc!r})"
        return (f"{what}\n(seed {self.seed}, server start {self.starts})\nagent/merges/list:\n{listing}"
                f"agent/beads/list:\n{beads}--- server log {self.starts} (tail) ---\n{self.log_tail()}")

    # ------------------------------------------------------------ sessions and beads, made with no kill pending

    def sessions(self) -> None:
        with self.srv.connect("conductor", timeout=60) as client:
            for name in SESSIONS:
                client.write_file("ctl", f"new sim {self.repo} worktree name={name}".encode())
                self.paths[name] = client.read_file(f"{name}/worktree").decode().strip()
        assert all(self.paths.values()), self.paths

    def more_beads(self, count: int) -> None:
        with self.srv.connect("conductor", timeout=60) as client:
            for _ in range(count):
                n = len(self.beads)
                title = f"work {n}"
                bead = client.read_back("beads/ctl", f'new "{title}" dev "write work/{n}.txt"'.encode()).decode()
                bead = bead.strip()
                self.beads.append(bead)
                self.owner[bead] = SESSIONS[n % len(SESSIONS)]
                self.work[bead] = (title, f"work/{n}.txt", f"bead {bead}, the work of {title}\n")

    def completed(self, bead: str) -> None:
        """The commit the complete made: the session's worktree is left detached at it until its next claim."""
        path = self.paths[self.owner[bead]]
        title, name, text = self.work[bead]
        head = git(path, "rev-parse", "HEAD")
        assert git(path, "log", "-1", "--format=%s", head) == f"{bead}: {title}", self.why(f"{bead}'s commit {head}")
        assert git(path, "show", f"{head}:{name}") + "\n" == text, self.why(f"{bead}'s commit lacks its file")
        assert git(path, "symbolic-ref", "-q", "HEAD", check=False) == "", self.why(f"{path} not detached")
        self.tips[bead] = head
        self.done.add(bead)

    def unfinished(self) -> list[str]:
        return [b for b in self.beads if b not in self.done]


class Driver(threading.Thread):
    """Claims, writes and completes the unfinished beads in order until the server is killed (or all are done)."""

    def __init__(self, rig: Rig):
        super().__init__(daemon=True)
        self.rig = rig
        self.failure: BaseException | None = None
        self.killing = threading.Event()  # set just before the kill: a broken connection is expected then
        self.cut = False  # the kill ended this round's connection

    def run(self) -> None:
        try:
            with self.rig.srv.connect("conductor", timeout=30) as client:
                for bead in self.rig.unfinished():
                    self.finish(client, bead)
        except (OSError, ConnectionError) as exc:
            if not self.killing.is_set():  # a server that stopped answering, or died, by itself
                self.failure = exc
            self.cut = True  # the server was killed: the next round goes on from what the server says
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread, which fails the test with it
            self.failure = exc

    def finish(self, client, bead: str) -> None:
        rig, session = self.rig, self.rig.owner[bead]
        _, name, text = rig.work[bead]
        for _ in range(10):  # each turn moves the bead on by one verb
            state = client.read_file(f"beads/{bead}/status").decode().strip()
            holder = client.read_file(f"beads/{bead}/assigned_to").decode().strip()
            if state == "completed":
                rig.completed(bead)
                return
            if state == "pending":
                self.verb(client, bead, f"claim {session}")
            elif state == "in_progress" and holder == session:
                write(os.path.join(rig.paths[session], name), text)  # the agent's edit, left uncommitted
                self.verb(client, bead, "complete done")
            else:
                raise AssertionError(f"bead {bead} is {state} by {holder!r}; the driver gave it to {session}")
        raise AssertionError(f"bead {bead} did not complete in ten verbs")

    def verb(self, client, bead: str, line: str) -> None:
        try:
            client.write_file(f"beads/{bead}/ctl", line.encode())
        except ServerError as exc:
            raise AssertionError(f"beads/{bead}/ctl <- {line!r} refused: {exc}") from None


# ------------------------------------------------------------ waits, each with its deadline


def left_running(base: Path) -> dict[int, str]:
    """The processes working under `base` now, with their directory (a killed server's gits, which it started in
    sessions of their own)."""
    found = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            cwd = os.readlink(f"/proc/{entry}/cwd")
        except OSError:
            continue  # gone meanwhile, or not ours
        if cwd == str(base) or cwd.startswith(str(base) + os.sep):
            found[int(entry)] = cwd
    return found


def wait_gone(rig: Rig, pids) -> None:
    deadline = time.monotonic() + GONE
    while alive := {p for p in pids if os.path.exists(f"/proc/{p}")}:
        assert time.monotonic() < deadline, rig.why(f"the killed server's processes {sorted(alive)} still run "
                                                     f"after {GONE} s")
        time.sleep(0.05)  # polling other processes' end, bounded by the deadline


def entries(client) -> dict[str, tuple[str, str]]:
    """agent/merges/list: bead -> (state, detail)."""
    found = {}
    for line in client.read_file("merges/list").decode().splitlines():
        bead, _branch, state, *detail = line.split(" ", 3)
        found[bead] = (state, detail[0] if detail else "")
    return found


def statuses(client) -> dict[str, str]:
    return {line.split()[0]: line.split()[1] for line in client.read_file("beads/list").decode().splitlines()}


def settle(rig: Rig) -> dict[str, tuple[str, str]]:
    """Wait until every completed bead's entry is merged and no entry is queued or merging; fail at once on an
    entry the queue gave up on or a completed bead sent back for rework."""
    deadline = time.monotonic() + SETTLE
    with rig.srv.connect("checker", timeout=30) as client:
        while True:
            now, beads = entries(client), statuses(client)
            # a completion whose answer the kill took is completed all the same: the checks must know its commit
            for bead in rig.unfinished():
                if beads.get(bead) == "completed":
                    rig.completed(bead)
            given_up = {b: e for b, e in now.items() if e[0] in ("conflict", "gate-failed")}
            assert not given_up, rig.why(f"the queue gave up on {given_up}: the beads write distinct files")
            back = [b for b in rig.done if beads.get(b) != "completed"]
            assert not back, rig.why(f"completed beads are {[beads.get(b) for b in back]} again: {back}")
            waiting = [b for b in rig.done if now.get(b, ("",))[0] != "merged"]
            busy = [b for b, e in now.items() if e[0] in ("queued", "merging")]
            if not waiting and not busy:
                return now
            assert time.monotonic() < deadline, rig.why(
                f"the queue did not settle within {SETTLE} s: not merged {waiting}, queued or merging {busy}")
            time.sleep(0.1)  # polling the server's progress, bounded by the deadline


# ------------------------------------------------------------ the checks


def changes_in_main(repo: str) -> dict[str, list[str]]:
    """Each commit of main by its subject: the files it changes (`git log --name-status`)."""
    found: dict[str, list[str]] = {}
    for commit in git(repo, "log", "--format=%x00%s", "--name-status", "main").split("\0")[1:]:
        subject, *files = [line for line in commit.splitlines() if line]
        found[subject] = files
    return found


def check(rig: Rig) -> None:
    """What the repository must be after each restart, once the queue settled and every killed git finished."""
    with rig.srv.connect("checker", timeout=30) as client:
        beads = statuses(client)
        merged = {b for b, (state, _) in entries(client).items() if state == "merged"}
    repo = rig.repo
    for line in git(repo, "worktree", "list", "--porcelain").splitlines():
        if line.startswith("worktree "):
            path = line.split(" ", 1)[1]
            assert mid_operation(path) == [], rig.why(f"{path} is left in {mid_operation(path)}")
    fsck = subprocess.run(["git", "fsck", "--no-progress"], cwd=repo, env=git_env(), capture_output=True, text=True,
                          timeout=GONE)
    assert fsck.returncode == 0, rig.why(f"git fsck: {fsck.stdout}{fsck.stderr}")
    assert git(repo, "symbolic-ref", "--short", "HEAD") == "main", rig.why("REPO is no longer on main")
    assert status(repo) == "", rig.why(f"REPO's checkout is not clean:\n{status(repo)}")
    assert git(repo, "rev-list", "--merges", "main") == "", rig.why("main has a merge commit")
    for session, path in rig.paths.items():
        mine = [rig.work[b][1] for b in rig.beads if rig.owner[b] == session and beads.get(b) == "in_progress"]
        dirty = [line[3:] for line in status(path).splitlines()]
        assert set(dirty) <= set(mine), rig.why(f"{path} holds {dirty}; only {mine} is being worked on there")
    subjects = git(repo, "log", "--format=%s", "main").splitlines()
    changed = changes_in_main(repo)
    for bead in rig.beads:
        title, name, text = rig.work[bead]
        times = subjects.count(f"{bead}: {title}")
        assert times == (1 if bead in merged else 0), rig.why(f"{bead} is in main {times} times, its entry "
                                                              f"{'merged' if bead in merged else 'not merged'}")
        if bead in merged:
            assert changed[f"{bead}: {title}"] == [f"A\t{name}"], rig.why(
                f"{bead}'s commit in main changes {changed[f'{bead}: {title}']}, not its own file {name} alone")
            assert git(repo, "show", f"main:{name}", check=False) + "\n" == text, rig.why(f"{name} not in main")
        if bead in rig.tips:
            assert kept(repo, rig.tips[bead], f"refs/heads/anvil/bead/{bead}"), rig.why(
                f"{bead}'s commit {rig.tips[bead]} is lost")


def test_sigkill_at_twenty_random_moments_while_beads_complete_and_the_queue_merges():
    seed = int(os.environ.get("ANVILFS_KILL_SEED") or random.randrange(1 << 30))
    print(f"seed {seed} (ANVILFS_KILL_SEED={seed} runs it again)")
    chance = random.Random(seed)
    base = Path(tempfile.mkdtemp(prefix="anvw.", dir="/tmp"))
    rig = None
    try:
        rig = Rig(base, seed)
        rig.sessions()
        rig.more_beads(BEADS)
        cut = in_step = 0
        for kill in range(KILLS):
            driver = Driver(rig)
            driver.start()
            time.sleep(chance.uniform(*DELAY))  # the stimulus: how long the driver and the queue run
            driver.killing.set()
            rig.srv.stop(sig=signal.SIGKILL)
            left = left_running(base)
            driver.join(timeout=60)
            assert not driver.is_alive(), rig.why("the driver did not end after the kill")
            if driver.failure is not None:
                raise AssertionError(rig.why(f"kill {kill + 1}: {driver.failure}")) from driver.failure
            cut += driver.cut
            in_step += any("/.merge-" in cwd for cwd in left.values())  # a kill inside a merge step's git
            rig.srv = rig.start()
            settle(rig)
            wait_gone(rig, left)
            check(rig)
            if not rig.unfinished() and kill < KILLS - 1:
                rig.more_beads(6)
        driver = Driver(rig)
        driver.start()
        driver.join(timeout=SETTLE)
        assert not driver.is_alive(), rig.why(f"the driver did not finish the beads within {SETTLE} s")
        if driver.failure is not None:
            raise AssertionError(rig.why(f"at the end: {driver.failure}")) from driver.failure
        final = settle(rig)
        check(rig)
        assert rig.unfinished() == [] and all(final[b][0] == "merged" for b in rig.beads), rig.why("not all merged")
        print(f"{len(rig.beads)} beads merged through {KILLS} SIGKILLs; the kill cut the driver short {cut} times, "
              f"a merge step's git {in_step} times")
    finally:
        if rig is not None:
            rig.srv.stop(sig=signal.SIGKILL)
        if not os.environ.get("ANVILFS_KILL_KEEP"):
            shutil.rmtree(base, ignore_errors=True)

"""The state directory's git repository: made by us, checked at every start, git run with safe options.

A repository is code waiting to run: its config can name a program for
core.fsmonitor, core.sshCommand, a clean filter or a hook, and git runs it
on a plain `git add`. So anvilfs runs git only on a repository whose
`.git/config` is byte for byte the one it wrote, with hooks and fsmonitor
off, no system or global config, and nothing from the caller's GIT_*
environment (a GIT_DIR there would point every command at another
repository).

One lock, `.git/anvilfs.lock` (flock), is held by the server for its life
and inherited by every git it starts. So a lock file of git's own that is
found once we hold it (index.lock, a ref's .lock) belongs to a git that is
dead: a server killed with its git, or a git that outlived a killed server
and has since finished. Removing it is then safe, and a second server on
the same state directory is refused instead of racing the first.
"""

from __future__ import annotations

import errno
import fcntl
import functools
import os
import shutil
import stat
import subprocess
import time

import trio

from .private import PrivateDir, StorageError

BRANCH = "main"
GIT_DIR = ".git"
_NEW_GIT_DIR = ".git-new"  # a repository being made; renamed to .git once complete
_LOCK = "anvilfs.lock"

# What anvilfs writes as .git/config, and the only config it will run git on.
CONFIG = b"""\
# Written by anvilfs. anvilfs runs git on this repository only while this
# file is exactly as written: a changed config could make git run commands.
[core]
\trepositoryformatversion = 0
\tfilemode = true
\tbare = false
\tlogallrefupdates = true
"""

# The history is background work: nothing answered waits for it (a change's message is in anvilfs.db
# first), yet with a change every 50 ms on 10,000 beads its git took half a core of two (a fifth since
# commit_index), and the server's loop waited for a core behind it, 15-23 ms at a time (issue 32 item 6).
# Niced (10), the waits were 1-9 ms.
# SCHED_IDLE (chrt --idle) did better still (0-1.6 ms) but starves git on a machine kept busy: a test
# suite's workers, or agents building, would hold history, and a test waiting for a commit, for minutes.
# A clean stop's last commit runs as any task (GitRepository.urgent). Where nice is missing or refused,
# git runs as before.
@functools.cache
def background() -> tuple[str, ...]:
    """The command prefix that runs git as background work here (tried once: a refused one fails git too)."""
    prefix = ("nice", "-n", "10")
    if shutil.which(prefix[0]) and subprocess.run([*prefix, "true"], capture_output=True).returncode == 0:
        return prefix
    return ()


# Given on every command line, so they hold whatever a config file says.
OPTIONS = (
    "-c", "core.fsync=all", "-c", "core.fsyncMethod=fsync",
    "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false",
    # the user's ~/.config/git/ignore could hide beads/*.toml from `git add`
    "-c", "core.excludesFile=/dev/null", "-c", "core.attributesFile=/dev/null",
    "-c", "user.name=anvilfs", "-c", "user.email=anvilfs@localhost",
    "-c", "commit.gpgSign=false",
    "-c", "gc.autoDetach=false",  # an automatic gc stays a child we wait for, holding our lock
)


# `git commit` runs `git maintenance run --auto` after each commit (a gc once 6,700 objects are loose); the
# plumbing commit_index uses does not, so it runs it itself, every this many commits: a gc's look costs a
# process, and the threshold is thousands of objects.
MAINTAIN_EVERY = 32


class GitFailed(StorageError):
    """A git command that exited non-zero (a full disk, a broken repository); the text is git's."""


class GitRepository:
    """The repository at `root`/.git: made if missing, refused if not ours, locked for this process."""

    def __init__(self, root: PrivateDir, *, lock_timeout: float = 10.0):
        self.root = root
        self._env = _git_environment(root.path)
        if not os.path.lexists(os.path.join(root.path, GIT_DIR)):
            self._create()
        self.git_dir = _open_git_dir(root.path)
        try:
            _check_config(self.git_dir)
            self._lock_fd = _take_lock(self.git_dir, lock_timeout)
        except BaseException:
            self.git_dir.close()
            raise
        self.stale_locks_removed = _remove_stale_locks(self.git_dir.path)
        self._commits = 0  # made by commit_index, this run
        self._maintained = 0  # the count of commits at the last maintenance
        self._tip: str | None = None  # the branch's commit as last seen ("" before the first), None: not known
        self.urgent = False  # while set (a clean stop's flush), git runs as any task, not as background()
        background()  # tried here, at the start, not in the event loop's first commit

    def close(self) -> None:
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1
        self.git_dir.close()

    async def git(self, *args: str, stdin: bytes = b"") -> str:
        """Run `git ARGS` without blocking the event loop; its output, or GitFailed with its stderr."""
        result = await trio.run_process(
            [*(() if self.urgent else background()), "git", *OPTIONS, *args], stdin=stdin, capture_stdout=True,
            capture_stderr=True, check=False, env=self._env, cwd=self.root.path, pass_fds=(self._lock_fd,))
        if result.returncode:
            raise GitFailed(errno.EIO, f"git {args[0]} failed in {self.root.path} (exit {result.returncode}): "
                                       f"{result.stderr.decode(errors='replace').strip()}")
        return result.stdout.decode(errors="replace")

    def sync_branch(self) -> None:
        """Flush the directory of the branch's ref (blocking: call it in a thread). A commit's last step is its
        new ref renamed into place, and git flushes no directory: until this, or the next journal commit of
        anything, a power cut may undo the commit (an fdatasync of a file that did not grow commits none)."""
        fd = os.open(os.path.join(self.git_dir.path, "refs", "heads"), os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
                     | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    async def commit_index(self, message: str) -> None:
        """Commit the index as the branch's next commit, `message` verbatim, even when its tree is the last one's.

        Plumbing, not `git commit`, which stats every tracked file again (its refresh of the index) and, for
        each entry of a changed tree, looks for its blob (a stat per loose object): on 10,000 beads 35 of its
        46 ms, each round (issue 32 item 6). The blobs are the ones the `git add` before this wrote, so
        write-tree is told not to look, but at the run's first commit. The ref moves only from the tip last
        seen: a commit made by hand meanwhile makes this fail (the messages wait for the next round), never
        lose it."""
        # The first commit of a run looks for every blob of a changed tree, as `git commit` did: after a crash
        # the index may name one the disk lost (git flushes no object directory), and a commit naming it
        # would leave a history git can no longer read or gc. The round fails instead, reported.
        tree = (await self.git("write-tree", *(("--missing-ok",) if self._commits else ()))).strip()
        if self._tip is None:
            self._tip = (await self.git("for-each-ref", "--format=%(objectname)", f"refs/heads/{BRANCH}")).strip()
        parent = self._tip
        try:
            made = (await self.git("commit-tree", tree, *(("-p", parent) if parent else ()), "-F", "-",
                                   stdin=message.encode())).strip()
            await self.git("update-ref", "-m", "commit: " + message.partition("\n")[0], f"refs/heads/{BRANCH}",
                           made, parent or "0" * 40)
        except BaseException:
            self._tip = None  # moved or not: read again
            raise
        self._tip = made
        self._commits += 1

    async def maintain(self) -> None:
        """`git maintenance run --auto` after the first commit_index of a run, then every MAINTAIN_EVERY-th
        (once each); call it once a commit is on disk (sync_branch): it may fail, and a commit is made."""
        if self._commits % MAINTAIN_EVERY == 1 and self._maintained != self._commits:
            self._maintained = self._commits
            await self.git("maintenance", "run", "--auto", "--quiet")

    async def head_message(self) -> str:
        """The message of the branch's last commit; empty before the first."""
        return await self.git("for-each-ref", "--count=1", "--format=%(contents)", f"refs/heads/{BRANCH}")

    def _create(self) -> None:
        """git init into a side directory, write our config, then rename: .git exists only complete."""
        new_path = os.path.join(self.root.path, _NEW_GIT_DIR)
        if os.path.lexists(new_path):
            shutil.rmtree(new_path)  # a creation a crash interrupted (rmtree refuses a link)
        new = self.root.subdir(_NEW_GIT_DIR)
        try:
            env = {**self._env, "GIT_DIR": new.path, "GIT_COMMON_DIR": new.path}
            result = subprocess.run(["git", *OPTIONS, "init", "-q", f"--initial-branch={BRANCH}", "--template="],
                                    env=env, cwd=self.root.path, capture_output=True, check=False)
            if result.returncode:
                raise StorageError(errno.EIO, f"cannot make the history repository in {self.root.path}: "
                                              f"git init: {result.stderr.decode(errors='replace').strip()}")
            new.write_atomic("config", CONFIG)
            _sync_tree(new.path)
        finally:
            new.close()
        self.root.move(_NEW_GIT_DIR, self.root, GIT_DIR)


def _sync_tree(path: str) -> None:
    """fsync every file and directory git init made, deepest first: it flushes none of them (git 2.39, even with
    core.fsync=all), and a power cut in a new state directory's first moments left HEAD empty, every change
    answered since committed to a history git then refuses (tests/server/test_power_cuts.py found it)."""
    for where, _, files in os.walk(path, topdown=False):
        for name in [*files, ""]:  # the files, then the directory itself
            fd = os.open(os.path.join(where, name) if name else where, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


def _git_environment(work_tree: str) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith("GIT_")}
    git_dir = os.path.join(work_tree, GIT_DIR)
    # GIT_COMMON_DIR too: else a planted .git/commondir sends git to another repository's config
    env.update(GIT_DIR=git_dir, GIT_COMMON_DIR=git_dir, GIT_WORK_TREE=work_tree,
               GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null", GIT_TERMINAL_PROMPT="0", LC_ALL="C")
    return env


def _open_git_dir(root_path: str) -> PrivateDir:
    path = os.path.join(root_path, GIT_DIR)
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        # a `.git` file ("gitdir: ...") or link would send git to a repository anywhere
        raise StorageError(errno.EPERM, f"{path} is not a directory (a .git file or link points git elsewhere); "
                                        "anvilfs runs git only on the repository it made: move it away")
    return PrivateDir(path)


_REDIRECTS = ("commondir", "gitdir", "worktrees")  # what can make git read another repository's config


def _check_config(git_dir: PrivateDir) -> None:
    planted = [name for name in _REDIRECTS if os.path.lexists(os.path.join(git_dir.path, name))]
    if planted:
        raise StorageError(errno.EPERM, f"{git_dir.path} has {', '.join(planted)}, which anvilfs never makes (it can "
                                        "point git at another repository's config); move it away, then start again")
    config = git_dir.read("config")
    if config != CONFIG:
        state = "missing" if config is None else "not the one anvilfs wrote"
        raise StorageError(errno.EPERM, f"{git_dir.path}/config is {state}; anvilfs will not run git on this "
                                        "repository (a config can make git run commands). Check it, then move "
                                        f"{git_dir.path} away to start a new history, or restore the file")


def _take_lock(git_dir: PrivateDir, timeout: float) -> int:
    """Our flock, waiting a moment for gits a killed server left running to finish."""
    path = os.path.join(git_dir.path, _LOCK)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                raise StorageError(errno.EBUSY, f"another anvilfs server (or a git it started) is using the "
                                                f"history in {git_dir.path}; stop it, or use another --state") from None
            time.sleep(0.05)  # only at start, and only while an old git still runs


def _remove_stale_locks(git_dir: str) -> tuple[str, ...]:
    """git's own lock files (index.lock, HEAD.lock, refs/heads/main.lock): all left by a dead git."""
    removed = []
    for top, dirs, files in os.walk(git_dir):
        if top == os.path.join(git_dir, "objects"):
            dirs.clear()  # objects are never locked this way, and there are many
        for name in files:
            if name.endswith(".lock") and not (top == git_dir and name == _LOCK):
                os.unlink(os.path.join(top, name))
                removed.append(os.path.relpath(os.path.join(top, name), git_dir))
    return tuple(sorted(removed))

"""git on a user's repository, run the same careful way every time.

REPO belongs to the user: its config stays in force (a clean filter, LFS),
but nothing anvilfs starts may run the repository's hooks (the gates are the
configured ones), stash the user's changes (rebase.autoStash made another
tool restore a stash over a merge and lose it), move other branches
(rebase.updateRefs), start an editor, ask for a password, or take an
optional lock while only reading (`git status` in REPO must never race the
user's own git for index.lock), or refuse the merges it asks for (merge.ff
= only) or make merge commits of a rebase (rebase.rebaseMerges). Nothing of the caller's GIT_* environment
passes (a GIT_DIR there would point every command at another repository).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from . import process
from .errors import GitFailed, GitTimedOut

OPTIONS = (
    "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "commit.gpgSign=false",
    "-c", "rebase.autoStash=false", "-c", "merge.autoStash=false", "-c", "rebase.updateRefs=false",
    "-c", "rebase.autoSquash=false", "-c", "rebase.rebaseMerges=false", "-c", "merge.ff=true",
    "-c", "commit.verbose=false", "-c", "commit.cleanup=strip",
    "-c", "rerere.enabled=false", "-c", "gc.auto=0", "-c", "maintenance.auto=false",
    "-c", "advice.detachedHead=false", "-c", "core.quotePath=false",
)

TIMEOUT = 60.0  # seconds for a git command unless the caller says otherwise


@dataclass(frozen=True, slots=True)
class Identity:
    name: str
    email: str


ANVILFS = Identity("anvilfs", "anvilfs@localhost")


@dataclass(frozen=True, slots=True)
class Git:
    """How to run git: the committer of what anvilfs commits, the time allowed, fds the children inherit."""

    committer: Identity = ANVILFS
    timeout: float = TIMEOUT
    pass_fds: tuple[int, ...] = ()
    extra_env: Mapping[str, str] = field(default_factory=dict)

    def environment(self, author: Identity | None = None) -> dict[str, str]:
        env = {name: value for name, value in os.environ.items() if not name.startswith("GIT_")}
        author = author or self.committer
        env.update(LC_ALL="C", GIT_TERMINAL_PROMPT="0", GIT_EDITOR="true", GIT_SEQUENCE_EDITOR="true",
                   GIT_MERGE_AUTOEDIT="no", GIT_OPTIONAL_LOCKS="0",
                   GIT_COMMITTER_NAME=self.committer.name, GIT_COMMITTER_EMAIL=self.committer.email,
                   GIT_AUTHOR_NAME=author.name, GIT_AUTHOR_EMAIL=author.email)
        env.update(self.extra_env)
        return env

    async def run(self, cwd: str, *args: str, timeout: float | None = None, stdin: bytes = b"",
                  author: Identity | None = None) -> process.Finished:
        """Run `git ARGS` in `cwd`; its result whatever its exit status (GitTimedOut if it ran out of time)."""
        limit = self.timeout if timeout is None else timeout
        done = await process.run(("git", *OPTIONS, *args), cwd=cwd, env=self.environment(author),
                                 timeout=limit, stdin=stdin, pass_fds=self.pass_fds)
        if done.timed_out:
            raise GitTimedOut(f"git {args[0]} in {cwd} did not finish within {limit:g}s: it was ended; "
                              "try again, or raise the timeout", detail=done.tail())
        return done

    async def out(self, cwd: str, *args: str, **kwargs) -> str:
        """The stdout of `git ARGS`, stripped of its last newline; GitFailed if it exits non-zero."""
        done = await self.run(cwd, *args, **kwargs)
        if done.status:
            raise failed(cwd, args, done)
        return done.stdout.rstrip("\n")

    async def ok(self, cwd: str, *args: str, **kwargs) -> bool:
        """Whether `git ARGS` exits 0 (a question such as merge-base --is-ancestor); 128 is an error."""
        done = await self.run(cwd, *args, **kwargs)
        if done.status not in (0, 1):
            raise failed(cwd, args, done)
        return done.status == 0

    async def lines(self, cwd: str, *args: str, **kwargs) -> list[str]:
        text = await self.out(cwd, *args, **kwargs)
        return [line for line in text.split("\n") if line]


def failed(cwd: str, args: Sequence[str], done: process.Finished) -> GitFailed:
    words = (done.stderr.strip() or done.stdout.strip()).splitlines()
    return GitFailed(f"git {args[0]} failed in {cwd} (exit {done.status}): {words[-1] if words else 'no message'}",
                     detail=done.tail())

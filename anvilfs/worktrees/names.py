"""Branch names and bases: what git will take, and never a name that would take over a kept branch.

A session's idle branch is anvil/session/NAME, a bead's anvil/bead/ID: two
namespaces, so a session and a bead of the same name never meet. A session
name reused after `remove` never takes over what the earlier session kept:
the first of NAME, NAME@2, NAME@3 ... whose branch and directory are both
free is taken (`@` cannot occur in a session name, so NAME@2 is never
another session's NAME). A branch is never reused, even a merged one: prune
removes those.
"""

from __future__ import annotations

import os

from .errors import BadName
from .git import Git
from .model import Base

SESSION_PREFIX = "anvil/session/"
BEAD_PREFIX = "anvil/bead/"
PREFIX = "anvil/"


async def check_branch_name(git: Git, cwd: str, branch: str, what: str) -> str:
    """`branch` if git accepts it as a branch name; BadName saying why not."""
    if not branch or branch.startswith("-"):
        raise BadName(f"give {what} as a branch name not starting with '-': {branch!r} is not one")
    if not await git.ok(cwd, "check-ref-format", f"refs/heads/{branch}"):
        raise BadName(f"{what} {branch!r} cannot be a git branch name (no '..', '~', '^', ':', spaces, "
                      "'@{', or a name ending in '.' or '.lock'): choose another")
    return branch


def session_branch_syntax(session: str) -> str:
    """What git's check-ref-format would refuse in anvil/session/NAME for a name sessions allow (letters,
    digits, '.', '_', '-'): checked before anything is made. BadName (EINVAL) saying why."""
    if session.endswith((".", ".lock")) or ".." in session or session.startswith("-"):
        raise BadName(f"worktree: session name {session!r} cannot make a git branch (no '..', no ending in '.' "
                      "or '.lock'): choose another name")
    return session


async def session_branch(git: Git, cwd: str, session: str) -> str:
    branch = SESSION_PREFIX + session
    if session.startswith("-") or "/" in session:
        raise BadName(f"session name {session!r} cannot make a branch: use letters, digits, '.', '_', '-'")
    return await check_branch_name(git, cwd, branch, f"session name {session!r} gives branch")


def bead_branch(bead: str) -> str:
    return BEAD_PREFIX + bead


async def check_base(git: Git, repo: str, ref: str | None = None) -> Base:
    """The base: `ref`, or the branch REPO has checked out; a local branch that resolves to a commit."""
    if ref is None:
        ref = await git.out(repo, "symbolic-ref", "--quiet", "--short", "HEAD") if await git.ok(
            repo, "symbolic-ref", "--quiet", "HEAD") else ""
        if not ref:
            raise BadName(f"{repo} has no branch checked out (HEAD is detached): give base=BRANCH")
    if ref.startswith("refs/heads/"):
        ref = ref.removeprefix("refs/heads/")
    await check_branch_name(git, repo, ref, "base")
    tip = await resolve(git, repo, f"refs/heads/{ref}")
    if tip is None:
        raise BadName(f"base {ref!r} is not a local branch of {repo} with a commit: "
                      f"give one of `git -C {repo} branch --list`")
    return Base(ref, tip)


async def resolve(git: Git, cwd: str, ref: str) -> str | None:
    """The commit `ref` names, or None if it names none."""
    done = await git.run(cwd, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    return done.stdout.strip() if done.status == 0 else None


async def free_slot(git: Git, repo: str, root: str, session: str, taken: set[str]) -> tuple[str, str]:
    """(directory, branch) for a new worktree of `session`: NAME, else NAME@2, ... whichever is wholly free.

    `taken`: the paths git has registered as worktrees (a missing one's too: git refuses to add there).
    """
    first = await session_branch(git, repo, session)
    for n in range(1, 1000):
        slot = session if n == 1 else f"{session}@{n}"
        branch = first if n == 1 else f"{first}@{n}"
        path = os.path.join(root, slot)
        if not os.path.lexists(path) and path not in taken and await resolve(git, repo, f"refs/heads/{branch}") is None:
            return path, branch
    raise BadName(f"session name {session!r} has 999 kept worktrees: prune them, or choose another name")

"""The merge step: until the server's merge queue has merged a bead's branch (SPEC §6a, agent/merges/list).

A worktree session's `complete` queues its bead's branch; the server's
queue rebases it onto the base, runs the configured gates and moves the
base. This step reads the bead's entry, `BEAD BRANCH STATE DETAIL`:

    merged                   -> `then` (default next)
    conflict, gate-failed    -> `else` (default fail, with the detail), once the bead is back to pending (the
                                server moves the entry, then the bead) and its worker mailed a REWORK_REQUEST;
                                `else = "next"` in a repeat lets the workflow claim it again and have the worker
                                resolve it
    queued, merging          -> waited for
    blocked                  -> said once (the detail says why: REPO has local changes, a push failed ...),
                                and waited for: the queue tries it again by itself, or `retry` on merges/ctl
    no entry                 -> the bead's own state decides: completed as `no-change: REASON` (nothing to
                                merge) is `then`; not completed yet (in progress, waiting for approval) is
                                waited for; completed with a branch but no entry (dropped) or without a
                                branch (not a worktree session's bead), or failed, fails the step

Like a wait, it only looks: its result is recorded with the next record,
and a conductor killed in it does it again after a restart, reading the
same list. Waiting blocks on `events` (opened before the list is read, so
that no move slips between the read and the wait), woken by any line that
names the bead; with `--poll` the list is read every poll seconds, and on a
mount (where the conductor keeps no blocking file open) every second.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import trio

from .access import StepFailed
from .tree import Unavailable

if TYPE_CHECKING:
    from .engine import Engine
    from .lanes import At
    from .model import MergeStep

REWORK = ("conflict", "gate-failed")
MOUNT_POLL = 1.0  # seconds between looks on a mount (no file kept open there to block on)
RELOOK = 30.0  # seconds: the list is read again even without an events line naming the bead


class Look:
    """The bead's state, read again at each change; what was said already (a blocked entry once per detail)."""

    def __init__(self, engine: Engine, step: MergeStep, key: str, bead: str):
        self.engine, self.step, self.key, self.bead = engine, step, key, bead
        self.said: set[str] = set()
        self.state = "?"

    async def __call__(self) -> dict | None:
        """The step's result once the entry is settled; None while it is to be waited for."""
        tree = self.engine.access.tree
        entry = _entry((await tree.read("merges/list")).decode(errors="replace"), self.bead)
        if entry is None:
            return await self._unqueued()
        self.state, detail = entry
        if self.state == "merged":
            return self._result("merged", detail, self.step.then)
        if self.state in REWORK:
            if await self._status() == "completed":
                return None  # the server moves the entry first, then the bead back to pending: a next step
                # (a claim again, in a rework round) must find it pending, so the step ends only then
            return self._result(self.state, detail, self.step.else_)
        self._say_once(f"{self.state} {detail}" if self.state == "blocked" else self.state,
                       f"bead {self.bead}'s branch is {self.state}" + (f": {detail}" if detail else "")
                       + ("; waiting (the queue tries again by itself, or write `retry "
                          f"{self.bead}` to agent/merges/ctl)" if self.state == "blocked" else ""))
        return None

    async def _unqueued(self) -> dict | None:
        tree, bead = self.engine.access.tree, self.bead
        self.state = status = await self._status()
        if status == "completed":
            result = (await tree.read(f"beads/{bead}/result")).decode(errors="replace").strip()
            if result.startswith("no-change:"):
                return self._result("no-change", result.removeprefix("no-change:").strip(), self.step.then)
            if not (await tree.read(f"beads/{bead}/branch")).strip():
                raise StepFailed(f"merge {self.key}: bead {bead} has no branch to merge: only the claim of a "
                                 "session made in a worktree (worktree = true) gives a bead one")
            raise StepFailed(f"merge {self.key}: bead {bead} is completed but its branch is not in the merge queue "
                             f"(dropped?): write `merge {bead}` to agent/merges/ctl to queue it again")
        if status == "failed":
            raise StepFailed(f"merge {self.key}: bead {bead} failed: nothing of it will be merged")
        self._say_once(status, f"bead {bead} is {status}: waiting for it to be completed and its branch merged")
        return None

    async def _status(self) -> str:
        return (await self.engine.access.tree.read(f"beads/{self.bead}/status")).decode(errors="replace").strip()

    def _result(self, state: str, detail: str, outcome: str) -> dict:
        what = f"bead {self.bead}'s branch: {state}" + (f": {detail}" if detail else "")
        self.engine.access.say(f"merge {self.key}: {what}")
        return {"state": state, "detail": detail, "outcome": outcome, "why": f"merge {self.key}: {what}"}

    def _say_once(self, what: str, text: str) -> None:
        if what not in self.said:
            self.said.add(what)
            self.engine.access.say(f"merge {self.key}: {text}")


async def merge(engine: Engine, step: MergeStep, key: str, at: At) -> dict:
    """Wait until the bead's entry is settled: {"state", "detail", "outcome", "why"}."""
    look = Look(engine, step, key, engine.bead(step.bead, at))
    with trio.move_on_after(step.timeout if step.timeout is not None else math.inf):
        return await _until(engine, look)
    raise StepFailed(f"merge {key}: bead {look.bead} is still {look.state} after {step.timeout:g} s "
                     "(agent/merges/list shows its entry)")


async def _until(engine: Engine, look: Look) -> dict:
    access = engine.access
    follow = getattr(access.tree, "follow", None)
    if access.poll is not None or follow is None:
        while (result := await access.retry(f"merge of bead {look.bead}", look)) is None:
            await trio.sleep(access.poll or MOUNT_POLL)  # the user's interval (--poll), or a mount's
        return result

    async def once() -> dict | None:
        async with follow("events") as lines:  # opened first: a move after the look is a line
            if (result := await look()) is not None:
                return result
            with trio.move_on_after(RELOOK):
                async for line in lines:
                    if _names(line, look.bead):
                        return None
                raise Unavailable("events ended")
            return None

    while (result := await access.retry(f"merge of bead {look.bead}", once)) is None:
        pass
    return result


def _entry(listing: str, bead: str) -> tuple[str, str] | None:
    """(STATE, DETAIL) of the bead's line in merges/list, if it has one."""
    for line in listing.splitlines():
        parts = line.split(" ", 3)
        if len(parts) >= 3 and parts[0] == bead:
            return parts[2], parts[3] if len(parts) > 3 else ""
    return None


def _names(line: str, bead: str) -> bool:
    """An events line about the bead: its entry moved (`merge:ID ...`) or the bead did (`bead:ID ...`)."""
    return f" merge:{bead} " in f" {line} " or f" bead:{bead} " in f" {line} "

"""The tree operations the steps need, each retried while the server is away, and prompts sent exactly once.

`Access` wraps a Tree: a call that finds the server unavailable is tried
again (with a growing pause, up to `retry_for` seconds), since a server
that restarts comes back with everything it answered (docs/design.md, "Durability").
A prompt whose send broke off, or that a killed conductor may have sent,
is looked for in the target's queue and log first (markers.py): found, it
is not sent again.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import TypeVar

import trio

from .markers import in_log, in_queue
from .tree import Tree, TreeError, Unavailable

T = TypeVar("T")
BUSY = ("starting", "running")
HALTED = ("exited", "stopped")  # states whose queued prompts wait for a `restart` (SPEC §5)


class StepFailed(Exception):
    """The workflow cannot go on; the text says why (it ends the run as failed)."""


async def each(items, fn) -> None:
    """fn(item) for each item at once; a StepFailed among them is raised as itself, not in a group."""
    try:
        async with trio.open_nursery() as nursery:
            for item in items:
                nursery.start_soon(fn, item)
    except BaseExceptionGroup as group:
        failed, rest = group.split(StepFailed)
        if failed is None or rest is not None:
            raise
        while isinstance(failed, BaseExceptionGroup):
            failed = failed.exceptions[0]
        raise failed from None


async def beside(*fns) -> None:
    """fn() for each at once; an exception among them is raised as itself (the first one), not in a group."""
    try:
        async with trio.open_nursery() as nursery:
            for fn in fns:
                nursery.start_soon(fn)
    except BaseExceptionGroup as group:
        if group.subgroup(trio.Cancelled) is not None:
            raise  # a cancellation goes on to its scope as trio made it
        while isinstance(group, BaseExceptionGroup):
            group = group.exceptions[0]
        raise group from None


class Outage:
    """The server being away, said once for every call that finds it so, then now and then.

    However many calls wait for it (a wait per session, the watch of our own), a line when it goes,
    a notice every NOTICE seconds (or a quarter of the wait, if shorter) while it stays away, and a line
    when it is back: not a line per attempt.
    """

    NOTICE = 30.0

    def __init__(self, say, where: str, retry_for: float):
        self.say, self.where, self.retry_for = say, where, retry_for
        self.every = min(self.NOTICE, retry_for / 4) or self.NOTICE
        self.since: float | None = None
        self._next = 0.0

    def failed(self, what: str, exc: Exception) -> None:
        now = trio.current_time()
        if self.since is None:
            self.since, self._next = now, now + self.every
            self.say(f"{what}: {exc}; trying again for up to {self.retry_for:g} s (a notice every {self.every:g} s)")
        elif now >= self._next:
            self._next = now + self.every
            self.say(f"still no server at {self.where} after {now - self.since:.0f} s; trying until "
                     f"{self.retry_for:g} s")

    def back(self) -> None:
        if self.since is not None:
            self.say(f"the server at {self.where} answers again, after {trio.current_time() - self.since:.1f} s")
            self.since = None


class Access:
    def __init__(self, tree: Tree, *, poll: float | None = None, retry_for: float = 300, say=None):
        self.tree, self.poll, self.retry_for = tree, poll, retry_for
        self.say = say or (lambda text: print(f"conductor: {text}", file=sys.stderr, flush=True))
        self.outage = Outage(self.say, tree.where, retry_for)

    async def retry(self, what: str, call: Callable[[], Awaitable[T]]) -> T:
        deadline, pause = trio.current_time() + self.retry_for, 0.05
        while True:
            try:
                result = await call()
            except TreeError as exc:
                raise StepFailed(f"{what}: {exc}") from None
            except Unavailable as exc:
                left = deadline - trio.current_time()
                if left <= 0:
                    raise StepFailed(f"{what}: the server stayed unavailable for {self.retry_for:g}s ({exc})") from None
                self.outage.failed(what, exc)
                await trio.sleep(min(pause, left))  # the server is restarting: nothing to wait on but time
                pause = min(pause * 2, 2.0)
            else:
                self.outage.back()
                return result

    async def text(self, path: str) -> str:
        return (await self.retry(f"read {path}", lambda: self.tree.read(path))).decode(errors="replace")

    async def ctl(self, path: str, line: str) -> str:
        return await self.retry(f"{path}: {line.strip()}", lambda: self.tree.ctl(path, line))

    async def command(self, path: str, line: str) -> None:
        """A line to a write-only ctl (a session's): no read-back."""
        await self.retry(f"{path}: {line}", lambda: self.tree.write(path, f"{line}\n".encode()))

    async def once(self, what: str, act: Callable[[], Awaitable[T]], found: Callable[[], Awaitable[T | None]],
                   *, uncertain: bool) -> T:
        """act(), retried while the server is away, but done at most once: whenever it may have been done
        already (`uncertain` at the start: a killed conductor's record says it began; or an attempt that
        broke off, since the server may have acted and lost only its answer), found() is asked first, and
        what it finds (not None) is the result instead."""

        async def attempt() -> T:
            nonlocal uncertain
            if uncertain and (result := await found()) is not None:
                return result
            uncertain = True  # from here on, a broken call leaves it unknown: look before doing it again
            return await act()

        return await self.retry(what, attempt)

    async def deliver(self, target: str, text: str, line: str, *, uncertain: bool) -> bool:
        """Send the prompt unless it is already in `target`'s queue or log; True if this call sent it."""

        async def send() -> bool:
            await self.tree.write(f"{target}/in", text.encode())
            return True

        async def there() -> bool | None:
            return False if await self.submitted(target, line) else None

        return await self.once(f"prompt {line} to {target}", send, there, uncertain=uncertain)

    async def submitted(self, target: str, line: str) -> bool:
        # the queue first: a prompt leaves it for the log in one step, so it cannot slip past both reads
        if in_queue((await self.tree.read(f"{target}/queue")).decode(errors="replace"), line):
            return True
        return in_log((await self.tree.read(f"{target}/log")).decode(errors="replace"), line)

    async def state(self, name: str) -> str:
        """The session's state word once it is not busy: a blocking `wait` read, or polling."""
        if self.poll is None:
            word = await self.retry(f"wait for {name}", lambda: self.tree.read_once(f"{name}/wait"))
            return word.decode(errors="replace").split()[0] if word.strip() else "?"
        while True:
            # the queue before the status: a prompt queued then started is seen in one or the other
            queue = await self.text(f"{name}/queue")
            word = ((await self.text(f"{name}/status")).split() or ["?"])[0]
            if (not queue.strip() and word not in BUSY) or word in HALTED:
                return word  # as `wait` answers: a halted session's queue runs only after a restart
            await trio.sleep(self.poll)  # --poll: the user asked for a fixed interval

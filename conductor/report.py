"""The conductor as a session of kind `external` that it owns: visible and conductible like any agent.

    name      `--session NAME`; by default `conductor-` and the record's name
              (`--name`, by default the workflow's): `review.toml` runs as
              session `conductor-review` (a prefix, since a workflow's name
              may be one of the root's files: `beads`)
    start     the session is found (after a restart of ours) or made:
              `new external CWD name=NAME role=conductor` (CWD: the workflow
              file's directory). A session of that name on another backend is
              an error; a stopped one refuses the run (restart it first); one
              that is running another run (`run=` in its detail: a conductor
              with another record, on another host or --state) refuses it too,
              so that two conductors never send one workflow's prompts twice.
    progress  `status` is `running workflow=W run=R step=S round=N` as each step
              that waits (a wait, a gate) begins: what others read is what
              the conductor waits on. A task of its own writes it, the
              latest detail winning, while the waits' reads are out; the
              steps between two waits (checks, prompts) send no status
              write among their requests. The same words written again
              change nothing, so a restarted conductor writes them again.
              In an each, the lanes' counts instead, at most once a second
              (`step=work lanes=100 waiting=37 done=60`, lanes.py).
    end       done: the summary to `out` (the turn ends in `await`, which is
              what `read NAME/wait` of another conductor returns); failed:
              `error WHY`. Done again after a restart only if not done yet.
    watch     a blocked read of its own `wait`, which answers only once the
              turn is ended by someone else: `stopped` (a `stop` or `kill` on
              its ctl) halts the run as stopped, `await interrupted` (an
              `interrupt`) as interrupted (control.py).

The status writes are not crash points (crash.py): they are idempotent, and
their timing is the writer task's.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Protocol

import trio

from .access import Access, StepFailed
from .control import Control, Halted
from .sessions import quote

MAX_DETAIL = 200  # the server's limit on a status detail (sessions/owned.py)


class Reporter(Protocol):
    async def start(self) -> None: ...
    def update(self, step: str, rounds: tuple[int, ...], extra: str = "") -> None: ...
    def watching(self, control: Control) -> contextlib.AbstractAsyncContextManager[None]: ...
    async def finish(self, outcome: str, why: str) -> None: ...


def running_run(status: str) -> str | None:
    """The run id in a `running ... run=R ...` status, or None (not running, or no run given)."""
    words = status.split()
    if words[:1] != ["running"]:
        return None
    return next((word[4:] for word in words[1:] if word.startswith("run=")), None)


class NullReporter:
    """--no-session: progress goes to stderr only."""

    async def start(self) -> None:
        pass

    def update(self, step: str, rounds: tuple[int, ...], extra: str = "") -> None:
        pass

    @contextlib.asynccontextmanager
    async def watching(self, control: Control) -> AsyncIterator[None]:
        yield

    async def finish(self, outcome: str, why: str) -> None:
        pass


def clean(text: str) -> str:
    """A status detail the server takes: one line, at most MAX_DETAIL characters."""
    text = " ".join("".join(ch if ch >= " " and ch != "\x7f" else " " for ch in text).split())
    if text.startswith("simulated"):
        text = f"run {text}"  # the word is the simulated agents'
    return text if len(text) <= MAX_DETAIL else text[:MAX_DETAIL - 3] + "..."


class SessionReporter:
    def __init__(self, access: Access, name: str, cwd: Path, workflow: str, run: str, replaced: str | None = None):
        self.access, self.name, self.cwd, self.workflow, self.run = access, name, cwd, workflow, run
        self.replaced = replaced  # the run our record replaced (--again): found running, it is ours to take
        self._wanted = self._written = ""
        self._changed = trio.Event()
        self._closing = False

    def detail(self, step: str, rounds: tuple[int, ...], extra: str = "") -> str:
        where = (f" round={'.'.join(map(str, rounds))}" if rounds else "") + (f" {extra}" if extra else "")
        return clean(f"workflow={self.workflow} run={self.run} step={step}{where}")

    async def start(self) -> None:
        """Find or make the session and begin (or go on with) its turn; StepFailed or Halted if it cannot be."""
        present = await self.access.retry("list the tree", lambda: self.access.tree.ls(""))
        if self.name in present:
            backend = (await self.access.text(f"{self.name}/backend")).strip()
            if backend != "external":
                raise StepFailed(f"session {self.name} exists on backend {backend!r}, and the conductor reports "
                                 "through a session of kind external of its own: give --session OTHER or --no-session")
        else:
            line = f"new external {quote(str(self.cwd))} name={quote(self.name)} role=conductor"
            try:
                await self.access.ctl("ctl", line)
            except StepFailed as exc:  # made by a conductor of ours that died before it saw the answer?
                if self.name not in await self.access.retry("list the tree", lambda: self.access.tree.ls("")):
                    raise StepFailed(f"cannot make the conductor's session {self.name}: {exc}") from None
        status = await self.status()
        if status.split()[:1] == ["stopped"]:
            raise Halted("stop", f"its session {self.name} is stopped: write restart to {self.name}/ctl to run on")
        if other := self._other_run(status):
            raise StepFailed(f"session {self.name} is running run {other} of this workflow: another conductor has it "
                             f"(another host or --state), or had it and died. Stop that one, or take the session over "
                             f"(write stop, then restart, to {self.name}/ctl): this run ({self.run}) then begins anew")
        self._written = self._wanted = self.detail("start", ())
        await self.put("status", f"running {self._wanted}\n")
        self.access.say(f"reporting as session {self.name}")

    def update(self, step: str, rounds: tuple[int, ...], extra: str = "") -> None:
        self._wanted = self.detail(step, rounds, extra)
        self._changed.set()

    @contextlib.asynccontextmanager
    async def watching(self, control: Control) -> AsyncIterator[None]:
        """The writer of `status` and the watcher of `wait` while the run goes; the writer drains at the end."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._writer)
            watcher = trio.CancelScope()
            nursery.start_soon(self._watch, control, watcher)
            try:
                yield
            finally:
                watcher.cancel()
                self._closing = True
                self._changed.set()

    async def _writer(self) -> None:
        # Never cancelled: a detail write cut off could land after the final `out` and begin a new turn.
        while True:
            if self._wanted != self._written:
                detail = self._wanted
                try:
                    await self.put("status", f"running {detail}\n")
                except StepFailed as exc:
                    self.access.say(f"cannot report progress: {exc}")
                self._written = detail
            elif self._closing:
                return
            else:
                await self._changed.wait()
                self._changed = trio.Event()

    async def _watch(self, control: Control, scope: trio.CancelScope) -> None:
        with scope:
            while True:
                try:
                    await self.access.retry(f"watch {self.name}", lambda: self.access.tree.read_once(f"{self.name}/wait"))
                    status = await self.status()
                except StepFailed as exc:
                    self.access.say(f"no longer watching {self.name} for a stop: {exc}")
                    return
                word = (status.split() or ["?"])[0]
                if word == "running":
                    continue  # nothing ended the turn (a read cut short)
                how = "stop" if word == "stopped" else "interrupt"
                control.halt(how, f"{how} through {self.name}/ctl (its status: {status})")
                return

    async def finish(self, outcome: str, why: str) -> None:
        """The run's end, once: the summary to `out` (done) or `error WHY` (failed)."""
        try:
            status = await self.status()
            if status.split()[:1] == ["stopped"]:
                self.access.say(f"{self.name} is stopped: the run's end is not reported there")
                return
            if other := self._other_run(status):
                self.access.say(f"{self.name} runs run {other} now (taken over): the run's end is not reported there")
                return
            if outcome == "done":
                summary = f"done: {why}\nworkflow {self.workflow} run {self.run}\n"
                if status.split()[:1] == ["await"] and await self.access.text(f"{self.name}/out") == summary:
                    return  # reported by a conductor before this one
                await self._turn(status)
                await self.put("out", summary)
            elif status.strip() != (end := f"error {clean(f'failed: {why}')}"):
                await self._turn(status)
                await self.put("status", f"{end}\n")
        except StepFailed as exc:
            self.access.say(f"cannot report the run's end in {self.name}: {exc}")

    async def _turn(self, status: str) -> None:
        if status.split()[:1] != ["running"]:  # interrupted just at the end, or found after a restart
            await self.put("status", f"running {self.detail('end', ())}\n")

    def _other_run(self, status: str) -> str | None:
        """The run another conductor has the session running, by its status; None if none or ours (this
        run, or the one our record replaced)."""
        run = running_run(status)
        return run if run not in (None, self.run, self.replaced) else None

    async def status(self) -> str:
        return (await self.access.text(f"{self.name}/status")).strip()

    async def put(self, file: str, text: str) -> None:
        path = f"{self.name}/{file}"
        await self.access.retry(f"write {path}", lambda: self.access.tree.write(path, text.encode(), points=False))

"""A stand-in for a hook-driven tmux agent, and its hook's writes, for the tests of sessions/owned.py.

PaneAgent streams a TUI's screen and waits for the hook's await, as
TmuxAgent does with turn_end = "hook". The tests are its hook: they write
the session's `status` and `out` files (the real nodes of the tree) as the
uname `anvilfs hook` attaches with; the rest is the real App.
"""

from __future__ import annotations

import trio

from anvilfs.sessions import Agent, Backend, State
from anvilfs.tree import Caller

from .apps import until

PANE = "❯ fix it\n✻ Crunching… (esc to interrupt)\n────────\n"  # what such an agent's pane streams
ANSWER = "Fixed: the test passes now.\n"


class PaneAgent(Agent):
    """Streams a TUI's screen, then waits for the hook's await, as TmuxAgent does with turn_end = "hook"."""

    def __init__(self) -> None:
        self.done = trio.Event()
        self.heard: list[str] = []
        self.killed = False

    async def start(self) -> None:
        return None

    async def turn(self, prompt, output) -> None:
        self.done = trio.Event()
        output.write(PANE)
        await self.done.wait()

    def hook(self, word: str) -> bool:
        self.heard.append(word)
        if word == "await":
            self.done.set()
        return True

    async def kill(self) -> None:
        self.killed = True


class PaneBackend(Backend):
    kind = "test-pane"
    hook_driven = True

    def availability(self) -> str:
        return "ready"

    def agent(self, session, saved=None) -> Agent:
        return PaneAgent()


async def hooked(running, backends=(), **kwargs):
    """A started App with session `a` on the pane backend (and `sim`, and any `backends` given), idle."""
    from anvilfs.backends import SimBackend  # noqa: PLC0415 - the harness's other users need no backends

    app = await running(backends={"pane": PaneBackend("pane"), "sim": SimBackend(), **dict(backends)}, **kwargs)
    s = app.sessions.new("pane", "/tmp", name="a")
    await until(lambda: s.state is State.IDLE)
    return app, s


def write_out(app, name: str, uname: str, text: str) -> None:
    """One open of NAME/out as uname: a write, then the clunk that hands the bytes in."""
    handle = app.root.lookup(name).lookup("out").open(Caller(uname))
    handle.write(0, text.encode())
    handle.clunk()


def write_status(app, name: str, uname: str, word: str) -> None:
    """NAME/status written as uname, as `anvilfs hook WORD` does."""
    handle = app.root.lookup(name).lookup("status").open(Caller(uname))
    try:
        handle.write(0, f"{word}\n".encode())
    finally:
        handle.clunk()

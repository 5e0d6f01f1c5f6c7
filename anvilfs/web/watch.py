"""One page's look at one session: its status (and why, in error), its `out`, its live `stream`.

    GET /session?name=NAME    server-sent events, for as long as the page looks at NAME:
        event: session   {"name", "status", "detail", "out", "out_more", "errors"}: at once, then each
                         time one of them changed
        event: turn      a turn's first output: the page clears its box (the last turn's stays till then)
        event: stream    {"text": a line of it, with its newline}
        event: gone      {"error": why}: no such session (any more); the stream ends

Only the session looked at is read, and only by the pages that look at it (issue 32: no file per
session after every burst of events). `status` and `out` are stat'ed after each new view of
web/live.py and read again only when their qid.version moved (kept.Files); `errors` only while the
session is in error. `stream` is followed on its own fid: it blocks until a turn writes, and ends
(EOF) when the turn ends; it is opened again at once, and after an end that showed nothing only
once the tree moved (a stopped session's stream ends at once: no loop).
"""

from __future__ import annotations

import math
import re

import trio

from ..aioclient import AsyncClient, ServerError
from .kept import Files

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")  # a session's name (sessions/manager.py check_name)
OUT_SHOWN = 64 * 1024  # characters of `out` sent to the page; the rest: `anvilfs read agent/NAME/out`
ERRORS_SHOWN = 20  # the session's last `errors` lines


def bad_name(name: str) -> str | None:
    """Why `name` cannot be a session's, or None."""
    if NAME.match(name):
        return None
    return (f"name: {name[:80]!r} is no session's name (1-64 letters, digits, '.', '_' or '-'): "
            "ask for /session?name=NAME")


class Watch:
    """The events for one page looking at one session; run() in a nursery, cancel() when the page goes."""

    def __init__(self, fs: AsyncClient, name: str, wait_newer):
        self.fs, self.name, self._wait_newer = fs, name, wait_newer
        self._files = Files()
        self._scope = trio.CancelScope()
        self.send, self.receive = trio.open_memory_channel(math.inf)  # a page that reads slowly holds the lines

    def cancel(self) -> None:
        self._scope.cancel()

    async def run(self) -> None:
        with self._scope:
            async with self.send:
                try:
                    async with trio.open_nursery() as nursery:
                        nursery.start_soon(self._follow_stream)
                        await self._follow_state()
                except* ServerError as refused:  # removed, or never was: both reads may say so
                    self.send.send_nowait(("gone", {"error": f"{self.name}: {refused.exceptions[0]}"}))

    async def _follow_state(self) -> None:
        version, shown = 0, None
        while True:
            state = await self._state()
            if state != shown:
                self.send.send_nowait(("session", state))
                shown = state
            version, _ = await self._wait_newer(version)

    async def _state(self) -> dict:
        status = (await self._files.text(self.fs, f"{self.name}/status")).strip()
        out = await self._files.text(self.fs, f"{self.name}/out")
        word, _, detail = status.partition(" ")
        errors = await self._errors() if word == "error" else []
        return {"name": self.name, "status": word, "detail": detail.removeprefix("simulated").strip(),
                "out": out[:OUT_SHOWN], "out_more": max(len(out) - OUT_SHOWN, 0), "errors": errors}

    async def _errors(self) -> list[str]:
        """The session's lines of `errors` (TIME NAME: ...), its last ERRORS_SHOWN."""
        lines = (await self._files.text(self.fs, "errors")).splitlines()
        return [line for line in lines if line.partition(" ")[2].startswith(f"{self.name}: ")][-ERRORS_SHOWN:]

    async def _follow_stream(self) -> None:
        version = 0
        while True:
            async with self.fs.follow(f"{self.name}/stream") as lines:
                shown = False
                async for line in lines:
                    if not shown:
                        self.send.send_nowait(("turn", {}))
                    self.send.send_nowait(("stream", {"text": line + "\n"}))
                    shown = True
            if not shown:  # ended with nothing (a stopped session's ends at once): again once the tree moved
                version, _ = await self._wait_newer(version)

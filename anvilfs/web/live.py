"""The view, kept up to date from `events`: each burst of events reads the tree again (no polling).

One task follows `events` and hands its lines to another, which reads the
view again and moves a version that the pages' streams wait on. Events that
come while a view is being read, or within PACE seconds of the last read, are
taken together for the next one, so a turn's several lines cost one or two
reads, however fast they come; and a read reads again only what changed
(kept.py).
"""

from __future__ import annotations

import math
from collections import deque

import trio

from ..aioclient import AsyncClient, ConnectionLost, ServerError
from ..client.top import remember
from .view import Reading, read_view
from .watch import Watch

RECENT = 100  # `events` lines the page shows
PACE = 0.25  # seconds at least between two reads of the view: a busy tree is read 4 times a second at most


class Live:
    """The latest view (a dict for JSON) and its version; wait_newer(version) blocks until it moves."""

    def __init__(self, fs: AsyncClient):
        self.fs = fs
        self.view: dict = {}
        self.version = 0
        self._changed = trio.Event()
        self._read_at = -math.inf
        self._last: dict[str, str] = {}  # session -> "HH:MM:SS what", as `anvilfs top` shows it
        self._recent: deque[str] = deque(maxlen=RECENT)
        self._kept = Reading()
        self._nursery: trio.Nursery | None = None  # run()'s: where the pages' watches run

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Follow `events` (opened before the first view, so nothing is missed); started once there is a view."""
        async with self.fs.follow("events") as lines, trio.open_nursery() as nursery:
            send, receive = trio.open_memory_channel(math.inf)
            await self.refresh()
            self._nursery = nursery
            task_status.started()
            nursery.start_soon(self._pump, lines, send)
            async for line in receive:
                self._note(line)
                await trio.sleep(max(self._read_at + PACE - trio.current_time(), 0))
                while True:  # the rest of the burst, without waiting
                    try:
                        self._note(receive.receive_nowait())
                    except trio.WouldBlock:
                        break
                await self.refresh()

    @staticmethod
    async def _pump(lines, send: trio.MemorySendChannel) -> None:
        async with send:
            async for line in lines:
                send.send_nowait(line)
        raise ConnectionLost("the server ended agent/events (it is stopping)")

    def _note(self, line: str) -> None:
        remember(self._last, line)
        self._recent.append(line)
        self._kept.queues.named(line.split(" ", 2)[1] if line.count(" ") > 1 else "")

    async def refresh(self) -> None:
        self._read_at = trio.current_time()
        try:
            view = await read_view(self.fs, self._last, self._kept) | {"error": ""}
        except ServerError as exc:  # a file the page needs refused (ConnectionLost ends the command instead)
            view = self.view | {"error": f"the tree could not be read: {exc}"}
        self.view = view | {"events": list(self._recent)}
        self.version += 1
        self._changed.set()
        self._changed = trio.Event()

    def watch(self, name: str) -> Watch:
        """A page's look at the session `name` (watch.py), running until its cancel()."""
        watch = Watch(self.fs, name, self.wait_newer)
        self._nursery.start_soon(watch.run)
        return watch

    async def wait_newer(self, version: int) -> tuple[int, dict]:
        """The view once its version is past `version` (at once if it is already)."""
        while self.version <= version:
            await self._changed.wait()
        return self.version, self.view

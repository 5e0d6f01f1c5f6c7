"""How the conductor reaches the tree: a small interface, over 9P or over a mounted directory.

    async with NinePTree(address=None) as tree:   # ninetree.py: one multiplexed 9P connection
    async with MountTree("/mnt/agent") as tree:   # plain file I/O on a mount, in threads
        await tree.read("r1/out"); await tree.write("r1/in", b"..."); await tree.ctl("ctl", "new ...")

Paths are relative to the tree's root (`r1/in`, `beads/ctl`). Errors:
TreeError carries the server's text (the request was refused); Unavailable
means the server could not be reached or the connection broke, and what the
call did is unknown.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from typing import Protocol, TypeVar

import trio

from . import crash

T = TypeVar("T")
THREADS = 600  # trio's default 40 would queue the waits of a workflow with more sessions (max 256)


class TreeError(Exception):
    """The server refused the request; the text is its reason."""


class Unavailable(Exception):
    """The server is not there or the connection broke: the outcome of the call is unknown."""


class Tree(Protocol):
    where: str  # the server's address or the mount point, for messages
    async def __aenter__(self) -> Tree: ...  # the tree is used inside `async with`
    async def __aexit__(self, *exc_info) -> None: ...

    async def read(self, path: str) -> bytes: ...
    async def read_once(self, path: str) -> bytes: ...  # one read: `wait` blocks while the session is busy
    # one open, the data, then close (submits); `points`: the crash points of a prompt's send (crash.py)
    async def write(self, path: str, data: bytes, *, points: bool = True) -> None: ...
    async def ctl(self, path: str, line: str) -> str: ...  # write then read back on the same open file
    async def ls(self, path: str) -> list[str]: ...
    # and, over 9P only, `follow(path)`: an async context of a blocking file's lines (ninetree.py); a merge
    # step blocks on `events` with it where there is one, and polls where not (a mount)


class MountTree:
    """A mounted tree (Linux v9fs, 9pfuse): plain system calls, in threads since `wait` blocks."""

    def __init__(self, root: str):
        if not os.path.isdir(root):
            raise Unavailable(f"{root} is not a directory: give the mount point of the agent tree")
        self.root = self.where = root
        self._limiter: trio.CapacityLimiter | None = None  # made in the run: one blocked `wait` per session

    async def __aenter__(self) -> MountTree:
        self._limiter = trio.CapacityLimiter(THREADS)
        return self

    async def __aexit__(self, *exc_info) -> None:
        pass

    async def read(self, path: str) -> bytes:
        def read() -> bytes:
            with open(self._path(path), "rb") as f:
                return f.read()
        return await self._call(read)

    async def read_once(self, path: str) -> bytes:
        def once() -> bytes:
            fd = os.open(self._path(path), os.O_RDONLY)
            try:
                return os.read(fd, 8192)
            finally:
                os.close(fd)
        return await self._call(once)

    async def write(self, path: str, data: bytes, *, points: bool = True) -> None:
        def write() -> None:
            fd = os.open(self._path(path), os.O_WRONLY)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                if points:
                    crash.point(f"{path}: written, not closed")
            finally:
                os.close(fd)  # the kernel closes it too if we die: a whole prompt, submitted
        await self._call(write)

    async def ctl(self, path: str, line: str) -> str:
        def ctl() -> str:
            fd = os.open(self._path(path), os.O_RDWR)
            try:
                os.write(fd, line.encode() + (b"" if line.endswith("\n") else b"\n"))
                return os.pread(fd, 65536, 0).decode(errors="replace").strip()
            finally:
                os.close(fd)
        return await self._call(ctl)

    async def ls(self, path: str) -> list[str]:
        return await self._call(lambda: sorted(os.listdir(self._path(path))))

    def _path(self, path: str) -> str:
        return os.path.join(self.root, path)

    async def _call(self, fn: Callable[[], T]) -> T:
        def run() -> T:
            try:
                return fn()
            except OSError as exc:
                if exc.errno in (errno.ENOTCONN, errno.EIO, errno.ECONNABORTED, errno.ESHUTDOWN):
                    raise Unavailable(f"{self.root}: {exc.strerror}") from None
                raise TreeError(f"{exc.filename or path_of(exc)}: {exc.strerror}") from None
        return await trio.to_thread.run_sync(run, abandon_on_cancel=True, limiter=self._limiter)


def path_of(exc: OSError) -> str:
    return str(exc.filename) if exc.filename else "?"


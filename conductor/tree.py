"""How the conductor reaches the tree: a small interface, over 9P or over a mounted directory.

    tree = NinePTree(address=None)          # unix!$NAMESPACE/agent, or -a ADDRESS
    tree = MountTree("/mnt/agent")          # plain file I/O on a mount
    await tree.read("r1/out"); await tree.write("r1/in", b"..."); await tree.ctl("ctl", "new ...")

Paths are relative to the tree's root (`r1/in`, `beads/ctl`). The blocking
work runs in threads, one 9P connection per call, until the multiplexing
AsyncClient (anvilfs.aioclient) is on main. Errors: TreeError carries the
server's text (the request was refused); Unavailable means the server could
not be reached or the connection broke, and what the call did is unknown.
"""

from __future__ import annotations

import errno
import os
import socket
from collections.abc import Callable
from typing import Protocol, TypeVar

import trio

from anvilfs.client import AddressError, Client, ConnectionLost, ServerError, attach_aname, attach_uname, dial, resolve
from anvilfs.client.protocol import Reply, check
from anvilfs.ninep import consts as c
from anvilfs.ninep import messages as m

from . import crash

T = TypeVar("T")
THREADS = 600  # trio's default 40 would queue the waits of a workflow with more sessions (max 256)


class TreeError(Exception):
    """The server refused the request; the text is its reason."""


class Unavailable(Exception):
    """The server is not there or the connection broke: the outcome of the call is unknown."""


class Tree(Protocol):
    async def read(self, path: str) -> bytes: ...
    async def read_once(self, path: str) -> bytes: ...  # one read: `wait` blocks while the session is busy
    # one open, the data, then close (submits); `points`: the crash points of a prompt's send (crash.py)
    async def write(self, path: str, data: bytes, *, points: bool = True) -> None: ...
    async def ctl(self, path: str, line: str) -> str: ...  # write then read back on the same open file
    async def ls(self, path: str) -> list[str]: ...


class NinePTree:
    def __init__(self, address: str | None = None, *, uname: str | None = None):
        self._target = resolve("agent/", address) if address is None else resolve("/", address)
        self._uname = uname or attach_uname()
        self._aname = attach_aname(self._target)
        self._limiter: trio.CapacityLimiter | None = None  # made in the run: one blocked `wait` per session

    async def read(self, path: str) -> bytes:
        return await self._call(lambda cl: cl.read_file(path))

    async def read_once(self, path: str) -> bytes:
        def once(cl: Client) -> bytes:
            fid = cl.open(path, c.OREAD)
            return cl.read_chunk(fid, 0)  # the connection closes after: no clunk needed
        return await self._call(once)

    async def write(self, path: str, data: bytes, *, points: bool = True) -> None:
        def write(cl: Client) -> None:
            fid = cl.open(path, c.OWRITE)
            cl.write_all(fid, data)
            if not points:
                cl.clunk(fid)
                return
            crash.point(f"{path}: written, not closed")
            _clunk_in_two(cl, fid, path)
        await self._call(write)

    async def ctl(self, path: str, line: str) -> str:
        def ctl(cl: Client) -> str:
            fid = cl.open(path, c.ORDWR)
            cl.write_all(fid, line.encode() + (b"" if line.endswith("\n") else b"\n"))
            return b"".join(cl.read_chunks(fid)).decode(errors="replace").strip()
        return await self._call(ctl)

    async def ls(self, path: str) -> list[str]:
        return await self._call(lambda cl: sorted(s.name for s in cl.list_dir(path)))

    async def _call(self, fn: Callable[[Client], T]) -> T:
        sockets: list[socket.socket] = []

        def run() -> T:
            try:
                sock = dial(self._target)
            except AddressError as exc:
                raise Unavailable(str(exc)) from None
            sockets.append(sock)
            try:
                with Client(sock, uname=self._uname, aname=self._aname) as client:
                    return fn(client)
            except ServerError as exc:
                raise TreeError(str(exc)) from None
            except (ConnectionLost, OSError) as exc:
                raise Unavailable(str(exc)) from None

        if self._limiter is None:
            self._limiter = trio.CapacityLimiter(THREADS)
        try:
            return await trio.to_thread.run_sync(run, abandon_on_cancel=True, limiter=self._limiter)
        except trio.Cancelled:
            for sock in sockets:  # unblock the abandoned thread's read (a `wait` that no one wants now)
                _shutdown(sock)
            raise


class MountTree:
    """A mounted tree (Linux v9fs, 9pfuse): plain system calls, in threads since `wait` blocks."""

    def __init__(self, root: str):
        if not os.path.isdir(root):
            raise Unavailable(f"{root} is not a directory: give the mount point of the agent tree")
        self.root = root

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
        return await trio.to_thread.run_sync(run, abandon_on_cancel=True)


def _clunk_in_two(cl: Client, fid: int, path: str) -> None:
    """Tclunk, then a crash point, then its reply: the window in which the prompt is submitted unseen."""
    cl.sock.sendall(cl.protocol.request(m.Tclunk(tag=0, fid=fid))[1])  # submitted when the server takes this
    crash.point(f"{path}: Tclunk sent, not answered")
    while True:
        data = cl.sock.recv(1 << 16)
        if not data:
            raise ConnectionLost("the server closed the connection")
        for event in cl.protocol.receive_data(data):
            if isinstance(event, Reply):
                check(event.message)
                return


def path_of(exc: OSError) -> str:
    return str(exc.filename) if exc.filename else "?"


def _shutdown(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass

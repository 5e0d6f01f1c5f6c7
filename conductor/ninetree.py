"""The tree over 9P: one multiplexed connection (anvilfs.aioclient) for the whole run, made again when it breaks.

    async with NinePTree(address) as tree:    # connects on first use
        await tree.read("r1/out")

Every call of the run shares one AsyncClient: the `wait` of each session
and the conductor's watch of its own are concurrent Treads on it, and a
cancelled call is flushed. A call whose connection breaks raises
Unavailable and forgets that connection; the next call (Access retries)
dials again, once for all the callers that found it gone. Each connection
lives in a task of the tree's own nursery, since an AsyncClient's reader
is a nursery that must be left by the task that entered it.

The crash points of a prompt's send (crash.py: its bytes written and not
closed, its Tclunk sent and not answered) need the send cut in two, which
AsyncClient.write does not offer. Only when the crash points are armed
(a test), `_write_split` does the send itself with the client's own
pieces (AsyncClient._walk and _write, Multiplexer._start, the frame of
Tclunk sent and its reply awaited after the point): private parts, used
nowhere else, and never in a run that is not a crash test.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

import trio

from anvilfs.aioclient import AddressError, AsyncClient, ConnectionLost, Lines, ServerError
from anvilfs.aioclient.dial import open_stream
from anvilfs.client import attach_aname, attach_uname, resolve
from anvilfs.client.protocol import check
from anvilfs.ninep import consts as c
from anvilfs.ninep import messages as m

from . import crash
from .tree import TreeError, Unavailable

T = TypeVar("T")


class NinePTree:
    def __init__(self, address: str | None = None, *, uname: str | None = None):
        self._target = resolve("agent/", address) if address is None else resolve("/", address)
        self._uname = uname or attach_uname()
        self.where = self._target.dial_string
        self._aname = attach_aname(self._target)
        self._fs: AsyncClient | None = None
        self._ends: dict[AsyncClient, trio.CancelScope] = {}  # each live connection -> how to end it
        self._lock = trio.Lock()
        self._stack = contextlib.AsyncExitStack()
        self._nursery: trio.Nursery | None = None

    async def __aenter__(self) -> NinePTree:
        self._nursery = await self._stack.enter_async_context(trio.open_nursery())
        return self

    async def __aexit__(self, *exc_info) -> None:
        for end in self._ends.values():
            end.cancel()
        await self._stack.aclose()

    # ------------------------------------------------------------ the Tree

    async def read(self, path: str) -> bytes:
        return await self._call(lambda fs: fs.read(path))

    async def read_once(self, path: str) -> bytes:
        return await self._call(lambda fs: fs.read_once(path))

    async def write(self, path: str, data: bytes, *, points: bool = True) -> None:
        if points and crash.armed():
            return await self._call(lambda fs: _write_split(fs, path, data))
        await self._call(lambda fs: fs.write(path, data))

    async def ctl(self, path: str, line: str) -> str:
        return (await self._call(lambda fs: fs.ctl(path, line))).strip()

    async def ls(self, path: str) -> list[str]:
        return sorted(await self._call(lambda fs: fs.ls(path)))

    @contextlib.asynccontextmanager
    async def follow(self, path: str) -> AsyncIterator[Lines]:
        """A blocking file (`events`) as its lines from now on, on the run's connection (a merge step's wait)."""
        fs = await self._client()
        try:
            async with fs.follow(path) as lines:
                yield lines
        except ServerError as exc:
            raise TreeError(str(exc)) from None
        except ConnectionLost as exc:
            self._lost(fs)
            raise Unavailable(str(exc)) from None

    # ------------------------------------------------------------ the connection

    async def _call(self, fn: Callable[[AsyncClient], Awaitable[T]]) -> T:
        fs = await self._client()
        try:
            return await fn(fs)
        except ServerError as exc:
            raise TreeError(str(exc)) from None
        except ConnectionLost as exc:
            self._lost(fs)
            raise Unavailable(str(exc)) from None

    def _lost(self, fs: AsyncClient) -> None:
        if self._fs is fs:
            self._fs = None  # the next call dials again
            self._ends.pop(fs).cancel()

    async def _client(self) -> AsyncClient:
        if self._nursery is None:
            raise RuntimeError("use the tree inside `async with NinePTree(...) as tree:`")
        async with self._lock:  # the callers that found it gone wait for one dial
            if self._fs is None:
                self._fs = await self._nursery.start(self._hold)
            return self._fs

    async def _hold(self, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Dial and attach, hand the client over, and keep it until its end is called (or the tree closes)."""
        try:
            stream = await open_stream(self._target)
            fs = await AsyncClient.over(stream, uname=self._uname, aname=self._aname)
        except AddressError as exc:
            raise Unavailable(str(exc)) from None
        except ConnectionLost as exc:
            raise Unavailable(f"{self._target.dial_string}: {exc}") from None
        except ServerError as exc:
            raise TreeError(f"{self._target.dial_string}: attach refused: {exc}") from None
        with trio.CancelScope() as end:
            self._ends[fs] = end
            async with fs:
                task_status.started(fs)
                await trio.sleep_forever()
        self._ends.pop(fs, None)


async def _write_split(fs: AsyncClient, path: str, data: bytes) -> None:
    """A prompt's send with its two crash points: bytes written, then the Tclunk sent but not answered."""
    fid = await fs._walk(path)
    await fs._mux.rpc(m.Topen(tag=0, fid=fid, mode=c.OWRITE))
    await fs._write(fid, data)
    crash.point(f"{path}: written, not closed")
    _, waiter = await fs._mux._start(m.Tclunk(tag=0, fid=fid))  # submitted when the server takes this
    crash.point(f"{path}: Tclunk sent, not answered")
    await waiter.done.wait()
    if waiter.lost is not None:
        raise ConnectionLost(waiter.lost)
    check(waiter.reply)

"""AsyncClient: whole-file operations on one multiplexed 9P2000 connection.

    async with await AsyncClient.connect("agent") as fs:
        await fs.write("bot1/in", b"hello\\n")
        async with trio.open_nursery() as nursery:   # many requests in flight on one connection
            ...fs.read_once("bot1/wait")...

Each operation walks a fid of its own from the root and clunks it at the
end, also when it is cancelled (shielded, with a deadline): a cancelled
call leaves nothing open on the server (mux.py flushes its request).
A write or ctl that fits in one Twrite, and a read_once, send their
requests together (walk, open, write or read, clunk) as one pipeline: one
round trip, since the server handles a connection's requests in order;
read_once does not wait for its clunk's answer.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import trio

from ..client.commands import pieces
from ..client.credentials import attach_aname, attach_uname
from ..client.errors import ConnectionLost, ServerError
from ..client.protocol import DEFAULT_MSIZE, ClientProtocol, check, directory_entries
from ..ninep import Dialect, LocalProtocolError, Stat
from ..ninep import consts as c
from ..ninep import messages as m
from .dial import open_stream, target_of
from .follow import Lines
from .mux import FLUSH_DEADLINE, Multiplexer, Statistics


class AsyncClient:
    """A 9P2000 client for trio with any number of requests in flight. Make one with connect() or over()."""

    def __init__(self, mux: Multiplexer, root: int):
        self._mux = mux
        self._root = root
        self._started = False
        self._stack = contextlib.AsyncExitStack()

    @classmethod
    async def connect(cls, address: str = "agent", *, uname: str | None = None, aname: str | None = None,
                      msize: int = DEFAULT_MSIZE) -> AsyncClient:
        """Dial `address` (as `anvilfs -a`, or a service name such as agent) and attach.

        uname defaults to $ANVILFS_SESSION, else the login name; aname to the
        token for a TCP address (loopback only), as the light client does.
        """
        target = target_of(address)
        aname = attach_aname(target, aname=aname)
        stream = await open_stream(target)
        return await cls.over(stream, uname=attach_uname() if uname is None else uname, aname=aname, msize=msize)

    @classmethod
    async def over(cls, stream: trio.abc.Stream, *, uname: str, aname: str = "", msize: int = DEFAULT_MSIZE,
                   dialect: Dialect = Dialect.P2000) -> AsyncClient:
        """Version and attach on a connected stream (tests use an in-memory one). The client owns it from here."""
        mux = Multiplexer(stream, ClientProtocol(dialect, msize))
        try:
            root = await mux.handshake(uname=uname, aname=aname)
        except BaseException:
            await mux.aclose()
            raise
        return cls(mux, root)

    async def __aenter__(self) -> AsyncClient:
        if self._started:
            raise LocalProtocolError("this AsyncClient was entered already: use one `async with` per client")
        self._started = True
        async with contextlib.AsyncExitStack() as stack:
            nursery = await stack.enter_async_context(trio.open_nursery())
            nursery.start_soon(self._mux.run)
            stack.callback(nursery.cancel_scope.cancel)  # the reader ends with the block
            self._stack = stack.pop_all()
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self._mux.aclose()
        # Not the block's exception: a nursery would wrap it in an ExceptionGroup
        # (strict_exception_groups), and a caller catches ServerError, not a group.
        await self._stack.aclose()

    @property
    def msize(self) -> int:
        return self._mux.protocol.msize

    @property
    def in_flight(self) -> int:
        """Tags of this connection waiting for a reply or an Rflush (0 when all is quiet)."""
        return self._mux.statistics().in_flight

    def statistics(self) -> Statistics:
        """What is in flight now: the count of tags taken, and the requests waiting by type."""
        return self._mux.statistics()

    # ------------------------------------------------------------ whole files

    async def read(self, path: str) -> bytes:
        """The whole file, to its end (a blocking file such as events never ends: use follow)."""
        async with self._opened(path, c.OREAD) as fid:
            out = bytearray()
            while data := await self._read(fid, len(out)):
                out += data
            return bytes(out)

    async def read_once(self, path: str) -> bytes:
        """What one read at offset 0 gives: for `wait`, the state word once the session is no longer busy.

        The walk, open and read go out together; the clunk after the answer is
        not waited for (a read-only fid: nothing to report), so a caller that
        acts on the answer (a conductor's next prompt) is not a round trip later.
        """
        if (names := self._pipelinable(path)) is None:
            async with self._opened(path, c.OREAD) as fid:
                return await self._read(fid, 0)
        [read] = await self._pipeline(path, names, c.OREAD, lambda fid: self._read_request(fid, 0), clunk=False)
        return read.data

    async def write(self, path: str, data: bytes) -> None:
        """Write `data` on one open, in whole-line pieces of at most the iounit (ctl files act per write).

        What fits in one piece goes out as one pipeline (walk, open, write, clunk:
        one round trip); its errors are the first request's that failed.
        """
        if not data or len(data) > self._mux.protocol.iounit or (names := self._pipelinable(path)) is None:
            async with self._opened(path, c.OWRITE) as fid:
                await self._write(fid, data)
            return
        await self._pipeline(path, names, c.OWRITE, lambda fid: m.Twrite(tag=0, fid=fid, offset=0, data=data))

    async def ctl(self, path: str, line: str) -> str:
        """Write a command line and read the answer back on the same fid (SPEC §4), without its newline.

        One pipeline when the line fits in one write: walk, open, write, read, clunk.
        """
        data = line.encode() if line.endswith("\n") else f"{line}\n".encode()
        if len(data) > self._mux.protocol.iounit or (names := self._pipelinable(path)) is None:
            async with self._opened(path, c.ORDWR) as fid:
                await self._write(fid, data)
                return (await self._read(fid, 0)).decode(errors="replace").removesuffix("\n")
        _, answer = await self._pipeline(path, names, c.ORDWR, lambda fid: m.Twrite(tag=0, fid=fid, offset=0, data=data),
                                         lambda fid: self._read_request(fid, 0))
        return answer.data.decode(errors="replace").removesuffix("\n")

    async def ls(self, path: str) -> list[str]:
        """The names in a directory."""
        async with self._opened(path, c.OREAD) as fid:
            names, offset = [], 0
            while data := await self._read(fid, offset):
                names += [entry.name for entry in directory_entries(data, self._mux.protocol.dialect)]
                offset += len(data)
            return names

    async def stat(self, path: str) -> Stat:
        async with self._walked(path) as fid:
            return (await self._mux.rpc(m.Tstat(tag=0, fid=fid))).stat

    @contextlib.asynccontextmanager
    async def follow(self, path: str) -> AsyncIterator[Lines]:
        """A blocking file (events, stream) as an async iterator of its lines; it ends at the file's end."""
        async with self._opened(path, c.OREAD) as fid:
            yield Lines(self._read, fid)

    # ------------------------------------------------------------ fids

    async def _read(self, fid: int, offset: int) -> bytes:
        return (await self._mux.rpc(self._read_request(fid, offset))).data

    def _read_request(self, fid: int, offset: int) -> m.Tread:
        return m.Tread(tag=0, fid=fid, offset=offset, count=self._mux.protocol.iounit)

    # ------------------------------------------------------------ pipelines

    def _pipelinable(self, path: str) -> tuple[str, ...] | None:
        """The names of `path` if one Twalk reaches it (at most MAXWELEM names, not the root itself)."""
        names = self._names(path)
        return names if 0 < len(names) <= c.MAXWELEM else None

    async def _pipeline(self, path: str, names: tuple[str, ...], mode: int, *requests, clunk: bool = True) -> list:
        """Walk a new fid to `path`, open it in `mode`, then requests(fid) each, and clunk it: one pipeline.
        The replies to `requests`; the first request that failed raises (the walk's first: all after it failed
        too). With `clunk` off the clunk goes after the answers, not waited for (a fid that was only read)."""
        fid = self._mux.protocol.new_fid()  # cancelled, the pipeline clunks it if its walk was answered
        sent = [m.Twalk(tag=0, fid=self._root, newfid=fid, wnames=names), m.Topen(tag=0, fid=fid, mode=mode),
                *(request(fid) for request in requests), *([m.Tclunk(tag=0, fid=fid)] if clunk else [])]
        replies = await self._mux.pipeline(sent)
        if len(check(replies[0]).wqids) != len(names):
            raise ServerError(f"{path}: {names[len(replies[0].wqids)]!r} does not exist")
        if not clunk:
            await self._mux.post(m.Tclunk(tag=0, fid=fid))
        return [check(reply) for reply in replies[1:]][1:1 + len(requests)]

    def _names(self, path: str) -> tuple[str, ...]:
        if not self._started:
            raise LocalProtocolError("use the client inside `async with await AsyncClient.connect(...) as fs:`")
        return tuple(name for name in path.split("/") if name)

    async def _write(self, fid: int, data: bytes) -> None:
        offset = 0
        for piece in pieces(data, self._mux.protocol.iounit, lines=False):
            offset += (await self._mux.rpc(m.Twrite(tag=0, fid=fid, offset=offset, data=piece))).count

    @contextlib.asynccontextmanager
    async def _opened(self, path: str, mode: int) -> AsyncIterator[int]:
        async with self._walked(path) as fid:
            await self._mux.rpc(m.Topen(tag=0, fid=fid, mode=mode))
            yield fid

    @contextlib.asynccontextmanager
    async def _walked(self, path: str) -> AsyncIterator[int]:
        """A fid for `path`, clunked at the end whatever happens (shielded, within FLUSH_DEADLINE)."""
        fid = await self._walk(path)
        try:
            yield fid
        except BaseException:
            await self._clunk(fid, quiet=True)
            raise
        await self._clunk(fid, quiet=False)

    async def _walk(self, path: str) -> int:
        names = self._names(path)
        fid = self._mux.protocol.new_fid()
        source = self._root
        try:
            for start in range(0, max(len(names), 1), c.MAXWELEM):
                step = names[start:start + c.MAXWELEM]
                reply = await self._mux.rpc(m.Twalk(tag=0, fid=source, newfid=fid, wnames=step))
                if len(reply.wqids) != len(step):
                    raise ServerError(f"{path}: {step[len(reply.wqids)]!r} does not exist")
                source = fid
        except BaseException:
            if source == fid:  # a later step failed: the first one made the fid
                await self._clunk(fid, quiet=True)
            raise
        return fid

    async def _clunk(self, fid: int, *, quiet: bool) -> None:
        with trio.CancelScope(shield=True), trio.move_on_after(FLUSH_DEADLINE):
            try:
                await self._mux.rpc(m.Tclunk(tag=0, fid=fid))
            except (ServerError, ConnectionLost):
                if not quiet:
                    raise

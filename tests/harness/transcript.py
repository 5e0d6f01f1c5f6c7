"""Whole 9P conversations in the canonical text form, against an in-memory server.

A transcript is lines: `> T...` is sent, `< R...` is the reply expected next.
Consecutive `>` lines go out in one write (one received batch). In an
expected line `*` stands for any text (e.g. a qid path, which is a hash).
A reply that does not come fails the test after ``WAIT`` seconds (at once
under autojump_clock), naming the line it expected.
"""

from __future__ import annotations

import re
from contextlib import asynccontextmanager

import trio
import trio.testing

from anvilfs.app import App
from anvilfs.ninep import Dialect, FrameBuffer, decode, encode, format_message, parse_message
from anvilfs.ninep import messages as m
from anvilfs.server import Connection, Limits
from anvilfs.server.token import Token

from .deadlines import WAIT, within


def _pattern(expected: str) -> re.Pattern:
    return re.compile(".*?".join(re.escape(part) for part in expected.split("*")) + r"\Z")


class Peer:
    """The client end of an in-memory connection, speaking the text form."""

    def __init__(self, stream: trio.abc.Stream, limits: Limits):
        self.stream = stream
        self.dialect = Dialect.P2000
        self.frames = FrameBuffer(limits.max_msize)

    async def send_raw(self, data: bytes) -> None:
        await self.stream.send_all(data)

    async def send(self, *texts: str) -> None:
        await self.stream.send_all(b"".join(encode(parse_message(t), self.dialect) for t in texts))

    async def receive(self, expected: str = "a reply") -> m.Message:
        with within(WAIT, f"{expected} from the server"):
            while (frame := self.frames.next_frame()) is None:
                data = await self.stream.receive_some(1 << 16)
                if not data:
                    raise EOFError(f"server closed the connection while the test awaited {expected}")
                self.frames.feed(data)
        msg = decode(frame, self.dialect)
        if isinstance(msg, m.Rversion) and msg.version != "unknown":
            self.dialect = Dialect(msg.version)
        return msg

    async def receive_text(self, expected: str = "a reply") -> str:
        return format_message(await self.receive(expected))

    async def closed(self) -> bool:
        """True once the server has closed its end (reads give EOF)."""
        with within(WAIT, "the server to close the connection"):
            return await self.stream.receive_some(1) == b""

    async def play(self, transcript: str) -> None:
        batch: list[str] = []
        for raw in transcript.strip().splitlines():
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            direction, text = line[0], line[1:].strip()
            if direction == ">":
                batch.append(text)
                continue
            if direction != "<":
                raise ValueError(f"transcript line must start with > or <: {line!r}")
            if batch:
                await self.send(*batch)
                batch = []
            got = await self.receive_text(repr(text))
            assert _pattern(text).match(got), f"expected {text!r}\n     got {got!r}"
        if batch:
            await self.send(*batch)


def _stream_pair(sockets: bool) -> tuple[trio.abc.Stream, trio.abc.Stream]:
    if not sockets:
        return trio.testing.memory_stream_pair()
    a, b = trio.socket.socketpair()  # the server's end goes through its SocketTransport
    return trio.SocketStream(a), trio.SocketStream(b)


@asynccontextmanager
async def served(app: App | None = None, *, limits: Limits = Limits(), clients: int = 1, token: Token | None = None,
                 sockets: bool = False):
    """An app with `clients` connections, in memory (or over unix socket pairs with `sockets`);
    yields (app, peers). `token`: as on a TCP listener."""
    app = app or App()
    async with trio.open_nursery() as nursery:
        await nursery.start(app.run)
        peers = []
        for i in range(clients):
            client_end, server_end = _stream_pair(sockets)
            conn = Connection(server_end, app.root, limits=limits, name=f"c{i + 1}", token=token,
                              on_error=lambda where, text, n=i: app.record_error(f"c{n + 1} {where}", text))
            nursery.start_soon(conn.serve)
            peers.append(Peer(client_end, limits))
        try:
            yield app, peers
        finally:
            nursery.cancel_scope.cancel()


HELLO = """
> Tversion tag 65535 msize 8192 version 9P2000
< Rversion tag 65535 msize 8192 version 9P2000
> Tattach tag 1 fid 0 afid 4294967295 uname glenda aname ""
< Rattach tag 1 qid (0x80 0 *)
"""
HELLO_L = """
> Tversion tag 65535 msize 8192 version 9P2000.L
< Rversion *
> Tattach tag 1 fid 0 afid 4294967295 uname glenda aname "" n_uname 0
< Rattach *
"""  # the same in 9P2000.L, as Linux's v9fs begins

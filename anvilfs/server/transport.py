"""Byte transport under a connection: a trio stream, or a socket used directly.

trio's SocketStream yields to the scheduler on every receive and send even
when the data is there; for a 9P server answering small requests one at a
time that doubles the cost of a request. SocketTransport reads and writes
the socket's file descriptor itself and waits (through trio) only when the
socket is not ready, which is where a ping-pong client always leaves it.
Other streams (trio's in-memory streams in tests) go through StreamTransport.
"""

from __future__ import annotations

import os

import trio

RECEIVE_SIZE = 1 << 16


class StreamTransport:
    def __init__(self, stream: trio.abc.Stream):
        self.stream = stream

    async def receive(self) -> bytes:
        return await self.stream.receive_some(RECEIVE_SIZE)

    async def send_all(self, data: bytes) -> None:
        await self.stream.send_all(data)

    async def aclose(self) -> None:
        await trio.aclose_forcefully(self.stream)


class SocketTransport(StreamTransport):
    def __init__(self, stream: trio.SocketStream):
        super().__init__(stream)
        self.fd = stream.socket.fileno()

    async def receive(self) -> bytes:
        # Wait first: a client waiting for our reply has sent nothing yet, so a
        # read now would only fail; and the wait lets other tasks run.
        while True:
            await trio.lowlevel.wait_readable(self.fd)
            try:
                return os.read(self.fd, RECEIVE_SIZE)
            except BlockingIOError:
                continue  # woken without data: wait again
            except OSError:
                return b""

    async def send_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self.fd, view):]
            except BlockingIOError:
                await trio.lowlevel.wait_writable(self.fd)
            except OSError as exc:
                raise trio.BrokenResourceError(f"connection lost: {exc.strerror}") from exc


def transport_for(stream: trio.abc.Stream) -> StreamTransport:
    if isinstance(stream, trio.SocketStream):
        return SocketTransport(stream)
    return StreamTransport(stream)

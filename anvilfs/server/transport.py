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
EAGER_READS = 16  # reads without a checkpoint at most, in a row


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
        self._eager = 0  # reads in a row that found data without waiting

    async def receive(self) -> bytes:
        # Read first: after a reply, a client on the same CPU has usually sent
        # its next request already, and a read that finds it costs one system
        # call where a wait costs an epoll re-arm and a scheduler pass. A run
        # of such reads is bounded, so that other connections and tasks (a
        # blocked read woken by this client's request) are not starved.
        if self._eager < EAGER_READS:
            try:
                data = os.read(self.fd, RECEIVE_SIZE)
            except BlockingIOError:
                pass
            except OSError:
                return b""
            else:
                self._eager += 1
                return data
        self._eager = 0
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

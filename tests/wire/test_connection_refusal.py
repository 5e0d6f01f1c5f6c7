"""A connection over --max-connections is told why, in its own dialect, then closed."""

from __future__ import annotations

import errno
import socket
import time

import trio
import trio.testing

from anvilfs.app import App
from anvilfs.ninep import Dialect, FrameBuffer, decode, encode
from anvilfs.ninep import messages as m
from anvilfs.server import Server, ServerOptions
from harness.server import anvil_server

DEADLINE = 60  # virtual seconds under autojump_clock


async def _reply_then_eof(stream: trio.abc.Stream, dialect: Dialect) -> m.Message:
    frames = FrameBuffer(1 << 16)
    while (frame := frames.next_frame()) is None:
        data = await stream.receive_some(1 << 16)
        assert data, "closed with no answer to the Tversion"
        frames.feed(data)
    assert await stream.receive_some(1) == b"", "still open after the refusal"
    return decode(frame, dialect)


async def _server_with_one_connection(nursery) -> Server:
    server = Server(App(), ServerOptions(namespace="/nonexistent", state_dir="/nonexistent", max_connections=1))
    first, first_server_end = trio.testing.memory_stream_pair()
    nursery.start_soon(server.handle, first_server_end)
    await first.send_all(encode(m.Tversion(tag=65535, msize=8192, version="9P2000"), Dialect.P2000))
    assert isinstance(await _one_reply(first), m.Rversion)  # the one allowed connection works
    return server


async def _one_reply(stream) -> m.Message:
    frames = FrameBuffer(1 << 16)
    while (frame := frames.next_frame()) is None:
        frames.feed(await stream.receive_some(1 << 16))
    return decode(frame, Dialect.P2000)


async def _refused(server: Server, nursery, version: str) -> m.Message:
    client, server_end = trio.testing.memory_stream_pair()
    nursery.start_soon(server.handle, server_end)
    dialect = Dialect(version)
    await client.send_all(encode(m.Tversion(tag=65535, msize=8192, version=version), dialect))
    return await _reply_then_eof(client, dialect)


async def test_over_the_limit_a_dotl_tversion_gets_rlerror_eusers(autojump_clock):
    async with trio.open_nursery() as nursery:
        with trio.fail_after(DEADLINE):
            server = await _server_with_one_connection(nursery)
            assert await _refused(server, nursery, "9P2000.L") == m.Rlerror(tag=65535, ecode=errno.EUSERS)
            assert "refused: already 1 connections" in server.app.errors.text()
        nursery.cancel_scope.cancel()


async def test_over_the_limit_other_dialects_get_the_text(autojump_clock):
    async with trio.open_nursery() as nursery:
        with trio.fail_after(DEADLINE):
            server = await _server_with_one_connection(nursery)
            dotu = await _refused(server, nursery, "9P2000.u")
            assert isinstance(dotu, m.Rerror) and dotu.errno == errno.EUSERS
            assert dotu.ename == "too many connections: at most 1 at once (--max-connections); close one first"
            plain = await _refused(server, nursery, "9P2000")
            assert isinstance(plain, m.Rerror) and plain.ename == dotu.ename
        nursery.cancel_scope.cancel()


async def test_a_refused_client_that_sends_nothing_is_closed_after_a_while(autojump_clock):
    from anvilfs.server.refusal import REFUSAL_SECONDS
    async with trio.open_nursery() as nursery:
        with trio.fail_after(DEADLINE):
            server = await _server_with_one_connection(nursery)
            client, server_end = trio.testing.memory_stream_pair()
            start = trio.current_time()
            nursery.start_soon(server.handle, server_end)
            assert await client.receive_some(1) == b""
            assert trio.current_time() - start >= REFUSAL_SECONDS  # virtual time: it waited, then gave up
            await trio.testing.wait_all_tasks_blocked()
            assert server.refusing == 0
        nursery.cancel_scope.cancel()


async def test_a_refused_client_that_sends_garbage_is_closed_without_a_reply(autojump_clock):
    async with trio.open_nursery() as nursery:
        with trio.fail_after(DEADLINE):
            server = await _server_with_one_connection(nursery)
            client, server_end = trio.testing.memory_stream_pair()
            nursery.start_soon(server.handle, server_end)
            await client.send_all(b"\xff\xff\xff\x7f" + b"x" * 100)  # a 2 GiB frame size
            assert await client.receive_some(1) == b""
        nursery.cancel_scope.cancel()


def test_a_real_server_answers_the_connection_over_its_limit():
    with anvil_server(extra_args=["--max-connections", "1"]) as srv:
        first = _first_connection(srv.socket)
        second = _connect(srv.socket)
        try:
            second.sendall(encode(m.Tversion(tag=65535, msize=8192, version="9P2000.L"), Dialect.P2000L))
            assert _receive(second, Dialect.P2000L) == m.Rlerror(tag=65535, ecode=errno.EUSERS), srv.trace_tail()
            assert second.recv(1) == b""
        finally:
            first.close()
            second.close()


def _first_connection(path) -> socket.socket:
    """The one connection allowed, once the harness's readiness probe has left."""
    deadline = time.monotonic() + 20
    while True:
        sock = _connect(path)
        sock.sendall(encode(m.Tversion(tag=65535, msize=8192, version="9P2000.L"), Dialect.P2000L))
        if isinstance(_receive(sock, Dialect.P2000L), m.Rversion):
            return sock
        sock.close()
        assert time.monotonic() < deadline, "the server kept refusing its first connection"
        time.sleep(0.05)  # poll interval for the probe's connection to end, bounded by the deadline


def _connect(path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(20)  # every recv below fails after this instead of hanging
    sock.connect(str(path))
    return sock


def _receive(sock: socket.socket, dialect: Dialect) -> m.Message:
    frames = FrameBuffer(1 << 16)
    while (frame := frames.next_frame()) is None:
        data = sock.recv(1 << 16)
        assert data, "connection closed with no reply"
        frames.feed(data)
    return decode(frame, dialect)

"""AsyncClient against the server's real Connection over trio memory streams.

The server's side is seen directly: its trace (every message, in the text
form), its tag table (reads parked on blocking files) and its fid table.
"""

from __future__ import annotations

import re
from contextlib import asynccontextmanager

import pytest
import trio
import trio.testing

from anvilfs.aioclient import AsyncClient, ConnectionLost, Lines, ServerError
from anvilfs.app import App
from anvilfs.ninep import Dialect, FrameBuffer, LocalProtocolError, decode
from anvilfs.server import Connection
from harness.apps import until
from harness.deadlines import within

WAIT = 30  # virtual seconds under autojump_clock: reached only when something never happens


class Served:
    def __init__(self, app: App, conn: Connection, fs: AsyncClient, trace: list[str], scope: trio.CancelScope):
        self.app, self.conn, self.fs, self.trace = app, conn, fs, trace
        self.hang_up = scope.cancel  # the server ends the connection (and closes its end)

    def quiet(self) -> bool:
        """Nothing of the client left on the server: no parked read, no pending flush, only the root fid."""
        return len(self.conn.tags) == 0 and not self.conn.core.flushing and len(self.conn.dispatcher.fids) == 1

    def lines(self, pattern: str) -> list[re.Match]:
        return [m for line in self.trace if (m := re.search(pattern, line))]


@asynccontextmanager
async def served(app: App | None = None):
    app = app or App()
    async with trio.open_nursery() as nursery:
        await nursery.start(app.run)
        client_end, server_end = trio.testing.memory_stream_pair()
        trace: list[str] = []
        conn = Connection(server_end, app.root, trace=trace.append, name="c1",
                          on_error=lambda where, text: app.record_error(f"c1 {where}", text))
        scope = trio.CancelScope()

        async def serve() -> None:
            with scope:
                await conn.serve()

        nursery.start_soon(serve)
        with within(WAIT, "the handshake"):
            fs = await AsyncClient.over(client_end, uname="glenda")
        async with fs:
            yield Served(app, conn, fs, trace, scope)
        nursery.cancel_scope.cancel()


def hang(app: App, *names: str) -> None:
    """Sessions whose turn never ends until interrupted: their `wait` blocks."""
    for name in names:
        app.sessions.new("sim", "/tmp", name=name)
        app.sessions.submit(name, "sim:hang", "glenda")


async def interrupt(app: App, *names: str) -> None:
    """End the hanging turns (once they run: a session still starting has none to interrupt)."""
    await until(lambda: all(app.sessions.get(name).state.value == "running" for name in names), f"{names} running")
    for name in names:
        app.sessions.interrupt(name)


async def test_files_read_written_listed_and_a_ctl_answered(autojump_clock):
    async with served() as s:
        fs = s.fs
        with within(WAIT, "the requests"):
            assert await fs.ctl("ctl", "new sim /tmp name=bot1") == "bot1"
            assert "bot1" in await fs.ls("")
            assert (await fs.stat("bot1/status")).name == "status"
            await fs.write("bot1/in", b"hello\n")
            assert await fs.read_once("bot1/wait") == b"await\n"
            assert (await fs.read("bot1/out")).startswith(b"[simulated] bot1")
            assert (await fs.read("list")).startswith(b"bot1 sim await")
        assert s.quiet() and fs.in_flight == 0


async def test_a_write_larger_than_the_iounit_goes_in_pieces_on_one_open(autojump_clock):
    async with served() as s:
        hang(s.app)
        s.app.sessions.new("sim", "/tmp", name="bot1")
        prompt = b"".join(b"line %05d of a long prompt\n" % i for i in range(5000))  # ~140 KB: three pieces
        with within(WAIT, "the write and the turn"):
            await s.fs.write("bot1/in", prompt)
            assert await s.fs.read_once("bot1/wait") == b"await\n"
        assert len(s.lines(r"c1 -> Twalk .*wnames \[bot1 in\]")) == 1
        offsets = [int(m[1]) for m in s.lines(r"c1 -> Twrite tag \d+ fid \d+ offset (\d+)")]
        assert len(offsets) == 3 and offsets[0] == 0
        assert f"{len(prompt)} bytes" in (await s.fs.read("bot1/out")).decode()


async def test_a_server_error_carries_the_servers_text_and_the_client_goes_on(autojump_clock):
    async with served() as s:
        with within(WAIT, "the requests"):
            with pytest.raises(ServerError, match="'nope' does not exist"):
                await s.fs.read("nope")
            with pytest.raises(ServerError, match="unknown command 'bogus'"):
                await s.fs.ctl("ctl", "bogus")
            with pytest.raises(ServerError, match="'x' does not exist"):
                await s.fs.read("list/x")  # list is a file: the walk's second step fails
            assert await s.fs.read("roles") is not None
        assert s.quiet()


async def test_a_small_write_a_ctl_and_a_read_once_each_go_out_as_one_pipeline(autojump_clock):
    async with served() as s:
        sends, send_all = [], s.fs._mux.stream.send_all

        async def counted(data) -> None:  # the requests in each send of the client
            frames = FrameBuffer(1 << 20)
            frames.feed(bytes(data))
            sends.append([type(decode(f, Dialect.P2000)).__name__ for f in iter(frames.next_frame, None)])
            await send_all(data)

        s.fs._mux.stream.send_all = counted
        with within(WAIT, "the requests"):
            assert await s.fs.ctl("ctl", "new sim /tmp name=bot1") == "bot1"
            await s.fs.write("bot1/in", b"hello")
            assert await s.fs.read_once("bot1/wait") == b"await\n"
        assert sends == [["Twalk", "Topen", "Twrite", "Tread", "Tclunk"], ["Twalk", "Topen", "Twrite", "Tclunk"],
                         ["Twalk", "Topen", "Tread"], ["Tclunk"]]  # the last sent after the answer, not waited for
        await until(s.quiet, "the last clunk handled")


async def test_each_step_of_a_pipeline_reports_its_own_error(autojump_clock):
    async with served() as s:
        s.app.sessions.new("sim", "/tmp", name="bot1")
        s.app.sessions.stop("bot1")
        with within(WAIT, "the requests"):
            with pytest.raises(ServerError, match="'nobody' does not exist"):
                await s.fs.write("nobody/in", b"hello")  # the walk
            with pytest.raises(ServerError, match="'inn' does not exist"):
                await s.fs.write("bot1/inn", b"hello")  # the walk's second name
            with pytest.raises(ServerError, match="restart"):
                await s.fs.write("bot1/in", b"hello")  # the Twrite: the session is stopped
            with pytest.raises(ServerError, match="'nope' does not exist"):
                await s.fs.read_once("nope/wait")
            with pytest.raises(ServerError, match="permission|not open for|cannot be opened|denied"):
                await s.fs.read_once("bot1/in")  # the open: in is write-only
        await until(s.quiet, "every fid clunked")


async def test_fifty_blocked_waits_and_a_follow_of_events_on_one_connection(autojump_clock):
    names = [f"r{i}" for i in range(50)]
    async with served() as s:
        hang(s.app, *names)
        answers: dict[str, bytes] = {}
        seen: list[str] = []

        async def wait_for(name: str) -> None:
            answers[name] = await s.fs.read_once(f"{name}/wait")

        async def follow() -> None:
            async with s.fs.follow("events") as lines:
                async for line in lines:
                    if " await simulated interrupted" in line:
                        seen.append(line.split()[1])
                        if len(seen) == len(names):
                            return

        with within(WAIT, "fifty waits and the events follower"):
            async with trio.open_nursery() as nursery:
                for name in names:
                    nursery.start_soon(wait_for, name)
                nursery.start_soon(follow)
                await until(lambda: len(s.conn.tags) == len(names) + 1, "51 reads parked on the server")
                assert s.fs.in_flight == len(names) + 1 and not answers
                await interrupt(s.app, *names)
        assert answers == {name: b"await\n" for name in names}
        assert sorted(seen) == sorted(names)
        # the clunks go out after the answers, not waited for: handled soon after
        await until(lambda: s.quiet() and s.fs.in_flight == 0, "the waits' clunks handled")


async def test_a_cancelled_wait_is_flushed_and_its_fid_clunked(autojump_clock):
    async with served() as s:
        hang(s.app, "bot1")
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(s.fs.read_once, "bot1/wait")
                await until(lambda: len(s.conn.tags) == 1, "the wait parked on the server")
                scope.cancel()
        assert scope.cancelled_caught
        [read] = s.lines(r"c1 -> Tread tag (\d+) fid (\d+)")
        tag, fid = read[1], read[2]
        [flush] = s.lines(rf"c1 -> Tflush tag (\d+) oldtag {tag}$")
        assert s.lines(rf"c1 <- Rflush tag {flush[1]}$")
        assert s.lines(rf"c1 -> Tclunk tag \d+ fid {fid}$")
        assert not s.lines(rf"c1 <- Rread tag {tag} ")  # the flushed read got no reply
        assert s.quiet() and s.fs.in_flight == 0
        with within(WAIT, "a request after the flush"):
            assert (await s.fs.read("list")).startswith(b"bot1 sim ")
        assert s.app.sessions.get("bot1").busy  # only the read was cancelled, not the turn


async def test_a_cancelled_follow_is_flushed_and_the_others_go_on(autojump_clock):
    async with served() as s:
        hang(s.app, "bot1")
        got: list[bytes] = []

        async def follow(task_status=trio.TASK_STATUS_IGNORED) -> None:
            with trio.CancelScope() as scope:
                task_status.started(scope)
                async with s.fs.follow("events") as lines:
                    async for line in lines:
                        pass

        async def wait() -> None:
            got.append(await s.fs.read_once("bot1/wait"))

        with within(WAIT, "the follower's cancel and the wait"):
            async with trio.open_nursery() as nursery:
                follower = await nursery.start(follow)
                nursery.start_soon(wait)
                await until(lambda: len(s.conn.tags) == 2, "the follow and the wait parked")
                follower.cancel()
                await until(lambda: len(s.conn.tags) == 1, "the follow's read flushed")
                await interrupt(s.app, "bot1")
        assert got == [b"await\n"]
        [read] = s.lines(r"c1 -> Twalk tag \d+ fid \d+ newfid (\d+) wnames \[events\]")
        [events_read] = s.lines(rf"c1 -> Tread tag (\d+) fid {read[1]} ")
        assert s.lines(rf"c1 -> Tflush tag \d+ oldtag {events_read[1]}$")
        await until(lambda: s.quiet() and s.fs.in_flight == 0, "the wait's clunk handled")  # not waited for


async def test_a_lost_connection_raises_connection_lost_in_every_caller(autojump_clock):
    async with served() as s:
        hang(s.app, "bot1", "bot2")
        errors: list[BaseException] = []

        async def wait(name: str) -> None:
            try:
                await s.fs.read_once(f"{name}/wait")
            except ConnectionLost as exc:
                errors.append(exc)

        with within(WAIT, "the waiters to hear of the lost connection"):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(wait, "bot1")
                nursery.start_soon(wait, "bot2")
                await until(lambda: len(s.conn.tags) == 2, "both waits parked")
                s.hang_up()
        assert len(errors) == 2 and all("closed the connection" in str(e) for e in errors)
        with pytest.raises(ConnectionLost):
            await s.fs.read("list")


async def test_the_client_outside_its_async_with_says_how_to_use_it(autojump_clock):
    app = App()
    async with trio.open_nursery() as nursery:
        await nursery.start(app.run)
        client_end, server_end = trio.testing.memory_stream_pair()
        nursery.start_soon(Connection(server_end, app.root).serve)
        with within(WAIT, "the handshake"):
            fs = await AsyncClient.over(client_end, uname="glenda")
        with pytest.raises(LocalProtocolError, match="inside `async with await AsyncClient.connect"):
            await fs.read("list")
        async with fs:
            with pytest.raises(LocalProtocolError, match="entered already"):
                await fs.__aenter__()
        with pytest.raises(ConnectionLost, match="the client was closed"):
            await fs.read("list")
        nursery.cancel_scope.cancel()


async def test_a_follow_of_stream_ends_with_the_turn(autojump_clock):
    async with served() as s:
        s.app.sessions.new("sim", "/tmp", name="bot1")
        with within(WAIT, "the turn's stream to end"):
            async with s.fs.follow("bot1/stream") as lines:  # follows the next turn to start
                await s.fs.write("bot1/in", b"hello\n")
                got = [line async for line in lines]
        assert got[0].startswith("[simulated] bot1, turn 1") and len(got) >= 2
        assert s.quiet()


async def test_lines_come_whole_across_reads_and_a_last_one_without_newline_too():
    pieces = [b"one\ntw", b"o\nthr", b"ee", b""]
    offsets = []

    async def read(fid: int, offset: int) -> bytes:
        offsets.append(offset)
        return pieces.pop(0)

    assert [line async for line in Lines(read, 7)] == ["one", "two", "three"]
    assert offsets == [0, 6, 11, 13]


async def test_an_error_in_the_block_comes_out_as_itself_not_in_an_exception_group(autojump_clock):
    app = App()
    async with trio.open_nursery() as nursery:
        await nursery.start(app.run)
        client_end, server_end = trio.testing.memory_stream_pair()
        nursery.start_soon(Connection(server_end, app.root).serve)
        with within(WAIT, "the handshake and the read"):
            with pytest.raises(ServerError, match="'nope' does not exist"):
                async with await AsyncClient.over(client_end, uname="glenda") as fs:
                    await fs.read("nope")
        nursery.cancel_scope.cancel()

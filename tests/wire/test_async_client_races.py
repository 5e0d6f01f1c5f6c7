"""AsyncClient against a server the test plays by hand, for orders the real one makes only by chance.

The test reads each request the client sends and chooses the replies and
their order: a reply that races the Tflush, an Rflush that never comes, a
reply to a tag nobody asked with.
"""

from __future__ import annotations

import pytest
import trio
import trio.testing

from anvilfs.aioclient import AsyncClient, ConnectionLost
from anvilfs.ninep import Dialect, FrameBuffer, Qid, decode, encode
from anvilfs.ninep import messages as m
from harness.apps import until
from harness.deadlines import within

WAIT = 30  # virtual seconds (autojump_clock)
D = Dialect.P2000
QID = Qid(0, 0, 1)


class HandServer:
    """The server's end of the stream, driven by the test one message at a time."""

    def __init__(self, stream: trio.abc.Stream):
        self.stream = stream
        self.frames = FrameBuffer(1 << 20)

    async def receive(self, what: str) -> m.Message:
        with within(WAIT, what):
            while (frame := self.frames.next_frame()) is None:
                self.frames.feed(await self.stream.receive_some(1 << 16))
        return decode(frame, D)

    async def expect(self, kind: type[m.Message]) -> m.Message:
        msg = await self.receive(f"a {kind.__name__} from the client")
        assert isinstance(msg, kind), f"expected {kind.__name__}, got {msg}"
        return msg

    async def send(self, *msgs: m.Message) -> None:
        await self.stream.send_all(b"".join(encode(msg, D) for msg in msgs))

    async def handshake(self) -> None:
        version = await self.expect(m.Tversion)
        await self.send(m.Rversion(tag=version.tag, msize=8192, version="9P2000"))
        attach = await self.expect(m.Tattach)
        await self.send(m.Rattach(tag=attach.tag, qid=Qid(0x80, 0, 0)))

    async def answer_open(self) -> int:
        """A whole walk and an open; the fid."""
        walk = await self.expect(m.Twalk)
        await self.send(m.Rwalk(tag=walk.tag, wqids=tuple(QID for _ in walk.wnames)))
        opened = await self.expect(m.Topen)
        await self.send(m.Ropen(tag=opened.tag, qid=QID))
        return walk.newfid

    async def answer_clunk(self, fid: int) -> None:
        clunk = await self.expect(m.Tclunk)
        assert clunk.fid == fid, f"clunked fid {clunk.fid}, not {fid}"
        await self.send(m.Rclunk(tag=clunk.tag))


@pytest.fixture
async def pair(nursery):
    client_end, server_end = trio.testing.memory_stream_pair()
    server = HandServer(server_end)
    nursery.start_soon(server.handshake)
    with within(WAIT, "the handshake"):
        fs = await AsyncClient.over(client_end, uname="glenda")
    async with fs:
        yield fs, server


async def cancelled_call(nursery, call, *args) -> trio.CancelScope:
    """Start call(*args) in a task of its own, under a scope the test cancels; the scope."""
    async def run(task_status=trio.TASK_STATUS_IGNORED):
        with trio.CancelScope() as scope:
            task_status.started(scope)
            await call(*args)
            raise AssertionError(f"{call.__name__} returned though it was cancelled")

    return await nursery.start(run)


async def cancel_a_held_read(fs, server, nursery) -> tuple[int, m.Tread, m.Tflush]:
    """A read_once whose Tread the server holds, cancelled: its fid, the Tread, and the Tflush it sent."""
    scope = await cancelled_call(nursery, fs.read_once, "bot1/wait")
    fid = await server.answer_open()
    read = await server.expect(m.Tread)
    scope.cancel()
    flush = await server.expect(m.Tflush)
    assert flush.oldtag == read.tag
    return fid, read, flush


async def test_a_read_reply_that_races_the_flush_is_dropped_and_the_fid_clunked(autojump_clock, pair, nursery):
    fs, server = pair
    fid, read, flush = await cancel_a_held_read(fs, server, nursery)
    await server.send(m.Rread(tag=read.tag, data=b"await\n"), m.Rflush(tag=flush.tag))  # flush(5): reply first
    await server.answer_clunk(fid)
    await until(lambda: fs.in_flight == 0, "the client to settle")


async def test_a_walk_reply_that_races_the_flush_has_its_new_fid_clunked(autojump_clock, pair, nursery):
    fs, server = pair
    scope = await cancelled_call(nursery, fs.stat, "bot1/status")  # a walk alone first, then the Tstat
    walk = await server.expect(m.Twalk)
    scope.cancel()
    flush = await server.expect(m.Tflush)
    await server.send(m.Rwalk(tag=walk.tag, wqids=(QID, QID)), m.Rflush(tag=flush.tag))  # the walk made the fid
    await server.answer_clunk(walk.newfid)


async def test_a_pipeline_cancelled_unanswered_flushes_the_last_first_then_clunks_what_its_walk_made(
        autojump_clock, pair, nursery):
    fs, server = pair
    scope = await cancelled_call(nursery, fs.read_once, "bot1/wait")  # walk, open and read sent together
    walk, opened, read = [await server.expect(kind) for kind in (m.Twalk, m.Topen, m.Tread)]
    scope.cancel()
    flushes = [await server.expect(m.Tflush) for _ in range(3)]
    assert [f.oldtag for f in flushes] == [read.tag, opened.tag, walk.tag]  # a clunk first would end the read
    # the walk's reply raced its flush; the open and the read were flushed unanswered
    await server.send(m.Rwalk(tag=walk.tag, wqids=(QID, QID)), *(m.Rflush(tag=f.tag) for f in flushes))
    await server.answer_clunk(walk.newfid)
    await until(lambda: fs.in_flight == 0, "the client to settle")


async def test_an_rflush_without_the_reply_means_the_walk_made_nothing(autojump_clock, pair, nursery):
    fs, server = pair
    scope = await cancelled_call(nursery, fs.stat, "bot1/status")
    walk = await server.expect(m.Twalk)
    scope.cancel()
    flush = await server.expect(m.Tflush)
    await server.send(m.Rflush(tag=flush.tag))
    # nothing more: no clunk of a fid that does not exist; the next message is the next request
    nursery.start_soon(fs.read_once, "list")
    assert isinstance(await server.receive("the next request"), m.Twalk)
    assert walk.tag not in fs._mux.protocol.busy_tags()


async def test_a_call_cancelled_before_its_first_send_sends_nothing(autojump_clock, pair, nursery):
    fs, server = pair
    with trio.CancelScope() as scope:
        scope.cancel()
        await fs.read_once("bot1/wait")
    assert scope.cancelled_caught and fs.in_flight == 0
    nursery.start_soon(fs.read_once, "list")
    walk = await server.receive("the next request")  # the first thing the server hears
    assert isinstance(walk, m.Twalk) and walk.wnames == ("list",)


async def test_with_no_rflush_the_caller_goes_after_the_deadline_and_the_tag_stays_taken(autojump_clock, pair, nursery):
    fs, server = pair
    fid, read, flush = await cancel_a_held_read(fs, server, nursery)
    await server.answer_clunk(fid)  # the client gives up waiting (FLUSH_DEADLINE) and clunks
    await until(lambda: fs.in_flight == 2, "the Rclunk taken in")
    assert fs._mux.protocol.busy_tags() == {read.tag, flush.tag}  # never reused while the flush is pending
    await server.send(m.Rflush(tag=flush.tag))  # late, but it frees them
    await until(lambda: fs.in_flight == 0, "the late Rflush to free the tags")


async def test_a_reply_to_no_request_ends_the_connection_for_every_caller(autojump_clock, pair, nursery):
    fs, server = pair
    failed = trio.Event()

    async def call():
        with pytest.raises(ConnectionLost, match=r"broke the 9P protocol \(the server sent Rclunk for tag 999"):
            await fs.read_once("bot1/wait")
        failed.set()

    nursery.start_soon(call)
    await server.expect(m.Twalk)
    await server.send(m.Rclunk(tag=999))
    with within(WAIT, "the caller to hear of the broken protocol"):
        await failed.wait()
    with pytest.raises(ConnectionLost, match="broke the 9P protocol"):
        await fs.read("list")

"""What one connection can make the server hold, and the protocol details at batch edges.

Each test drives a real Connection over trio memory streams with a small tree
of its own: `big` (a computed file of known size) and `feed` (a blocking file
whose reads wake when the test says). Bounds are checked by counting what
the server hands to the stream, not by measuring memory. Every wait has a
deadline on the autojump clock, so a server that does not answer fails the
test at once instead of hanging it.
"""

from __future__ import annotations

import errno

import trio
import trio.testing

from anvilfs.ninep import Dialect, encode
from anvilfs.ninep import messages as m
from anvilfs.server import Connection, Limits, connection
from anvilfs.tree import Directory, StreamFile, TextFile
from harness.transcript import Peer

DEADLINE = 60  # virtual seconds: only reached when the server never answers
BIG = 300_000


class Gate:
    """A cursor for `feed`: not ready until the test opens the gate, then `size` bytes."""

    def __init__(self, opened: trio.Event, size: int):
        self._opened, self._size = opened, size

    def ready(self, offset: int) -> bool:
        return self._opened.is_set()

    async def wait_ready(self, offset: int) -> None:
        await self._opened.wait()

    def read(self, offset: int, count: int) -> bytes:
        return b"f" * min(self._size, count)


class RecordingStream(trio.abc.Stream):
    """The server's end of the connection, remembering the size of every send."""

    def __init__(self, inner: trio.abc.Stream):
        self.inner = inner
        self.sends: list[int] = []

    async def send_all(self, data) -> None:
        self.sends.append(len(data))
        await self.inner.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.inner.wait_send_all_might_not_block()

    async def receive_some(self, max_bytes=None) -> bytes:
        return await self.inner.receive_some(max_bytes)

    async def aclose(self) -> None:
        await self.inner.aclose()


class Served:
    def __init__(self, limits: Limits, feed_size: int):
        self.opened = trio.Event()
        self.version = 0  # bump it to change `changing`
        self.root = Directory("/", "/", [
            TextFile("big", "big", lambda: "b" * BIG),
            TextFile("changing", "changing", lambda: f"{self.version:08}" + "c" * (BIG - 8)),
            StreamFile("feed", "feed", lambda: Gate(self.opened, feed_size)),
        ])
        client_end, server_end = trio.testing.lockstep_stream_pair()  # a send waits for the reader
        self.stream = RecordingStream(server_end)
        self.conn = Connection(self.stream, self.root, limits=limits)
        self.peer = Peer(client_end, limits)


async def serve(nursery, limits: Limits = Limits(), *, feed_size: int = 10, version: str = "9P2000", msize: int = 65536) -> Served:
    served = Served(limits, feed_size)
    nursery.start_soon(served.conn.serve)
    peer = served.peer
    await peer.send(f"Tversion tag 65535 msize {msize} version {version}")
    await peer.receive()
    await peer.send('Tattach tag 1 fid 0 afid 4294967295 uname glenda aname ""')
    assert isinstance(await peer.receive(), m.Rattach)
    return served


async def open_file(peer: Peer, fid: int, name: str) -> None:
    await peer.send(f"Twalk tag 1 fid 0 newfid {fid} wnames [{name}]", f"Topen tag 2 fid {fid} mode 0")
    assert isinstance(await peer.receive(), m.Rwalk)
    assert isinstance(await peer.receive(), m.Ropen)


# ------------------------------------------------------------ item 2: unsent replies


async def test_one_batch_of_big_reads_is_sent_in_bounded_pieces(autojump_clock):
    msize = 65536
    async with trio.open_nursery() as nursery:
        with trio.fail_after(DEADLINE):
            served = await serve(nursery, msize=msize)
            peer = served.peer
            await open_file(peer, 1, "big")
            reads = 60  # 60 x 64 KiB = 3.75 MiB of replies asked for in one send of 1.4 KB
            await peer.send(*(f"Tread tag {100 + i} fid 1 offset 0 count {msize}" for i in range(reads)))
            for i in range(reads):
                reply = await peer.receive()
                assert isinstance(reply, m.Rread) and reply.tag == 100 + i and len(reply.data) == msize - 24
            # the documented bound: max_unsent (1 MiB) plus the one reply that passed it
            assert max(served.stream.sends) <= (1 << 20) + msize, served.stream.sends
            assert len(served.stream.sends) > 1
        nursery.cancel_scope.cancel()


async def test_small_replies_of_one_batch_still_go_out_in_one_send(autojump_clock):
    async with trio.open_nursery() as nursery:
        with trio.fail_after(DEADLINE):
            served = await serve(nursery)
            peer = served.peer
            sends_before = len(served.stream.sends)
            await peer.send(*(f"Tstat tag {10 + i} fid 0" for i in range(50)))
            for i in range(50):
                assert (await peer.receive()).tag == 10 + i
            assert len(served.stream.sends) == sends_before + 1
        nursery.cancel_scope.cancel()


async def test_blocked_reads_woken_together_wait_for_room(autojump_clock):
    msize = 65536
    async with trio.open_nursery() as nursery:
        with trio.fail_after(DEADLINE):
            served = await serve(nursery, msize=msize, feed_size=msize)
            peer = served.peer
            reads = 60
            for i in range(reads):
                await open_file(peer, 10 + i, "feed")
            await peer.send(*(f"Tread tag {100 + i} fid {10 + i} offset 0 count {msize}" for i in range(reads)))
            await trio.testing.wait_all_tasks_blocked()
            served.opened.set()  # all 60 are ready at once; the client reads nothing yet
            await trio.testing.wait_all_tasks_blocked()
            got = {(await peer.receive()).tag for _ in range(reads)}
            assert got == {100 + i for i in range(reads)}
            assert max(served.stream.sends) <= (1 << 20) + msize, served.stream.sends
        nursery.cancel_scope.cancel()


async def test_a_batch_of_requests_lets_other_connections_run_between_its_turns(autojump_clock, monkeypatch):
    """One connection's pipelined burst (the web's first look at 1,000 sessions) does not hold the loop
    until it is all answered: with a turn of 0 s the burst gives way after each request, and another
    connection's walk is answered in the middle of it; with the turn the server has, a burst this small
    is one step (the order shows which: the walks are logged as the tree looks the names up)."""
    async def order_of_walks(turn: float) -> list[str]:
        monkeypatch.setattr(connection, "TURN", turn)
        looked_up: list[str] = []
        leaf = TextFile("leaf", "leaf", lambda: "x")
        root = Directory("/", "/", [], find=lambda name: looked_up.append(name) or leaf)
        async with trio.open_nursery() as nursery:
            peers = []
            for _ in range(2):
                client_end, server_end = trio.testing.lockstep_stream_pair()
                nursery.start_soon(Connection(server_end, root).serve)
                peer = Peer(client_end, Limits())
                await peer.send("Tversion tag 65535 msize 65536 version 9P2000")
                await peer.receive()
                await peer.send('Tattach tag 1 fid 0 afid 4294967295 uname glenda aname ""')
                assert isinstance(await peer.receive(), m.Rattach)
                peers.append(peer)
            burst, other = peers
            await burst.send(*(f"Twalk tag {i} fid 0 newfid {i + 1} wnames [a{i}]" for i in range(200)))
            await other.send("Twalk tag 7 fid 0 newfid 1 wnames [b]")
            assert isinstance(await other.receive(), m.Rwalk)
            for i in range(200):
                assert (await burst.receive()).tag == i  # every request answered, in order
            nursery.cancel_scope.cancel()
        return looked_up

    with trio.fail_after(DEADLINE):
        given_way = await order_of_walks(0.0)
        assert "b" in given_way[:-1], f"the other connection's walk came after the whole burst: {given_way[-3:]}"
        held = await order_of_walks(float("inf"))
        assert held[-1] == "b" and len(held) == 201, held[-3:]


# ------------------------------------------------------------ item 3: snapshots


async def test_300_fids_reading_the_same_file_share_one_snapshot(autojump_clock):
    async with trio.open_nursery() as nursery:
        with trio.fail_after(DEADLINE):
            served = await serve(nursery)
            peer = served.peer
            for fid in range(1, 301):
                await open_file(peer, fid, "big")
                await peer.send(f"Tread tag 3 fid {fid} offset 0 count 100")
                assert (await peer.receive()).data == b"b" * 100
            budget = served.conn.dispatcher.snapshots
            assert (budget.held, budget.held_bytes) == (1, BIG)
            await peer.send(*(f"Tclunk tag 4 fid {fid}" for fid in range(1, 301)))
            for _ in range(300):
                await peer.receive()
            assert (budget.held, budget.held_bytes) == (0, 0)
        nursery.cancel_scope.cancel()


async def test_snapshots_past_the_connection_limit_are_refused_with_enomem(autojump_clock):
    async with trio.open_nursery() as nursery:
        with trio.fail_after(DEADLINE):
            served = await serve(nursery, Limits(max_snapshot_bytes=1 << 20), version="9P2000.u")
            peer = served.peer
            for fid in (1, 2, 3, 4):  # each reads a different version: 3 x 300 KB fit in 1 MiB
                served.version = fid
                await open_file(peer, fid, "changing")
                await peer.send(f"Tread tag 3 fid {fid} offset 0 count 8")
                reply = await peer.receive()
                if fid < 4:
                    assert reply.data == f"{fid:08}".encode()
            assert isinstance(reply, m.Rerror) and reply.errno == errno.ENOMEM, reply
            assert reply.ename == ("too much memory held by open files: at most 1 MiB of snapshots per connection; "
                                   "close some open files")
            # fid 5 shares fid 3's snapshot (no new bytes); its re-read of the new content is refused
            # and it keeps the snapshot it had
            served.version = 3
            await open_file(peer, 5, "changing")
            await peer.send("Tread tag 5 fid 5 offset 0 count 8")
            assert (await peer.receive()).data == b"00000003"
            served.version = 4
            await peer.send("Tread tag 6 fid 5 offset 0 count 8", "Tread tag 7 fid 5 offset 4 count 4")
            assert isinstance(await peer.receive(), m.Rerror)
            assert (await peer.receive()).data == b"0003"
            await peer.send("Tclunk tag 8 fid 2", "Tread tag 9 fid 4 offset 0 count 8")
            assert isinstance(await peer.receive(), m.Rclunk)
            assert (await peer.receive()).data == b"00000004"  # room again
            assert served.conn.dispatcher.snapshots.held == 3
        nursery.cancel_scope.cancel()


# ------------------------------------------------------------ item 4: blocked reads


async def test_blocked_reads_past_the_limit_are_refused_with_emfile(autojump_clock):
    async with trio.open_nursery() as nursery:
        with trio.fail_after(DEADLINE):
            served = await serve(nursery, version="9P2000.u")
            peer = served.peer
            await open_file(peer, 1, "feed")
            limit = Limits().max_blocked_reads
            await peer.send(*(f"Tread tag {i} fid 1 offset 0 count 10" for i in range(limit + 1)))
            refused = await peer.receive()  # the others are parked: this is the only reply
            assert isinstance(refused, m.Rerror) and refused.tag == limit, refused
            assert refused.errno == errno.EMFILE
            assert refused.ename.startswith(f"too many blocked reads: at most {limit} ")
            await peer.send("Tflush tag 5000 oldtag 0")
            assert await peer.receive() == m.Rflush(tag=5000)
            await peer.send(f"Tread tag {limit} fid 1 offset 0 count 10")  # room for one again
            served.opened.set()
            tags = {(await peer.receive()).tag for _ in range(limit)}
            assert tags == set(range(1, limit + 1))
        nursery.cancel_scope.cancel()


# ------------------------------------------------------------ item 9: flush of a flush


async def test_flush_of_a_pending_flush_is_answered_after_it(autojump_clock):
    async with trio.open_nursery() as nursery:
        with trio.fail_after(DEADLINE):
            served = await serve(nursery)
            peer = served.peer
            await open_file(peer, 1, "feed")
            await peer.send("Tread tag 10 fid 1 offset 0 count 10", "Tflush tag 11 oldtag 10", "Tflush tag 12 oldtag 11")
            assert [await peer.receive(), await peer.receive()] == [m.Rflush(tag=11), m.Rflush(tag=12)]
            await peer.send("Tstat tag 10 fid 0", "Tflush tag 13 oldtag 11")  # both tags are free again
            assert isinstance(await peer.receive(), m.Rstat)
            assert await peer.receive() == m.Rflush(tag=13)
        nursery.cancel_scope.cancel()


async def test_a_pending_flush_tag_cannot_be_reused(autojump_clock):
    async with trio.open_nursery() as nursery:
        with trio.fail_after(DEADLINE):
            served = await serve(nursery)
            peer = served.peer
            await open_file(peer, 1, "feed")
            await peer.send("Tread tag 10 fid 1 offset 0 count 10")
            await trio.testing.wait_all_tasks_blocked()
            # the Rflush waits for the read's task, so tag 11 is still in flight for the Tstat
            await peer.send("Tflush tag 11 oldtag 10", "Tstat tag 11 fid 0")
            reply = await peer.receive()
            assert isinstance(reply, m.Rerror) and reply.ename == "invalid: tag 11 is already in flight: use another tag"
            assert await peer.receive() == m.Rflush(tag=11)
        nursery.cancel_scope.cancel()


# ------------------------------------------------------------ item 10: msize within a batch


async def test_a_lowered_msize_holds_for_the_rest_of_the_same_send(autojump_clock):
    async with trio.open_nursery() as nursery:
        with trio.fail_after(DEADLINE):
            served = Served(Limits(), 10)
            nursery.start_soon(served.conn.serve)
            peer = served.peer
            big_walk = encode(m.Twalk(tag=2, fid=0, newfid=1, wnames=("n" * 902,)), Dialect.P2000)
            assert len(big_walk) == 921
            await peer.send_raw(encode(m.Tversion(tag=65535, msize=256, version="9P2000"), Dialect.P2000) + big_walk)
            assert await peer.receive() == m.Rversion(tag=65535, msize=256, version="9P2000")
            assert await peer.closed()  # the 921-byte frame broke msize: closed, not answered
        nursery.cancel_scope.cancel()

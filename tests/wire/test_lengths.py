"""Lengths in stat (SPEC §4): a snapshot file reports what a read at offset 0 gives; streams report 0.

Over the wire, in both ways of asking: Tstat's Rstat (9P2000.u, whose
directory reads carry the same records) and Tgetattr's Rgetattr (9P2000.L).
A stat of a fid that has read reports the snapshot it reads, a stat by path
a fresh one; bytes written to an open file count only once its clunk
submitted them; a Twstat or Tsetattr that gives the length a file has
changes nothing.
"""

from __future__ import annotations

import pytest

from anvilfs.ninep import Dialect, Qid, Stat, decode_stat, encode
from anvilfs.ninep import messages as m
from harness.apps import until
from harness.transcript import Peer, served

U32, U64 = 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF
DIALECTS = [Dialect.P2000U, Dialect.P2000L]


class Talk:
    """The test's end of one connection: requests as messages, each with its own tag and fid."""

    def __init__(self, peer: Peer, dialect: Dialect):
        self.peer, self.dialect, self.tag, self.next_fid = peer, dialect, 1, 1

    async def ask(self, msg: m.Message) -> m.Message:
        await self.peer.stream.send_all(encode(msg, self.peer.dialect))
        return await self.peer.receive(type(msg).__name__)

    def _tag(self) -> int:
        self.tag += 1
        return self.tag

    async def hello(self) -> None:
        await self.ask(m.Tversion(tag=0xFFFF, msize=65536, version=self.dialect.value))
        await self.ask(m.Tattach(tag=self._tag(), fid=0, afid=U32, uname="glenda", aname="", n_uname=1000))

    async def walk(self, path: str) -> int:
        fid, self.next_fid = self.next_fid, self.next_fid + 1
        reply = await self.ask(m.Twalk(tag=self._tag(), fid=0, newfid=fid, wnames=tuple(path.split("/")) if path else ()))
        assert isinstance(reply, m.Rwalk), f"walk to {path}: {reply}"
        return fid

    async def open(self, fid: int, write: bool = False) -> None:
        if self.dialect is Dialect.P2000L:
            reply = await self.ask(m.Tlopen(tag=self._tag(), fid=fid, flags=1 if write else 0))
        else:
            reply = await self.ask(m.Topen(tag=self._tag(), fid=fid, mode=1 if write else 0))
        assert isinstance(reply, (m.Ropen, m.Rlopen)), reply

    async def read(self, fid: int, offset: int = 0, count: int = 60000) -> bytes:
        reply = await self.ask(m.Tread(tag=self._tag(), fid=fid, offset=offset, count=count))
        assert isinstance(reply, m.Rread), reply
        return reply.data

    async def write(self, fid: int, data: bytes) -> None:
        reply = await self.ask(m.Twrite(tag=self._tag(), fid=fid, offset=0, data=data))
        assert isinstance(reply, m.Rwrite), reply

    async def clunk(self, fid: int) -> None:
        assert isinstance(await self.ask(m.Tclunk(tag=self._tag(), fid=fid)), m.Rclunk)

    async def length(self, fid: int) -> int:
        """Rstat's length, or Rgetattr's size (and its blocks, which must agree)."""
        if self.dialect is Dialect.P2000L:
            reply = await self.ask(m.Tgetattr(tag=self._tag(), fid=fid, request_mask=0x7FF))
            assert isinstance(reply, m.Rgetattr), reply
            assert reply.blocks == (reply.size + 511) // 512, reply
            return reply.size
        reply = await self.ask(m.Tstat(tag=self._tag(), fid=fid))
        assert isinstance(reply, m.Rstat), reply
        return reply.stat.length

    async def length_of(self, path: str) -> int:
        fid = await self.walk(path)
        try:
            return await self.length(fid)
        finally:
            await self.clunk(fid)

    async def contents(self, path: str) -> bytes:
        """The file read to EOF on a fid of its own."""
        fid = await self.walk(path)
        await self.open(fid)
        data = b""
        while chunk := await self.read(fid, len(data)):
            data += chunk
        await self.clunk(fid)
        return data

    async def set_length(self, fid: int, length: int) -> m.Message:
        if self.dialect is Dialect.P2000L:
            return await self.ask(m.Tsetattr(tag=self._tag(), fid=fid, valid=0x8, mode=0, uid=0, gid=0, size=length,
                                             atime_sec=0, atime_nsec=0, mtime_sec=0, mtime_nsec=0))
        untouched = Stat(type=0xFFFF, dev=U32, qid=Qid(0xFF, U32, U64), mode=U32, atime=U32, mtime=U32, length=length,
                         n_uid=U32, n_gid=U32, n_muid=U32)
        return await self.ask(m.Twstat(tag=self._tag(), fid=fid, stat=untouched))


async def _turn(app, name: str, prompt: str) -> None:
    session = app.sessions.get(name)
    turns = session.turn_count
    app.sessions.submit(name, prompt, "glenda")
    await until(lambda: session.turn_count > turns and not session.busy, f"turn {turns + 1} of {name} to end")


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.value)
async def test_a_snapshot_file_reports_what_a_read_gives(dialect: Dialect):
    async with served() as (app, [peer]):
        talk = Talk(peer, dialect)
        await talk.hello()
        app.sessions.new("sim", "/tmp", name="bot1")
        await _turn(app, "bot1", "hello ☕ café\n")  # the answer quotes it: its length counts bytes, not characters
        for path in ("bot1/out", "bot1/status", "bot1/log", "bot1/cwd", "bot1/backend", "list", "backends"):
            data = await talk.contents(path)
            assert data and await talk.length_of(path) == len(data), path
        assert "☕".encode() in await talk.contents("bot1/out")
        for path in ("bot1/wait", "bot1/stream", "events", "bot1/in", "bot1/ctl", "ctl", "bot1", "", "bot1/queue", "beads/ready"):
            assert await talk.length_of(path) == 0, path  # streams, ctl and write-only files, directories, an empty text


async def test_a_directory_read_carries_the_lengths_a_stat_gives():
    async with served() as (app, [peer]):
        talk = Talk(peer, Dialect.P2000U)
        await talk.hello()
        app.sessions.new("sim", "/tmp", name="bot1")
        await _turn(app, "bot1", "hello\n")
        fid = await talk.walk("bot1")
        await talk.open(fid)
        records = await talk.read(fid)
        listed = {}
        while records:
            size = int.from_bytes(records[:2], "little") + 2
            stat = decode_stat(records[:size], Dialect.P2000U)
            listed[stat.name] = stat.length
            records = records[size:]
        assert listed["out"] == len(await talk.contents("bot1/out")) > 0
        assert listed["log"] == len(await talk.contents("bot1/log")) > 0
        assert listed["wait"] == listed["in"] == listed["ctl"] == 0


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.value)
async def test_a_fid_that_read_reports_its_snapshot_and_a_path_a_fresh_one(dialect: Dialect):
    async with served() as (app, [peer]):
        talk = Talk(peer, dialect)
        await talk.hello()
        app.sessions.new("sim", "/tmp", name="bot1")
        await _turn(app, "bot1", "short\n")
        first = await talk.contents("bot1/out")
        log_before = await talk.length_of("bot1/log")  # measured once per record: measured again below
        reader, fresh = await talk.walk("bot1/out"), await talk.walk("bot1/out")
        await talk.open(reader)
        await talk.open(fresh)
        assert await talk.read(reader, 0, 10) == first[:10]  # the reader holds the first answer's snapshot
        assert await talk.length(fresh) == len(first)  # opened, not read yet: what a read would give now

        await _turn(app, "bot1", "a second prompt, whose answer quotes this longer first line\n")
        second = await talk.contents("bot1/out")
        assert len(second) > len(first)
        assert await talk.length(reader) == len(first)  # what its later offsets continue
        assert await talk.read(reader, 10) == first[10:]
        assert await talk.length(fresh) == len(second)
        assert await talk.length_of("bot1/out") == len(second)
        assert await talk.length_of("bot1/log") == len(await talk.contents("bot1/log")) > log_before
        assert await talk.read(reader, 0) == second  # a read at 0 takes a fresh snapshot, and the stat follows it
        assert await talk.length(reader) == len(second)


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.value)
async def test_written_bytes_change_a_length_once_the_clunk_submits_them(dialect: Dialect):
    async with served() as (app, [peer]):
        talk = Talk(peer, dialect)
        await talk.hello()
        bead = app.board.new("Write it", "developer", "the old description").id
        path = f"beads/{bead}/description"
        old = await talk.contents(path)
        fid = await talk.walk(path)
        await talk.open(fid, write=True)
        await talk.write(fid, "a new, longer description of the bead\n".encode())
        assert await talk.length(fid) == await talk.length_of(path) == len(old)  # collected, not the field yet
        await talk.clunk(fid)
        assert await talk.length_of(path) == len(b"a new, longer description of the bead\n")


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.value)
async def test_a_mail_message_reports_its_length(dialect: Dialect):
    async with served() as (app, [peer]):
        talk = Talk(peer, dialect)
        await talk.hello()
        app.sessions.new("sim", "/tmp", name="bot1")
        fid = await talk.walk("bot1/mail")
        await talk.open(fid, write=True)
        await talk.write(fid, b'{"to":"human","type":"QUERY_REQUEST","subject":"lengths","body":"how long? \\u2014"}')
        await talk.clunk(fid)
        [message] = app.post.inbox("human")
        path = f"human/inbox/{message.id}.json"
        assert await talk.length_of(path) == len(await talk.contents(path)) > 0
        assert await talk.length_of("bot1/mail") == 0  # a mailbox's mail file is where messages are written


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.value)
async def test_setting_the_length_a_file_has_changes_nothing(dialect: Dialect):
    async with served() as (app, [peer]):
        talk = Talk(peer, dialect)
        await talk.hello()
        app.sessions.new("sim", "/tmp", name="bot1")
        await _turn(app, "bot1", "hello\n")
        out = await talk.contents("bot1/out")
        fid = await talk.walk("bot1/out")
        reply = await talk.set_length(fid, len(out))
        assert isinstance(reply, (m.Rwstat, m.Rsetattr)), reply
        assert isinstance(await talk.set_length(fid, 0), (m.Rwstat, m.Rsetattr))  # accepted and ignored
        refused = await talk.set_length(fid, len(out) + 1)
        assert getattr(refused, "ecode", getattr(refused, "errno", None)) == 22, refused  # EINVAL
        assert f"or the length it has ({len(out)})" in app.errors.text()
        assert await talk.contents("bot1/out") == out and await talk.length(fid) == len(out)

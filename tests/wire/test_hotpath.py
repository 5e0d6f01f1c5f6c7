"""The frame-level path (server/hotpath.py) answers exactly as the message path would.

Two connections over unix socket pairs (the server's own socket transport),
each serving its own copy of one tree, are sent the same frames: one
answers plain walks, opens, reads and clunks from their frames, the other
(``hot_path=False``) decodes every request into a message. After each batch
the test waits until both servers have nothing left to do (trio's
``wait_all_tasks_blocked``) and takes what each sent: the same bytes, the
same errors recorded, the same fids in the same states, the same bytes
held. The requests are drawn by hypothesis from what a client can send:
names that exist or not, "." and "..", walks past a file or of 17 names,
fids in use or past the fid limit, open modes a file refuses, reads at any
offset, clunks that submit (answered only once the submission lands),
reads that park, flushes, a Tversion in the middle, frames a byte too long
or too short; and from what a tree can do: lookups, stamps, `ready` and
reads that raise, a read whose data cannot be encoded.
"""

from __future__ import annotations

import os

import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from anvilfs.ninep import Dialect, codec_for
from anvilfs.ninep import messages as m
from anvilfs.ninep.consts import NOFID
from anvilfs.server import Connection
from anvilfs.server.hotpath import HotPath
from anvilfs.tree import Directory
from harness.twin_servers import BIG, NAMES, PATHS, ROOT, Frames, Served, conversation, settled

FIDS = (ROOT, 1, 2, 3, 4, 5, NOFID)

# ---------------------------------------------------------------- the requests

_fids = st.sampled_from(FIDS)
_junk_names = st.lists(st.sampled_from(NAMES).map(str.encode) | st.just(b"\xff\xfe"), max_size=17)
_paths = st.one_of(*[st.sampled_from(PATHS)] * 3, _junk_names)  # mostly a path that is there
_walk = st.builds(lambda fid, newfid, names: ("walk", fid, newfid, names), _fids, _fids, _paths)
_modes = st.sampled_from((0, 1, 2, 3, 0x10, 0x12, 0x40, 0o1000, 0o1002, 0o100000)) | st.integers(0, 2**32 - 1)
_open = st.builds(lambda fid, mode: ("open", fid, mode), _fids, _modes)
_other_open = st.builds(lambda fid, mode: ("other open", fid, mode), _fids, _modes)  # the other dialects' open
_offsets = st.sampled_from((0, 0, 1, 5, 20, 59, 60, 1000, 8168, 8169, BIG)) | st.integers(0, 2**64 - 1)
_counts = st.sampled_from((0, 1, 3, 8192, 9000, 2**32 - 1)) | st.integers(0, 2**32 - 1)
_read = st.builds(lambda fid, offset, count: ("read", fid, offset, count), _fids, _offsets, _counts)
_write = st.builds(lambda fid, data: ("write", fid, data), _fids, st.sampled_from((b"echo hi\n", b"line\n", b"x" * 10, b"")))
_clunk = st.builds(lambda fid: ("clunk", fid), _fids)
_getattr = st.builds(lambda fid, mask: ("getattr", fid, mask), _fids, st.sampled_from((0x7FF, 0x3FFF, 0)))
_flush = st.builds(lambda back: ("flush", back), st.integers(1, 6))  # of the request sent `back` requests before
_version = st.builds(lambda version, msize: ("version", version, msize),
                     st.sampled_from([d.value for d in Dialect]), st.sampled_from((4096, 8192)))
_request = st.one_of(_walk, _open, _read, _write, _clunk, _flush, _other_open, _getattr)
# What a client mostly sends: a walk from the root to a file, its open as the file is meant to be opened
# (or not), reads or writes of it, its clunk.
_USES = [(path, mode) for path, modes in (
    (("status",), (0,)), (("dir", "a", "status"), (0,)), (("big",), (0,)), (("broken",), (0,)), (("events",), (0,)),
    (("parked",), (0,)), (("shaky",), (0,)), (("textdata",), (0,)), (("gone",), (0,)),
    (("notes",), (0, 2)), (("ctl",), (1, 2)), (("in",), (1,)), (("slow",), (1,)), (("mail",), (1, 2)), (("dir",), (0,)))
    for mode in modes]
_usual = st.sampled_from(_USES).map(lambda use: ([name.encode() for name in use[0]], use[1]))
_middle = st.lists(st.tuples(_offsets, _counts) | st.sampled_from((b"echo hi\n", b"line\n", "getattr")), max_size=3)
_use = st.builds(lambda fid, target, middle, clunk: [
    ("walk", ROOT, fid, target[0]), ("open", fid, target[1]),
    *(("write", fid, part) if isinstance(part, bytes) else ("getattr", fid, 0x7FF) if part == "getattr"
      else ("read", fid, *part) for part in middle),
    *([("clunk", fid)] if clunk else [])],
    st.sampled_from((1, 2, 3)), _usual | st.tuples(_paths, _modes), _middle, st.booleans())
_mangle = st.sampled_from((None, None, None, None, None, None, "long", "short"))


def _plain(*requests: tuple) -> list[tuple[tuple, None]]:
    return [(request, None) for request in requests]


_batch = st.one_of(
    st.lists(st.tuples(_request, _mangle), min_size=1, max_size=4),
    _use.map(lambda requests: _plain(*requests)),
    _use.map(lambda requests: _plain(*requests)),
    _version.map(lambda version: _plain(version, ("attach",))),
)


@pytest.mark.parametrize("dialect", [Dialect.P2000L, Dialect.P2000, Dialect.P2000U])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=st.lists(_batch, max_size=12))
@example(batches=[_plain(("walk", ROOT, 1, [b"mail"]), ("open", 1, 2), ("write", 1, b"line\n"), ("read", 1, 0, 100))])
@example(batches=[_plain(("walk", ROOT, 1, []), ("walk", ROOT, 1, [b"status"]), ("walk", 1, 1, [b"..", b"dir"]))])
@example(batches=[_plain(("walk", ROOT, 1, [b"big"]), ("open", 1, 0), ("read", 1, 0, 2**32 - 1), ("read", 1, BIG - 3, 9),
                         ("walk", ROOT, 2, [b"events"]), ("open", 2, 0), ("read", 2, 7, 100), ("clunk", 2))])
@example(batches=[_plain(*(("walk", ROOT, fid, []) for fid in range(1, 6)),  # past the fid limit
                         ("clunk", 4), ("walk", ROOT, NOFID, []))])
@example(batches=[_plain(("walk", ROOT, 1, [b"status"]), ("open", 1, 0), ("walk", 1, 2, [])),
                  _plain(("walk", ROOT, 3, [b"dir"]), ("open", 3, 0), ("walk", 3, 4, [b"a"]))])  # open fids walked
@example(batches=[_plain(("walk", ROOT, 1, [b"parked"]), ("open", 1, 0), ("read", 1, 0, 10), ("walk", ROOT, 2, [b"status"])),
                  _plain(("open", 2, 0), ("read", 2, 0, 10), ("clunk", 1), ("clunk", 2))])  # a parked read
@example(batches=[_plain(("walk", ROOT, 1, [b"slow"]), ("open", 1, 1), ("write", 1, b"line\n"), ("clunk", 1),
                         ("walk", ROOT, 1, [b"status"]), ("read", 1, 0, 10))])  # a deferred clunk, its tag reused
@example(batches=[_plain(("walk", ROOT, 1, [b"status"]), ("open", 1, 0), ("version", "9P2000", 4096), ("attach",),
                         ("walk", ROOT, 1, [b"big"]), ("open", 1, 0), ("read", 1, 0, 8192),
                         ("walk", ROOT, 2, [b"status"]), ("other open", 2, 0))])  # a Tversion amid a batch
@example(batches=[_plain(("walk", ROOT, 1, [b"odd", b"boom"]), ("walk", ROOT, 1, [b"gone"]), ("walk", ROOT, 2, [b"shaky"]),
                         ("open", 2, 0), ("read", 2, 0, 10), ("walk", ROOT, 3, [b"textdata"]), ("open", 3, 0),
                         ("read", 3, 0, 10), ("walk", ROOT, 4, [b"dir", b"a"]), ("getattr", 4, 0x7FF),
                         ("getattr", 5, 0x7FF))])  # lookups, stamps, ready and data that fail; getattrs
def test_the_hot_path_answers_as_the_message_path(dialect: Dialect, batches) -> None:
    trio.run(conversation, dialect, batches)


def test_a_usual_poll_is_answered_on_the_hot_path(monkeypatch) -> None:
    """The test above would pass with a hot path that always declined: here its answers are counted."""
    answered: list[str] = []
    for name in ("walk", "lopen", "read", "clunk", "getattr"):
        real = getattr(HotPath, name)

        def counted(self, frame, real=real, name=name):
            reply = real(self, frame)
            if reply is not None:
                answered.append(name)
            return reply
        monkeypatch.setattr(HotPath, name, counted)
    poll = [("walk", ROOT, 1, [b"dir", b"a", b"status"]), ("getattr", 1, 0x7FF), ("open", 1, 0), ("read", 1, 0, 8192),
            ("read", 1, 7, 8192), ("clunk", 1), ("walk", ROOT, 2, [b"nope"]), ("read", 2, 0, 10)]
    trio.run(conversation, Dialect.P2000L, [_plain(request) for request in poll])
    # only the first connection has a hot path; the missing name and the read of fid 2 it declined
    assert answered == ["walk", "getattr", "lopen", "read", "read", "clunk"]


def test_a_traced_connection_answers_everything_on_the_message_path() -> None:
    """The trace shows every message: no request may go round it."""
    conn = Connection(trio.testing.memory_stream_pair()[1], Directory("/", "/"), trace=lambda line: None)
    assert conn._hotpath is None


def test_a_getattr_says_what_each_field_is_named_for() -> None:
    """attrs.getattr_of gives Rgetattr's fields by position: each must land where its name says."""
    async def stat_both() -> list[m.Message]:
        async with trio.open_nursery() as nursery:
            server = Served(nursery, hot=True)
            make = Frames(Dialect.P2000L)
            server.send(codec_for(Dialect.P2000).encode(m.Tversion(tag=0xFFFF, msize=8192, version="9P2000.L"))
                        + make(("attach",), None) + make(("walk", ROOT, 1, [b"status"]), None)
                        + make(("getattr", 1, 0x7FF), None) + make(("getattr", ROOT, 0x7FF), None))
            replies = (await settled([server]))[0]
            nursery.cancel_scope.cancel()
        return [codec_for(Dialect.P2000L).decode(frame) for frame in replies[-2:]]

    file, root = trio.run(stat_both)
    assert (file.mode & 0o170000, root.mode & 0o170000) == (0o100000, 0o040000)  # S_IFREG, S_IFDIR
    assert (file.nlink, root.nlink, file.blksize, file.rdev) == (1, 2, 4096, 0)
    assert (file.size, file.blocks, root.size, root.blocks) == (len(b"idle\n"), 1, 0, 0)  # blocks of 512 bytes
    assert file.atime_sec == file.mtime_sec == file.ctime_sec > 1_700_000_000 and file.btime_sec == 0
    assert (file.uid, file.gid) == (os.getuid(), os.getgid()) and file.valid == 0x7FF

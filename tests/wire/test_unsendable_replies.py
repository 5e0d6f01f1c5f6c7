"""A reply the server cannot encode (its own bug) is answered with an internal error and changes nothing.

From review of the frames the dispatcher encodes itself (codec.frame_maker):
a walk whose Rwalk cannot be encoded must not bind its new fid, and tracing
such a reply must not take the connection down. The bad values are made by
patching the server: no file of the real tree can produce them.
"""

from __future__ import annotations

import struct

import trio
import trio.testing

from anvilfs.server import Connection, Limits, dispatch
from anvilfs.tree import Directory, StreamFile, TextFile
from harness.transcript import HELLO, Peer

_QID = struct.Struct("<BIQ")


class _TextCursor:
    """A stream file's cursor whose data is text, not bytes: an Rread that cannot be encoded."""

    def ready(self, offset: int) -> bool:
        return True

    async def wait_ready(self, offset: int) -> None:
        return None

    def read(self, offset: int, count: int):
        return "not bytes"


def _root() -> Directory:
    return Directory("/", "/", [
        TextFile("hello", "hello", lambda: "hello world"),
        TextFile("badqid", "badqid", lambda: "x"),
        StreamFile("textdata", "textdata", lambda: _TextCursor()),
    ])


async def test_an_unsendable_walk_binds_nothing_and_the_trace_survives_an_unsendable_read(monkeypatch) -> None:
    real_packed_qid = dispatch.packed_qid  # a walk's qids are packed as it goes: one that will not pack refuses it
    monkeypatch.setattr(dispatch, "packed_qid",
                        lambda node: _QID.pack(0, 0, 2 ** 64) if node.name == "badqid" else real_packed_qid(node))
    traced: list[str] = []
    client_end, server_end = trio.testing.memory_stream_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(Connection(server_end, _root(), trace=traced.append, name="c1").serve)
        peer = Peer(client_end, Limits())
        await peer.play(HELLO + """
> Twalk tag 2 fid 0 newfid 1 wnames [badqid]
< Rerror tag 2 ename "*internal error: *Rwalk.wqids cannot be encoded*"
> Twalk tag 3 fid 0 newfid 1 wnames [hello]
< Rwalk tag 3 wqids [*]
> Twalk tag 4 fid 0 newfid 2 wnames [textdata]
< Rwalk tag 4 wqids [*]
> Topen tag 5 fid 2 mode 0
< Ropen tag 5 qid * iounit *
> Tread tag 6 fid 2 offset 0 count 100
< Rerror tag 6 ename "*internal error: Rread.data cannot be encoded*"
> Tclunk tag 7 fid 1
< Rclunk tag 7
""")
        nursery.cancel_scope.cancel()
    assert any("c1 <- Rerror tag 6" in line for line in traced), traced[-5:]

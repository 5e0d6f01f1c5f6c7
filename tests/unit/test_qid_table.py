"""attrs shares qids while a node's version holds: each is the qid a fresh build would give."""

from __future__ import annotations

from anvilfs.ninep import Qid
from anvilfs.ninep import consts as c
from anvilfs.server import attrs
from anvilfs.tree import Directory, TextFile


def test_a_shared_qid_is_the_one_built_from_the_node_and_moves_with_its_version():
    version = [7]
    file = TextFile("status", "session/bot1/status", lambda: "idle\n")
    file.stamp = lambda: (version[0], 0)
    directory = Directory("bot1", "session/bot1")
    assert attrs.qid_of(directory) == Qid(c.QTDIR, 0, directory.path)
    assert attrs.qid_of(file) == Qid(c.QTFILE, 7, file.path)
    assert attrs.qid_of(file) is attrs.qid_of(file)  # shared while the version holds
    version[0] = 8
    assert attrs.qid_of(file) == Qid(c.QTFILE, 8, file.path)


def test_the_table_is_bounded_and_keeps_what_is_used():
    busy = Directory("busy", "d/busy")
    kept = attrs.qid_of(busy)
    nodes = [Directory(f"d{i}", f"d/{i}") for i in range(attrs._QIDS_KEPT + 10)]
    for node in nodes:
        assert attrs.qid_of(node) == Qid(c.QTDIR, 0, node.path)
        assert attrs.qid_of(busy) is kept  # used all along: never the one dropped
    assert attrs._qid_pair.cache_info().currsize <= attrs._QIDS_KEPT
    assert attrs.qid_of(nodes[-1]) is attrs.qid_of(nodes[-1])

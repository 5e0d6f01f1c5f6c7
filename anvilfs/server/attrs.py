"""How tree nodes look through 9P: qids, stat records, getattr, directory entries."""

from __future__ import annotations

import os
import pwd
import struct
from functools import cache, lru_cache

from ..ninep import Dialect, Qid, Stat, encode_stat
from ..ninep import consts as c
from ..tree import Handle, Node

_DT_DIR, _DT_REG = 4, 8


@cache
def _owner() -> tuple[str, int, int]:
    uid, gid = os.getuid(), os.getgid()
    try:
        name = pwd.getpwuid(uid).pw_name
    except KeyError:
        name = str(uid)
    return name, uid, gid


def _stamp(node: Node) -> tuple[int, int]:
    """qid.version and mtime: a file whose content changes has a stamp; the rest keep their first."""
    if node.stamp is None:
        return 0, node.mtime
    version, mtime = node.stamp()
    return version & 0xFFFFFFFF, mtime


# Qids are frozen and a node's repeats until its version moves, so walks and
# opens share them: building one (a frozen dataclass) costs more than looking it
# up, and a walk to a status file and its open need three. Each is kept with its 13
# bytes on the wire, which a walk sends packed (dispatch.py). Keyed by
# what makes the qid, the least recently used dropped past _QIDS_KEPT (a C
# LRU: a hit costs what a dict's did, and a busy tree's qids are not all
# thrown away at once when the cache fills, as a cleared dict's were).
_QIDS_KEPT = 4096
_QID_BYTES = struct.Struct("<BIQ").pack


@lru_cache(maxsize=_QIDS_KEPT)
def _qid_pair(path: int, version: int, is_dir: bool) -> tuple[Qid, bytes]:
    kind = c.QTDIR if is_dir else c.QTFILE
    return Qid(kind, version, path), _QID_BYTES(kind, version, path)


def _qids(node: Node, version: int) -> tuple[Qid, bytes]:
    return _qid_pair(node.path, version, node.is_dir)


def _qid(node: Node, version: int) -> Qid:
    return _qids(node, version)[0]


def qid_of(node: Node) -> Qid:
    stamp = node.stamp  # _stamp's version, without its mtime and a call (three qids in a status read)
    return _qids(node, 0 if stamp is None else stamp()[0] & 0xFFFFFFFF)[0]


def packed_qid(node: Node) -> bytes:
    """qid_of(node) as its 13 bytes on the wire."""
    stamp = node.stamp  # as qid_of
    return _qids(node, 0 if stamp is None else stamp()[0] & 0xFFFFFFFF)[1]


def length_of(node: Node, handle: Handle | None = None) -> int:
    """Rstat's length, Rgetattr's size (SPEC §4): of an open that holds a snapshot, that snapshot's;
    else the file's now (what a read at offset 0 would give: 0 for streams, ctl files, directories)."""
    if handle is not None:
        held = handle.size()
        if held is not None:
            return held
    return node.size()


def mode_of(node: Node) -> int:
    """The 9P mode of a stat record: the permissions, and DMDIR for a directory."""
    return node.mode | (c.DMDIR if node.is_dir else 0)


def stat_of(node: Node, length: int | None = None) -> Stat:
    """The stat record of a node; `length` is length_of's for an open fid, else the node's now."""
    name, uid, gid = _owner()
    version, mtime = _stamp(node)
    return Stat(
        qid=_qid(node, version), mode=mode_of(node), atime=mtime, mtime=mtime,
        length=node.size() if length is None else length, name=node.name, uid=name, gid=name, muid=name,
        n_uid=uid, n_gid=gid, n_muid=uid,
    )


def getattr_of(node: Node, size: int) -> tuple:
    """The fields of an Rgetattr for a node (9P2000.L) of `size` bytes (length_of's), after its tag, in the
    message's order: valid qid mode uid gid nlink rdev size blksize blocks, then atime mtime ctime btime
    (seconds, nanoseconds), gen, data_version."""
    _, uid, gid = _owner()
    version, mtime = _stamp(node)
    blocks = (size + 511) >> 9  # of 512 bytes: a file of some size in no blocks looks sparse to cp and tar
    return (c.GETATTR_BASIC, _qid(node, version), (c.S_IFDIR if node.is_dir else c.S_IFREG) | node.mode, uid, gid,
            2 if node.is_dir else 1, 0, size, 4096, blocks, mtime, 0, mtime, 0, mtime, 0, 0, 0, 0, 0)


# A directory read sends a stat record per entry, and `ls beads/` has 10,000: each node keeps the record
# last encoded for it with what it showed (version, mtime, length, dialect); the rest never changes (the
# owner is the server's, for ever). A node whose stamp and size cannot move (a bead's directory: built
# again at each change of the bead) keeps it for good, and a listing sends it with no call at all.


def _encode_record(node: Node, version: int, mtime: int, length: int, dialect: Dialect) -> bytes:
    """encode_stat of the node's stat record, laid out here for 9P2000 and 9P2000.u: the codec's generic
    encoder goes field by field, 10-30 µs a record, and the first listing of 10,000 beads after a start
    encodes 10,000 (tests/unit/test_stat_records.py checks the bytes are the codec's)."""
    name = node.name.encode("utf-8")
    tail = _record_tail(dialect)
    if tail is None or len(name) > 0xFFFF:  # another dialect, or a name the codec refuses with its reason
        return _generic_record(node, version, mtime, length, dialect)
    kind = c.QTDIR if node.is_dir else c.QTFILE
    mode = mode_of(node)
    size = _RECORD_HEAD.size + len(name) + len(tail)  # what follows the size field: its 2 bytes out, the name's in
    return b"".join((_RECORD_HEAD.pack(size, 0, 0, kind, version, node.path, mode, mtime, mtime, length),
                     _U16(len(name)), name, tail))


_RECORD_HEAD = struct.Struct("<HHIBIQIIIQ")  # size type dev qid(type version path) mode atime mtime length
_U16 = struct.Struct("<H").pack


@cache
def _record_tail(dialect: Dialect) -> bytes | None:
    """What follows the name in every record: the owner (the server's) thrice, and 9P2000.u's fields."""
    owner, uid, gid = _owner()
    raw = owner.encode("utf-8")
    owners = (_U16(len(raw)) + raw) * 3
    if dialect is Dialect.P2000:
        return owners
    if dialect is Dialect.P2000U:
        return owners + _U16(0) + struct.pack("<III", uid, gid, uid)  # no extension; n_uid n_gid n_muid
    return None


def _generic_record(node: Node, version: int, mtime: int, length: int, dialect: Dialect) -> bytes:
    owner, uid, gid = _owner()
    stat = Stat(qid=_qid_pair(node.path, version, node.is_dir)[0], mode=mode_of(node), atime=mtime,
                mtime=mtime, length=length, name=node.name, uid=owner, gid=owner, muid=owner,
                n_uid=uid, n_gid=gid, n_muid=uid)
    return encode_stat(stat, dialect)


def stat_record(node: Node, dialect: Dialect) -> bytes:
    """encode_stat(stat_of(node)), kept with the node for as long as it is what the node shows."""
    version, mtime = _stamp(node)
    length = node.size()
    kept = node.record
    if kept is None or kept[1] != version or kept[2] != mtime or kept[3] != length or kept[0] is not dialect:
        fixed = node.stamp is None and type(node).size is Node.size  # shows the same for ever
        kept = node.record = (dialect, version, mtime, length, _encode_record(node, version, mtime, length, dialect),
                              fixed)
    return kept[4]


def warm(node: Node) -> None:
    """Encode ahead what a first listing sends of `node`: its 9P2000 stat record (plan9port, anvilfs's own
    client) and its Treaddir entry (Linux v9fs, 9P2000.L). A start builds every bead's directory a slice at
    a time (AgentTree.build_ahead) and calls this with each; 9P2000.u listings encode their own."""
    stat_record(node, Dialect.P2000)
    _entry_parts(node)


def dirent(node: Node, index: int) -> bytes:
    """The 9P2000.L Treaddir entry of `node` at `index` of its listing: its offset is the next index."""
    kept = node.entry
    if kept is None or not kept[2]:
        kept = _entry_parts(node)
    return kept[0] + _OFFSET(index + 1) + kept[1]


_OFFSET = struct.Struct("<Q").pack
_ENTRY_TAIL = struct.Struct("<BH").pack  # type, the name's length


def _entry_parts(node: Node) -> tuple:
    """A Treaddir entry but its offset: (its qid's 13 bytes, its type and name), kept with the node as
    the stat records are (stat_record): for good if its stamp cannot move, else while its qid stays."""
    qid = packed_qid(node)
    kept = node.entry
    if kept is None or kept[0] != qid:
        raw = node.name.encode()
        kept = node.entry = (qid, _ENTRY_TAIL(_DT_DIR if node.is_dir else _DT_REG, len(raw)) + raw, node.stamp is None)
    return kept

"""The save queue's redo log: a batch of writes is on disk once its one record is, not once each file is.

    DIR/NNNNNN.redo   segments of CRC-checked lines (loglines.py), a line per batch:
                      a JSON list of ops: ["p", DIR, NAME, DATA]          NAME replaced by DATA
                                          ["a", DIR, NAME, OFFSET, DATA]  DATA written at OFFSET
                                          ["g", DIR, NAME]                NAME removed
                      (DIR: the key of one of the directories it serves; DATA: base64)

Why: a session's turn touches three files (its transcript, `out`, the .toml),
and made durable one by one that is an fsync per file and per rename, about
nine device flushes a turn; with a hundred agents the disk is busy with
flushes and every answer waits in that queue. Here the batch's writes go in
one record, written and fdatasynced: one flush for the batch, whatever its
files. They are then done on the files without fsync, and the page cache
writes them back when it will.

A checkpoint (the queue asks for one every CHECKPOINT_SECONDS, or once the
segments pass CHECKPOINT_BYTES, and at a clean stop) fsyncs every file and
directory written since the last one, then deletes the segments whose
writes that made durable. It runs without the queue's lock held, so batches
go on meanwhile, into a new segment: a file fsynced in the middle of a newer
write is either that newer write's (whose record is in the new segment) or
older, which the new segment's replay brings forward.

A write that its file refuses (a directory where a .toml goes) is in the
log, so it counts as written; the queue tries it again, and each checkpoint
logs it anew in the new segment, so its record outlives the old ones (until
a newer replace or removal of that file supersedes it). A checkpoint whose
fsync failed is not trusted to a second fsync (the kernel may have dropped
the pages and forgotten the error): the next one first does every write of
its segments again.

After a crash or a power cut, ``recover`` (before anything reads the files)
does the writes of the segments left, in order: a replace whole, a write at
its offset, a removal, each safe to do twice. A file that refuses one (no
space, a directory in its place) stops the server's start, the log kept,
with the fix; starting on files that lack an answered write would lose it. A file whose last write was
an append is cut where that append ended: what follows was never made
durable (the lazy appends of a turn in progress, at most LAZY_SYNC of
them) and may be zeros after a power cut. Then it fsyncs them and deletes
the segments. A torn last line (a crash in the middle of a record:
its batch was never answered) is left out. A line that fails its CRC in the
middle of a segment stops the replay there: what follows it could depend on
it. That segment and every later one are kept as NAME.damaged, for a person.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import json
from dataclasses import dataclass, field

from .loglines import checked_line, crc_line
from .private import LogFile, PrivateDir, StorageError

SUFFIX = ".redo"
CHECKPOINT_SECONDS = 30.0  # the longest the segments grow before their writes are fsynced in place
CHECKPOINT_BYTES = 16 << 20  # or once they hold this much


@dataclass(frozen=True, slots=True)
class Op:
    """One write of a batch: kind "p" (replace), "a" (write at `offset`) or "g" (remove)."""

    kind: str
    dir: PrivateDir
    name: str
    data: bytes = b""
    offset: int = 0

    def do(self) -> None:
        """The write itself, without fsync."""
        if self.kind == "p":
            self.dir.put(self.dir.prepare(self.name, self.data, sync=False), self.name)
        elif self.kind == "a":
            self.dir.write_at(self.name, self.offset, self.data)
        else:
            self.dir.remove(self.name, sync=False)


@dataclass(slots=True)
class Era:
    """What the writes since the last checkpoint left to make durable: their files and segments."""

    segments: list[str] = field(default_factory=list)
    touched: set[tuple[str, str]] = field(default_factory=set)  # (directory key, file name)
    bytes: int = 0


class RedoLog:
    """Records of batches in one private directory; the caller (the save queue) holds its lock around
    ``log``, ``applied``, ``begin_checkpoint`` and ``end_checkpoint``."""

    def __init__(self, dir: PrivateDir, dirs: dict[str, PrivateDir]):
        self.dir = dir
        self._dirs = dict(dirs)
        self._keys = {id(d): key for key, d in dirs.items()}
        self._found = sorted(dir.names(SUFFIX), key=_number)  # a crash's leftovers, for recover(); in order
        self._numbers = itertools.count(max((_number(n) for n in self._found), default=0) + 1)
        self._file: LogFile | None = None
        self.era = Era()
        self._unapplied: dict[tuple[str, str], Op] = {}  # logged, refused by its file: carried by checkpoints
        self._suspect = False  # a checkpoint's fsync failed: the kernel may have dropped what it had

    # ------------------------------------------------------------ writing

    def log(self, ops: list[Op]) -> None:
        """One record of `ops`, written and fdatasynced; raises OSError, and then none of it counts."""
        record = json.dumps([self._encoded(op) for op in ops], separators=(",", ":")).encode()
        if self._file is None:
            self._file = self.dir.open_log(f"{next(self._numbers):06d}{SUFFIX}")
            self.era.segments.append(self._file.name)
        data = crc_line(record)
        try:
            self._file.write_durably(data)
        except OSError:
            self._close()  # the next record goes to a new segment, after whatever the cut-off left
            raise
        self.era.bytes += len(data)
        for op in ops:  # a replace or a removal logged since supersedes a write its file refused
            if op.kind != "a":
                self._unapplied.pop((self._keys[id(op.dir)], op.name), None)

    def applied(self, op: Op, error: OSError | None) -> None:
        """A logged op was done on its file, or refused: then its record must outlive the checkpoints
        until its file's next op is done (the save queue tries again), so each one logs it anew."""
        where = (self._keys[id(op.dir)], op.name)
        if error is not None:
            self._unapplied[where] = op  # the latest: the queue joins a refused append to the next one
            return
        self._unapplied.pop(where, None)
        self.era.touched.add(where)

    def begin_checkpoint(self) -> Era:
        """Take the era to make durable; what is logged from here on goes to a new segment, starting with
        the writes their files refused (their records are in the era's segments, which go). Raises
        OSError if those cannot be logged: then nothing changed."""
        era, self.era = self.era, Era()
        self._close()
        try:
            if self._suspect:  # after a failed fsync the pages may be gone, and the next fsync succeed
                self._reapply(era)
            if self._unapplied:
                self.log(list(self._unapplied.values()))
        except OSError:
            self._merge_back(era)
            raise
        return era

    def sync(self, era: Era) -> None:
        """fsync every file and directory `era` wrote (without the lock); raises OSError."""
        for key, name in sorted(era.touched):
            self._dirs[key].sync_file(name)
        for key in sorted({key for key, _ in era.touched}):
            self._dirs[key].sync()

    def end_checkpoint(self, era: Era, error: OSError | None) -> None:
        """Delete the era's segments once `sync` made their writes durable; else they join the current
        era, to be tried again."""
        if error is not None:
            self._suspect = True
            self._merge_back(era)
            return
        for name in era.segments:
            self.dir.remove(name, sync=False)
        self.dir.sync()
        self._suspect = False

    def _merge_back(self, era: Era) -> None:
        """A checkpoint that did not happen: its era joins the current one, ahead of it."""
        self.era.segments[:0] = era.segments
        self.era.touched |= era.touched
        self.era.bytes += era.bytes

    def _reapply(self, era: Era) -> None:
        """Do the era's writes again from its segments, in order (the caller holds the lock, so nothing
        newer is in the files: the era is everything logged since the last checkpoint). The writes their
        files refuse are left to the queue, which tries them again. Raises OSError."""
        for name in era.segments:
            for line in (self.dir.read(name) or b"").split(b"\n"):
                record = checked_line(line) if line else None  # a torn line: its batch was never answered
                for op in (self._decoded(record) if record is not None else None) or []:
                    if (self._keys[id(op.dir)], op.name) not in self._unapplied:
                        op.do()

    def close(self) -> None:
        self._close()

    def _close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def _encoded(self, op: Op) -> list:
        data = base64.b64encode(op.data).decode()
        key = self._keys[id(op.dir)]
        if op.kind == "p":
            return ["p", key, op.name, data]
        if op.kind == "a":
            return ["a", key, op.name, op.offset, data]
        return ["g", key, op.name]

    # ------------------------------------------------------------ after a crash

    def recover(self) -> list[str]:
        """Do the writes of the segments a crash left, make them durable and delete the segments; a line
        per problem. Raises StorageError if a file refuses a write or what it wrote cannot be made durable
        (the segments stay, and the server does not start)."""
        problems, touched, ends, damaged_from = [], set(), {}, None
        for i, name in enumerate(self._found):
            if self._replay_segment(name, touched, ends, problems, last=i == len(self._found) - 1):
                damaged_from = i
                break
        if damaged_from is None:  # past its last append: what the cut left unwritten (zeros); not after a
            for (key, file), end in ends.items():  # damaged record, whose later segments may have more
                self._write(lambda: self._dirs[key].cut(file, end), f"{self._dirs[key].path}/{file}")
        try:
            self.sync(Era(touched=touched))
        except OSError as exc:
            raise StorageError(exc.errno, f"cannot make the replayed writes of {self.dir.path} durable: "
                                          f"{exc.strerror}; the state directory's disk refuses fsync") from None
        for i, name in enumerate(self._found):
            if damaged_from is not None and i >= damaged_from:
                self.dir.move(name, self.dir, name + ".damaged")
            else:
                self.dir.remove(name, sync=False)
        self.dir.sync()
        self._found = []
        return problems

    def _replay_segment(self, name: str, touched: set, ends: dict, problems: list[str], *, last: bool) -> bool:
        """Apply one segment's records; True if a damaged one stopped the replay. Raises StorageError if a
        file refuses a write: the log stays, and the server does not start on files that lack it."""
        where = f"{self.dir.path}/{name}"
        try:
            lines = (self.dir.read(name) or b"").split(b"\n")
        except OSError as exc:
            problems.append(f"{where}: cannot be read ({exc}); the replay stops before it, kept as .damaged")
            return True
        final = max((i for i, line in enumerate(lines, 1) if line), default=0)
        for number, line in enumerate(lines, 1):
            if not line:
                continue
            record = checked_line(line)
            if record is None and (number == len(lines) or (last and number == final)):
                return False  # a torn last line (a power cut may leave zeros and an LF): never answered
            ops = self._decoded(record) if record is not None else None
            if ops is None:
                problems.append(f"{where}: line {number} is damaged; the replay stops there, and this segment "
                                "and the later ones are kept as .damaged")
                return True
            for op in ops:
                file = (self._keys[id(op.dir)], op.name)
                self._write(op.do, f"{op.dir.path}/{op.name}")
                touched.add(file)
                if op.kind == "a":
                    ends[file] = op.offset + len(op.data)
                else:
                    ends.pop(file, None)
        return False

    def _write(self, write, path: str) -> None:
        try:
            write()
        except (OSError, ValueError) as exc:  # ValueError: a name that is not a file's
            why = exc.strerror if isinstance(exc, OSError) else str(exc)
            raise StorageError(getattr(exc, "errno", 0) or 0,
                               f"cannot replay the redo log {self.dir.path} into {path} ({why}): the log is kept; "
                               "make the file writable (free space, move away what is in its place) and start "
                               "again") from None

    def _decoded(self, record: bytes) -> list[Op] | None:
        try:
            ops = []
            for item in json.loads(record):
                kind, key, name = item[0], item[1], item[2]
                where = self._dirs[key]
                if kind == "p":
                    ops.append(Op("p", where, name, base64.b64decode(item[3], validate=True)))
                elif kind == "a":
                    ops.append(Op("a", where, name, base64.b64decode(item[4], validate=True), int(item[3])))
                elif kind == "g":
                    ops.append(Op("g", where, name))
                else:
                    return None
            return ops
        except (ValueError, KeyError, IndexError, TypeError, binascii.Error):
            return None


def _number(name: str) -> int:
    stem = name.removesuffix(SUFFIX)
    return int(stem) if stem.isdigit() else 0

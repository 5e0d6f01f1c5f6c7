"""The kinds of synthetic file: snapshots, ctl files, collected writes, streams.

    TextFile     computed text, read as a snapshot; optionally takes line writes
    CtlFile      commands from a CommandTable, one per line, acted on per write
    CollectFile  bytes collected per open and submitted at clunk (prompts, mail)
    StreamFile   blocking reads from a cursor opened per open (events, wait)

A stat's length (SPEC §4) is a snapshot's: a TextFile's, and a readable
CollectFile's, is the length of its text now (`size`), and an open that has
read reports the snapshot it reads (`SnapshotReads.size`). Ctl files and
streams report 0, as Node does: their reads are not the file's content.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable
from typing import Protocol

from ..errors import AnvilError, InvalidRequest, PermissionDenied
from ..waitable import Later
from .ctl import CommandTable
from .nodes import READ_ONLY, READ_WRITE, WRITE_ONLY, Caller, File, Handle
from .snapshots import UNLIMITED, Snapshot, SnapshotBudget, SnapshotSource


def text_size(text: str) -> int:
    """The bytes of `text` in UTF-8: an ASCII text's without encoding it (str.isascii reads a flag)."""
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def decoded_text(data: bytes, what: str) -> str:
    """Bytes a client wrote, as text; InvalidRequest (not a crash) if they are not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidRequest(f"{what}: not valid UTF-8 at byte {exc.start}; write text") from None


class SnapshotReads(Handle):
    """Reads at offset 0 take a fresh snapshot; later offsets continue it.

    The snapshot is shared with other opens while the content is the same,
    and counted in the budget of the connection that reads (the server
    passes its own; until the file is closed it stays charged there).
    """

    def __init__(self, source: SnapshotSource):
        self._source = source
        self._snapshot: Snapshot | None = None
        self._budget = UNLIMITED

    def read(self, offset: int, count: int, budget: SnapshotBudget = UNLIMITED) -> bytes:
        if offset == 0 or self._snapshot is None:
            fresh = self._source.take()
            if budget is not self._budget:  # first read: the reader's budget is charged from now on
                self._budget.release(self._snapshot)
                self._snapshot, self._budget = None, budget
            budget.swap(self._snapshot, fresh)  # past the limit this refuses, keeping the old snapshot
            self._snapshot = fresh
        return self._snapshot.data[offset:offset + count]

    def size(self) -> int | None:
        """The snapshot this open reads, once a read took one: what its later offsets continue."""
        return None if self._snapshot is None else len(self._snapshot.data)

    def clunk(self) -> None:
        self._budget.release(self._snapshot)
        self._snapshot = None


class TextFile(File):
    """Computed text. With ``on_line``, each written line is handed to it.

    Its size is its text's, rendered for each stat; with ``sized_by``, a cheap value that changes
    whenever the text does (a transcript's count of records, for a text costly to render), it is
    rendered only when that value has moved.
    """

    __slots__ = ("render", "on_line", "snapshots", "sized_by", "_sized")

    def __init__(self, name: str, key: str, render: Callable[[], str], on_line: Callable[[str, Caller], None] | None = None,
                 *, sized_by: Callable[[], object] | None = None):
        super().__init__(name, key, READ_WRITE if on_line else READ_ONLY)
        self.render = render
        self.on_line = on_line
        self.snapshots = SnapshotSource(render)
        self.sized_by = sized_by
        self._sized: tuple[object, int] | None = None  # (sized_by's value, the text's size then)

    def open(self, caller: Caller) -> Handle:
        return _TextHandle(self, caller)

    def size(self) -> int:
        if self.sized_by is None:
            return text_size(self.render())
        value, sized = self.sized_by(), self._sized
        if sized is None or sized[0] != value:
            sized = self._sized = (value, text_size(self.render()))
        return sized[1]


class _TextHandle(SnapshotReads):
    def __init__(self, file: TextFile, caller: Caller):
        super().__init__(file.snapshots)
        self._file, self._caller = file, caller

    def write(self, offset: int, data: bytes) -> int:
        for line in decoded_text(data, self._file.name).splitlines():
            if line.strip():
                self._file.on_line(line.strip(), self._caller)
        return len(data)


class CtlFile(File):
    """A ctl file. When ``readable``, a read on the fid that wrote gives the result.

    ``table`` may be a function that makes the CommandTable: it is called at the first open. A
    client that walks into every session's directory (the web reads each one's queue) makes their
    ctl files, and a table of bound commands per directory was half the cost of that walk and most
    of the objects the collector then had to look through (issue 32)."""

    __slots__ = ("_table", "_make")

    def __init__(self, name: str, key: str, table: CommandTable | Callable[[], CommandTable], *,
                 readable: bool = False):
        super().__init__(name, key, READ_WRITE if readable else WRITE_ONLY)
        self._table, self._make = (None, table) if callable(table) else (table, None)

    @property
    def table(self) -> CommandTable:
        if self._table is None:
            self._table, self._make = self._make(), None
        return self._table

    def open(self, caller: Caller) -> Handle:
        return _CtlHandle(self.table, caller)


class _CtlHandle(Handle):
    """Read-back (SPEC §4): a read after a write answers that write, its result or why it was refused.

    The first read after a write starts at the answer's beginning whatever its
    offset (a shell's `exec 3<>ctl; echo ... >&3; cat <&3` reads at the offset
    the write left), later reads continue it, and a read at offset 0 starts it
    again. Before any write the answer is empty (`9p rdwr` reads first).
    """

    def __init__(self, table: CommandTable, caller: Caller):
        self._table = table
        self._caller = caller
        self._answer = b""
        self._fresh = False  # a write came since the last read
        self._pos = 0

    def write(self, offset: int, data: bytes) -> int:
        try:
            result = self._table.run_text(decoded_text(data, "ctl"), self._caller)
        except AnvilError as exc:
            self._set_answer(f"error: {exc.message}")
            raise
        self._set_answer(result or "")
        return len(data)

    def _set_answer(self, text: str) -> None:
        self._answer = (text + "\n").encode("utf-8") if text else b""
        self._fresh = True

    def read(self, offset: int, count: int) -> bytes:
        if self._fresh or offset == 0:
            self._fresh, self._pos = False, 0
        data = self._answer[self._pos:self._pos + count]
        self._pos += len(data)
        return data


class CollectFile(File):
    """Bytes written on one open make one submission, handed over at clunk.

    ``check(size, caller)`` runs at every write with the size so far, so what
    can be refused early (session gone, too large) fails at that Twrite.
    ``ignored(caller)``, if given, hears of a close after writes of nothing
    (`printf '' | 9p write` sends a Twrite of 0 bytes): a trace that the
    writer meant something, where an open and close alone stay silent.
    """

    __slots__ = ("check", "submit", "abandoned", "ignored", "render", "snapshots", "belongs_to")

    def __init__(
        self,
        name: str,
        key: str,
        *,
        check: Callable[[int, Caller], None],
        submit: Callable[..., object],  # (bytes, caller[, belongs_to()]); a Later defers the clunk's reply
        abandoned: Callable[[bytes, Caller], None],
        ignored: Callable[[Caller], None] | None = None,
        render: Callable[[], str] | None = None,
        belongs_to: Callable[[], object] | None = None,
    ):
        super().__init__(name, key, READ_WRITE if render else WRITE_ONLY)
        self.check, self.submit, self.abandoned, self.ignored = check, submit, abandoned, ignored
        # what the bytes of an open belong to, taken at its first write and handed to submit as a
        # third argument (an answer's turn: the turn may end, and another begin, before the clunk)
        self.belongs_to = belongs_to
        # what a read gives, for a field that writes replace (a bead's result); write-only without it
        self.render = render
        self.snapshots = SnapshotSource(render) if render else SnapshotSource(_write_only)

    def open(self, caller: Caller) -> Handle:
        self.check(0, caller)
        return _CollectHandle(self, caller)

    def size(self) -> int:
        """The field as a read gives it: bytes written to an open are not in it until their clunk submits them."""
        return 0 if self.render is None else text_size(self.render())


class _CollectHandle(SnapshotReads):
    """Bytes appended in order, each checked once: a write costs its own size, not the prompt's.

    A write may repeat bytes already collected (a client retrying) but not
    change them; one that would is refused, and so is one that leaves a gap.
    Reads (of a readable one) give the field as it is, a snapshot like TextFile's.
    """

    def __init__(self, file: CollectFile, caller: Caller):
        super().__init__(file.snapshots)
        self._file, self._caller = file, caller
        self._buf = bytearray()
        self._utf8 = Utf8Check(file.name)
        self._base: int | None = None  # the offset of the first write: where this open's bytes begin
        self._wrote = False  # a Twrite was accepted, even one of 0 bytes
        self._taken_for: object = None  # file.belongs_to() at the first accepted write

    def write(self, offset: int, data: bytes) -> int:
        new = self._new_part(offset, data)
        self._file.check(len(self._buf) + len(new), self._caller)
        self._utf8.feed(new, len(self._buf))  # refused at this write, not lost at clunk
        if self._base is None:
            self._base = offset  # only once the first write is taken: a refused one changes nothing
            self._taken_for = self._file.belongs_to() if self._file.belongs_to is not None else None
        self._buf += new
        self._wrote = True
        return len(data)

    def adds(self, offset: int, data: bytes) -> int:
        return len(self._new_part(offset, data))

    def _new_part(self, offset: int, data: bytes) -> bytes:
        """What `data` adds at the end, once the part that repeats collected bytes is checked.

        Every open starts empty, so the first write may come at any offset: a shell's `>>` on a
        mount writes at the size the kernel remembers from an earlier write. Later offsets count
        from that first one.
        """
        base = offset if self._base is None else self._base
        offset -= base
        end = len(self._buf)
        if offset < 0:
            raise InvalidRequest(f"{self._file.name}: write at offset {offset + base} comes before the first "
                                 f"write of this open (at {base}); write in order")
        if offset > end:
            raise InvalidRequest(f"{self._file.name}: write at offset {offset + base} leaves a gap after {end + base} bytes; write in order")
        repeated = min(end - offset, len(data))
        if self._buf[offset:offset + repeated] != data[:repeated]:
            raise InvalidRequest(
                f"{self._file.name}: write at offset {offset + base} would change bytes already written (it has {end}); "
                "write each part once, in order")
        return data[repeated:]

    def truncate(self) -> None:
        pass  # a fresh open is already empty; O_TRUNC changes nothing

    def held(self) -> int:
        return len(self._buf)

    def clunk(self) -> Later | None:
        super().clunk()
        done = None
        if self._buf and self._file.belongs_to is not None:
            done = self._file.submit(bytes(self._buf), self._caller, self._taken_for)
        elif self._buf:
            done = self._file.submit(bytes(self._buf), self._caller)
        elif self._wrote and self._file.ignored is not None:
            self._file.ignored(self._caller)
        return done if isinstance(done, Later) else None  # a prompt: answered once it is on disk

    def abandon(self) -> None:
        super().clunk()
        if self._buf:
            self._file.abandoned(bytes(self._buf), self._caller)


def _write_only() -> str:
    raise PermissionDenied("file is write-only")


class Utf8Check:
    """UTF-8 checked as it arrives: only the new bytes, plus an unfinished character carried over.

    ``checked`` counts the bytes looked at, which is each byte once.
    """

    def __init__(self, what: str):
        self._what = what
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self.checked = 0

    def feed(self, data: bytes, at: int) -> None:
        """Check `data`, which starts at byte `at`; if it is refused, the state is as before."""
        state = self._decoder.getstate()
        try:
            self._decoder.decode(data)
        except UnicodeDecodeError as exc:
            self._decoder.setstate(state)
            carried = len(state[0])  # exc.start counts from the carried bytes
            raise InvalidRequest(f"{self._what}: not valid UTF-8 at byte {at - carried + exc.start}; write text") from None
        self.checked += len(data)


class Cursor(Protocol):
    """A reader's position in something that grows or changes (see StreamFile)."""

    def ready(self, offset: int) -> bool: ...

    async def wait_ready(self, offset: int) -> None: ...

    def read(self, offset: int, count: int) -> bytes: ...


class StreamFile(File):
    """A file whose reads may block; each open gets its own cursor."""

    __slots__ = ("open_cursor",)

    def __init__(self, name: str, key: str, open_cursor: Callable[[], Cursor]):
        super().__init__(name, key, READ_ONLY)
        self.open_cursor = open_cursor

    def open(self, caller: Caller) -> Handle:
        return _StreamHandle(self.open_cursor())


class _StreamHandle(Handle):
    blocking = True

    def __init__(self, cursor: Cursor):
        self._cursor = cursor

    def ready(self, offset: int) -> bool:
        return self._cursor.ready(offset)

    async def wait_ready(self, offset: int) -> None:
        await self._cursor.wait_ready(offset)

    def read(self, offset: int, count: int) -> bytes:
        return self._cursor.read(offset, count)

"""The kinds of synthetic file: snapshots, ctl files, collected writes, streams.

    TextFile     computed text, read as a snapshot; optionally takes line writes
    CtlFile      commands from a CommandTable, one per line, acted on per write
    CollectFile  bytes collected per open and submitted at clunk (prompts, mail)
    StreamFile   blocking reads from a cursor opened per open (events, wait)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from ..errors import InvalidRequest
from .ctl import CommandTable
from .nodes import READ_ONLY, READ_WRITE, WRITE_ONLY, Caller, File, Handle


def _decode(data: bytes, what: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidRequest(f"{what}: not valid UTF-8 at byte {exc.start}; write text") from None


class _SnapshotReads(Handle):
    """Reads at offset 0 take a fresh snapshot; later offsets continue it."""

    def __init__(self, render: Callable[[], str]):
        self._render = render
        self._snapshot: bytes | None = None

    def read(self, offset: int, count: int) -> bytes:
        if offset == 0 or self._snapshot is None:
            self._snapshot = self._render().encode("utf-8")
        return self._snapshot[offset:offset + count]


class TextFile(File):
    """Computed text. With ``on_line``, each written line is handed to it."""

    __slots__ = ("render", "on_line")

    def __init__(self, name: str, key: str, render: Callable[[], str], on_line: Callable[[str, Caller], None] | None = None):
        super().__init__(name, key, READ_WRITE if on_line else READ_ONLY)
        self.render = render
        self.on_line = on_line

    def open(self, caller: Caller) -> Handle:
        return _TextHandle(self, caller)


class _TextHandle(_SnapshotReads):
    def __init__(self, file: TextFile, caller: Caller):
        super().__init__(file.render)
        self._file, self._caller = file, caller

    def write(self, offset: int, data: bytes) -> int:
        for line in _decode(data, self._file.name).splitlines():
            if line.strip():
                self._file.on_line(line.strip(), self._caller)
        return len(data)


class CtlFile(File):
    """A ctl file. When ``readable``, a read on the fid that wrote gives the result."""

    __slots__ = ("table",)

    def __init__(self, name: str, key: str, table: CommandTable, *, readable: bool = False):
        super().__init__(name, key, READ_WRITE if readable else WRITE_ONLY)
        self.table = table

    def open(self, caller: Caller) -> Handle:
        return _CtlHandle(self.table)


class _CtlHandle(Handle):
    def __init__(self, table: CommandTable):
        self._table = table
        self._result = b""

    def write(self, offset: int, data: bytes) -> int:
        result = self._table.run_text(_decode(data, "ctl"))
        if result is not None:
            self._result = (result + "\n").encode("utf-8")
        return len(data)

    def read(self, offset: int, count: int) -> bytes:
        return self._result[offset:offset + count]


class CollectFile(File):
    """Bytes written on one open make one submission, handed over at clunk.

    ``check(size, caller)`` runs at every write with the size so far, so what
    can be refused early (session gone, too large) fails at that Twrite.
    """

    __slots__ = ("check", "submit", "abandoned")

    def __init__(
        self,
        name: str,
        key: str,
        *,
        check: Callable[[int, Caller], None],
        submit: Callable[[bytes, Caller], None],
        abandoned: Callable[[bytes, Caller], None],
    ):
        super().__init__(name, key, WRITE_ONLY)
        self.check, self.submit, self.abandoned = check, submit, abandoned

    def open(self, caller: Caller) -> Handle:
        self.check(0, caller)
        return _CollectHandle(self, caller)


class _CollectHandle(Handle):
    def __init__(self, file: CollectFile, caller: Caller):
        self._file, self._caller = file, caller
        self._buf = bytearray()

    def write(self, offset: int, data: bytes) -> int:
        if offset > len(self._buf):
            raise InvalidRequest(f"{self._file.name}: write at offset {offset} leaves a gap after {len(self._buf)} bytes; write in order")
        self._file.check(offset + len(data), self._caller)
        candidate = self._buf[:offset] + data + self._buf[offset + len(data):]
        _check_utf8(candidate, self._file.name)  # refused at this write, not lost at clunk
        self._buf = candidate
        return len(data)

    def truncate(self) -> None:
        pass  # a fresh open is already empty; O_TRUNC changes nothing

    def clunk(self) -> None:
        if self._buf:
            self._file.submit(bytes(self._buf), self._caller)

    def abandon(self) -> None:
        if self._buf:
            self._file.abandoned(bytes(self._buf), self._caller)


def _check_utf8(data: bytes, what: str) -> None:
    """Valid UTF-8 so far; an incomplete character at the end may be finished by the next write."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.reason == "unexpected end of data" and exc.end == len(data):
            return
        raise InvalidRequest(f"{what}: not valid UTF-8 at byte {exc.start}; write text") from None


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

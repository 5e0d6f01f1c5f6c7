"""A blocking file (events, stream) read as lines, one Tread after another."""

from __future__ import annotations

from collections.abc import Awaitable, Callable


class Lines:
    """An async iterator of a file's lines (str, without the newline) from the offset 0 on.

    It reads only while the caller waits for the next line, so a cancelled
    `async for` leaves no read behind (the client flushes it). The file's
    end (an empty read: `stream` when its turn ends) ends the iteration; a
    last line without a newline comes first.
    """

    def __init__(self, read: Callable[[int, int], Awaitable[bytes]], fid: int):
        self._read = read
        self._fid = fid
        self._offset = 0
        self._buffer = b""
        self._ended = False

    def __aiter__(self) -> Lines:
        return self

    async def __anext__(self) -> str:
        while b"\n" not in self._buffer:
            if self._ended:
                raise StopAsyncIteration
            data = await self._read(self._fid, self._offset)
            self._offset += len(data)
            self._buffer += data
            if not data:
                self._ended = True
                if self._buffer:
                    self._buffer += b"\n"
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode(errors="replace")

"""Split a byte stream into 9P frames (size[4] first), checking the size field."""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator

from .consts import HEADER_SIZE
from .errors import FramingError

_SIZE = struct.Struct("<I")


class FrameBuffer:
    """Collects received bytes and hands out whole frames.

    A size field smaller than a header or larger than ``max_size`` means the
    stream can no longer be trusted, so it raises FramingError and the
    connection should be closed.
    """

    __slots__ = ("_buf", "_pos", "max_size")

    def __init__(self, max_size: int):
        self._buf: bytes | bytearray = b""
        self._pos = 0
        self.max_size = max_size

    def feed(self, data: bytes) -> None:
        if self._pos == len(self._buf) and type(data) is bytes:
            # Everything before was handed out: read from the received bytes themselves. A receive
            # is most often exactly one frame, which then goes out as is, with no copy at all.
            self._buf, self._pos = data, 0
            return
        if type(self._buf) is not bytearray:  # a part of a frame is left: collect from here on
            self._buf, self._pos = bytearray(self._buf[self._pos:]), 0
        self._buf += data

    def split(self, data: bytes) -> Iterable[bytes]:
        """Feed `data`, and iterate over the whole frames there are then, each taken from the buffer as it
        is reached (what is not reached stays). The usual receive, exactly one whole frame with nothing
        pending, comes back as it is, without going through the buffer."""
        if self._pos == len(self._buf) and type(data) is bytes and len(data) >= HEADER_SIZE:
            size = _SIZE.unpack_from(data)[0]
            if size == len(data) and size <= self.max_size:
                return (data,)
        self.feed(data)
        return self._whole_frames()

    def _whole_frames(self) -> Iterator[bytes]:
        """The whole frames in the buffer, each taken as it is reached. A generator: a batch of pipelined
        requests costs a resume a frame rather than a call (issue 11). The position is stored before a
        frame is handed out, so a consumer that stops early leaves the rest in the buffer."""
        buf, pos = self._buf, self._pos
        while len(buf) - pos >= 4:
            size = _SIZE.unpack_from(buf, pos)[0]
            if size < HEADER_SIZE:
                raise FramingError(f"frame size {size} is smaller than a {HEADER_SIZE}-byte header")
            if size > self.max_size:  # read per frame: a Tversion among the frames changes it
                raise FramingError(f"frame size {size} is larger than msize {self.max_size}")
            end = pos + size
            if len(buf) < end:
                return
            self._pos = end
            if type(buf) is bytes:
                yield buf[pos:end]  # the whole of it is `buf` itself, not a copy
            else:
                frame = bytes(buf[pos:end])
                if end > 65536 and end * 2 > len(buf):
                    del buf[:end]
                    self._pos = end = 0
                yield frame
            pos = end

    def next_frame(self) -> bytes | None:
        """The next whole frame, or None until more bytes arrive."""
        return next(self._whole_frames(), None)

    def frames(self) -> list[bytes]:
        """All whole frames received so far."""
        out = []
        while (frame := self.next_frame()) is not None:
            out.append(frame)
        return out

    @property
    def pending(self) -> int:
        """Bytes received that do not yet make a whole frame."""
        return len(self._buf) - self._pos

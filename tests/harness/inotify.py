"""Which files of one directory were opened or read, as the kernel tells it (inotify, through ctypes).

    with FileOpens(state / "mail/human/done") as opens:
        ...                                  # 9P requests to a real server
        assert opens.names() == []           # no file in it opened or read since the watch began

The kernel queues an event inside the open(2) or read(2) that caused it,
before that call returns, so once the server has answered a request every
open it made for it is in the queue: reading the queue without blocking
then is no race, and needs no sleep. The watch covers the directory's own
entries only (a listing of the directory itself has no name and is left
out). An overflowed queue fails rather than under-count.
"""

from __future__ import annotations

import ctypes
import os
import struct
from pathlib import Path

IN_ACCESS, IN_OPEN, IN_Q_OVERFLOW = 0x1, 0x20, 0x4000
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then len bytes of NUL-padded name
_libc = ctypes.CDLL(None, use_errno=True)


class FileOpens:
    def __init__(self, directory: Path | str):
        self.directory = str(directory)
        self.fd = _libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        if _libc.inotify_add_watch(self.fd, self.directory.encode(), IN_OPEN | IN_ACCESS) < 0:
            err = ctypes.get_errno()
            os.close(self.fd)
            raise OSError(err, f"inotify_add_watch {self.directory}")
        self._seen: list[str] = []

    def names(self) -> list[str]:
        """The entries opened or read since the watch began (or the last call), in order, repeats merged
        by the kernel."""
        while True:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                break
            self._seen += _names(data, self.directory)
        seen, self._seen = self._seen, []
        return seen

    def close(self) -> None:
        os.close(self.fd)

    def __enter__(self) -> FileOpens:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _names(data: bytes, directory: str) -> list[str]:
    names, pos = [], 0
    while pos < len(data):
        _wd, mask, _cookie, size = _EVENT.unpack_from(data, pos)
        if mask & IN_Q_OVERFLOW:
            raise AssertionError(f"inotify queue for {directory} overflowed: its events cannot be counted")
        name = data[pos + _EVENT.size:pos + _EVENT.size + size].rstrip(b"\0").decode()
        if name:
            names.append(name)
        pos += _EVENT.size + size
    return names

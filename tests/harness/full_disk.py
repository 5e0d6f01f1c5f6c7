"""A state directory whose disk is full for some files: their replaces are refused (ENOSPC) while it lasts."""

from __future__ import annotations

import errno
from collections.abc import Callable


class FullDisk:
    """Makes `dir` (a PrivateDir) refuse to put the files `names` picks into place, with ENOSPC, while
    `full` is set; the temporary file goes, as a real refusal leaves nothing behind."""

    def __init__(self, dir, names: Callable[[str], bool] = lambda name: True):
        self.full = True
        put = dir.put

        def refusing_put(tmp: str, name: str) -> None:
            if self.full and names(name):
                dir.discard(tmp)
                raise OSError(errno.ENOSPC, "No space left on device")
            put(tmp, name)

        dir.put = refusing_put

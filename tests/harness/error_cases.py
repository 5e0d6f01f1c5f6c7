"""One refused request per error kind, for checking every client gets the errno it should.

Each case is a request against a server prepared by SETUP (a session `bot1`
that is idle, `halt` that is stopped, prompts limited to PROMPT_LIMIT bytes
by CONFIG). `errno` is what 9P2000.u/.L clients get; `kind` (errors.KINDS)
says what plain 9P2000 text, and so a 9pfuse mount, gives.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass

from anvilfs.errors import KINDS, Kind

PROMPT_LIMIT = 64
CONFIG = f"[limits]\nmax_prompt_bytes = {PROMPT_LIMIT}\n"
SETUP = [("ctl", "new sim /tmp name=bot1\n"), ("ctl", "new sim /tmp name=halt\n"), ("halt/ctl", "stop\n")]


@dataclass(frozen=True)
class Case:
    name: str
    op: str  # "write" | "read" | "remove"
    path: str  # below agent/
    errno: int
    data: str = ""

    @property
    def kind(self) -> Kind:
        return KINDS[self.errno]


CASES = [
    Case("unknown-command", "write", "bot1/ctl", errno.EINVAL, "fly\n"),
    Case("interrupt-idle", "write", "bot1/ctl", errno.EBUSY, "interrupt\n"),  # issue 10 item 1: not EINTR
    Case("bad-argument", "write", "bot1/ctl", errno.EINVAL, "stop now\n"),
    Case("missing-file", "read", "nope", errno.ENOENT),
    Case("unknown-backend", "write", "ctl", errno.ENOENT, "new nosuch /tmp\n"),
    Case("name-taken", "write", "ctl", errno.EEXIST, "new sim /tmp name=bot1\n"),
    Case("stopped-session", "write", "halt/in", errno.EBUSY, "hello\n"),
    Case("read-only", "write", "list", errno.EACCES, "x\n"),
    Case("remove", "remove", "list", errno.EPERM),
    Case("past-a-file", "read", "list/x", errno.ENOTDIR),
    Case("prompt-too-large", "write", "bot1/in", errno.EFBIG, "x" * (PROMPT_LIMIT * 2)),
]
IDS = [c.name for c in CASES]

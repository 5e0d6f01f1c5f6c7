"""What a connection keeps per fid, and the limits it enforces."""

from __future__ import annotations

import errno
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import LimitExceeded
from ..ninep import messages as m
from ..tree import Caller, Handle, Node

if TYPE_CHECKING:
    from ..waitable import Later
    from .listings import Listing


@dataclass(frozen=True, slots=True)
class Limits:
    """What one connection may make the server hold; each is refused with an error naming it."""

    max_msize: int = 1 << 20
    max_fids: int = 4096
    # Replies built but not yet sent. The receive loop stops handling frames
    # once this is passed, and one reply is at most msize, so a connection
    # holds at most max_unsent + max_msize bytes of replies.
    max_unsent: int = 1 << 20
    max_blocked_reads: int = 1024  # reads parked on events/stream/wait (EMFILE past it)
    max_snapshot_bytes: int = 64 << 20  # distinct file snapshots its open fids pin (ENOMEM past it)
    max_collected_bytes: int = 16 << 20  # written to open files, held for their clunk (prompts, mail, bead text)
    max_collected_bytes_server: int = 256 << 20  # the same, all connections together


@dataclass(slots=True)
class Fid:
    """What one fid names: a node, how it was reached, and its open state."""

    trail: tuple[Node, ...]  # root ... node, so ".." can go back
    caller: Caller
    handle: Handle | None = None
    can_read: bool = False
    can_write: bool = False
    listing: list[Node] | None = None  # directory snapshot taken at offset 0
    records: Listing | None = None  # a Tread's listing's stat records, taken with it
    entries: Listing | None = None  # a Treaddir's listing's entries: apart, as a 9P2000.L client may do both
    list_index: int = 0  # 9P2000: next entry; .L uses the offset cookie
    list_offset: int = 0  # 9P2000: byte offset the next read must ask for
    charged: int = 0  # bytes of its handle's held() counted in the connection's CollectBudget

    @property
    def node(self) -> Node:
        return self.trail[-1]


@dataclass(frozen=True, slots=True)
class Blocked:
    """A read that must wait: the connection awaits handle.wait_ready(offset) in a task."""

    fid: Fid
    fid_number: int
    tag: int
    offset: int
    count: int


@dataclass(frozen=True, slots=True)
class Deferred:
    """A reply that waits until `later` is done (a prompt on its way to disk): the connection awaits
    `later.wait()` in a task, then sends `reply` (a message or its frame), or the error it raised in reply to `request`."""

    later: Later
    request: m.Message
    reply: m.Message | bytes


class CollectedLimit(LimitExceeded):
    errno = errno.ENOMEM  # like snapshots: the limit guards the server's memory (9pfuse: "memory")


class CollectBudget:
    """Bytes clients have written to open files and the server holds until their clunk.

    One connection may hold at most its limit, and all connections together
    at most the server's (a class-wide count), so 300 open prompts of 1 MiB
    on one connection, or 256 connections doing so, cannot exhaust memory.
    """

    server_held = 0  # all connections of this process

    def __init__(self, limit: int, server_limit: int):
        self.limit, self.server_limit = limit, server_limit
        self.held = 0

    def check(self, more: int) -> None:
        if self.held + more > self.limit:
            raise CollectedLimit(f"close (submit) some open files first: this connection holds {self.held} bytes "
                                 f"written to them, at most {self.limit} (out of memory otherwise)")
        if CollectBudget.server_held + more > self.server_limit:
            raise CollectedLimit(f"try again once other writers close their files: the server holds "
                                 f"{CollectBudget.server_held} bytes written to open files, at most {self.server_limit} "
                                 "(out of memory otherwise)")

    def add(self, change: int) -> None:
        self.held += change
        CollectBudget.server_held += change

    def recount(self, fid: Fid) -> None:
        """Bring the count up to date with what the fid's handle holds now (after a write, or a read-back)."""
        change = fid.handle.held() - fid.charged
        if change:
            self.add(change)
            fid.charged += change

    def release(self, fid: Fid) -> None:
        """The fid is closing: what its handle held is no longer the connection's to hold."""
        if fid.charged:  # most files hold nothing: every clunk comes here
            self.add(-fid.charged)
            fid.charged = 0

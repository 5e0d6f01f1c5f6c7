"""What a connection keeps per fid, and the limits it enforces."""

from __future__ import annotations

from dataclasses import dataclass

from ..tree import Caller, Handle, Node


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


@dataclass(slots=True)
class Fid:
    """What one fid names: a node, how it was reached, and its open state."""

    trail: tuple[Node, ...]  # root ... node, so ".." can go back
    caller: Caller
    handle: Handle | None = None
    can_read: bool = False
    can_write: bool = False
    listing: list[Node] | None = None  # directory snapshot taken at offset 0
    list_index: int = 0  # 9P2000: next entry; .L uses the offset cookie
    list_offset: int = 0  # 9P2000: byte offset the next read must ask for

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

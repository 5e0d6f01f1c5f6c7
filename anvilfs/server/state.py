"""What a connection keeps per fid, and the limits it enforces."""

from __future__ import annotations

from dataclasses import dataclass

from ..tree import Caller, Handle, Node


@dataclass(frozen=True, slots=True)
class Limits:
    max_msize: int = 1 << 20
    max_fids: int = 4096


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

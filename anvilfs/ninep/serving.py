"""The sans-IO core of a 9P server connection: tags in flight, flush order and the version reset.

No sockets, no trio: the server's Connection (anvilfs/server) drives it,
as the clients drive client/protocol.py. Most requests are answered at
once and never enter the tag table; a request answered later (a read that
waits, a clunk whose prompt is on its way to disk) is ``Pending`` under its
tag until its reply is sent. Everything that moves a tag is here:

    a tag that is      on                           becomes        and the server
    free               a request answered at once   free           sends its reply
    free               a request answered later     pending        (begin)
    pending            a request with its tag       pending        refuses that request (in_flight)
    pending            its reply is sent            free           then the Rflushes that waited on it (finish)
    pending            Tflush of it                 flushing       cancels it, unless it cannot be (a prompt)
    flushing           its reply, or its cancel     free           answers each waiting Rflush, in order
    free               Tflush of it                 free           answers Rflush at once (flush(5): never an error)
    any                Tversion                     free           cancels everything, answers none of it (reset)

A Tflush of a pending Tflush waits with it, and is answered after it. The
tag of a Tflush waiting for its Rflush is itself in flight. A request that
is pending is cancelled through its ``scope`` (anything with ``cancel()``):
the driver decides what a cancelled request sends (nothing, or an empty
read when its fid was clunked).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .consts import NOTAG
from .fids import TagTable


@dataclass(slots=True)
class Pending:
    """A request whose reply comes later."""

    scope: Any  # what cancels it: scope.cancel() (a trio.CancelScope in the server)
    fid_number: int  # the fid whose clunk ends it (a read), or -1
    flushes: list[int] = field(default_factory=list)  # Tflush tags waiting on it, answered in this order
    outcome: str = ""  # why it was cancelled: "flush", "clunk" or "reset"
    flushable: bool = True  # a deferred reply is not: a flush of it waits for it


class ServerProtocol:
    """One connection's requests in flight. `tags` and `flushing` are empty while nothing is: the
    driver's test, per request, of whether any rule here applies."""

    __slots__ = ("tags", "flushing")

    def __init__(self) -> None:
        self.tags: TagTable[Pending] = TagTable()
        self.flushing: dict[int, Pending] = {}  # tag of a Tflush waiting -> the request it waits on

    def in_flight(self, tag: int) -> bool:
        """A request may not take this tag: it names a pending request, or a Tflush not yet answered."""
        return tag in self.tags or tag in self.flushing

    def begin(self, tag: int, pending: Pending) -> None:
        self.tags.begin(tag, pending)

    def flush(self, tag: int, oldtag: int) -> bool:
        """A Tflush of `oldtag` with `tag`: True if its Rflush goes out now (nothing to wait for), else it
        is answered by finish() after the request it waits on."""
        pending = self.tags.get(oldtag) if oldtag != NOTAG else None
        if pending is not None:
            if pending.flushable:
                pending.outcome = pending.outcome or "flush"
                pending.scope.cancel()
        else:
            pending = self.flushing.get(oldtag)  # a flush of a pending flush: answered after it
            if pending is None:
                return True  # unknown or finished: nothing to cancel
        pending.flushes.append(tag)
        self.flushing[tag] = pending
        return False

    def end(self, tag: int, pending: Pending) -> None:
        """The pending request is done (answered, or cancelled): its tag is free."""
        if self.tags.get(tag) is pending:  # after a reset the tag may be another request's
            self.tags.end(tag)

    def flushes_after(self, pending: Pending) -> list[int]:
        """The tags of the Tflushes answered once `pending`'s reply is out (flush(5)), in their order."""
        for tag in pending.flushes:
            self.flushing.pop(tag, None)
        return pending.flushes

    def ends_with_fid(self, fid_number: int) -> None:
        """The fid is clunked or removed: its reads that wait end (the driver answers them with no data); not
        one that has taken its data already and waits for it to be saved (unflushable): its reply goes out."""
        for pending in self.tags.values():
            if pending.fid_number == fid_number and pending.flushable:
                pending.outcome = pending.outcome or "clunk"
                pending.scope.cancel()

    def reset(self) -> None:
        """Tversion: everything in flight is cancelled, unanswered."""
        for pending in self.tags.values():
            pending.outcome = "reset"
            pending.scope.cancel()
        self.tags.clear()  # in place: the driver keeps references to both tables
        self.flushing.clear()

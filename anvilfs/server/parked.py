"""The requests a connection answers later, in tasks: reads that wait, clunks whose prompt is on its way
to disk, and the flushes of them (flush(5)).

A part of the Connection (connection.py), which it is mixed into. A read
that must wait gets a task, under a cancel scope kept in the tag table so
that a Tflush can cancel it; it waits for room under the unsent limit
before it takes its data. A clunk that submitted a prompt (``Deferred``)
waits in a task until the prompt is on disk; a flush does not cancel it and
is answered after it. Rflush goes out after any reply to the old request
(and after the Rflush of an older flush it names), never as an error; a
flushed request gets no reply at all. A Tversion cancels everything in
flight, unanswered. Those rules, and the tags, are the sans-IO core's
(ninep/serving.py); here are the tasks and their cancel scopes.
"""

from __future__ import annotations

import errno
import logging
import trio

from ..errors import AnvilError
from ..ninep import messages as m
from ..ninep.serving import Pending, ServerProtocol
from .dispatch import Blocked, Dispatcher
from .state import Deferred

log = logging.getLogger("anvilfs.server")


class ParkedRequests:
    """The Connection's tasks for requests answered later. Its fields, and the send(), _flush_out(),
    _has_room() and _wait_room() it calls, are the Connection's."""

    dispatcher: Dispatcher
    name: str
    core: ServerProtocol
    _nursery: trio.Nursery | None

    def _start_blocked(self, blocked: Blocked) -> None:
        flight = Pending(scope=trio.CancelScope(), fid_number=blocked.fid_number)
        self.core.begin(blocked.tag, flight)
        self._nursery.start_soon(self._finish_blocked, blocked, flight)

    async def _finish_blocked(self, blocked: Blocked, flight: Pending) -> None:
        try:
            with flight.scope:
                await self._wait_answerable(blocked)
            # Woken with data and room for it, or cancelled: either way no
            # checkpoint from here to send(), so a flush cannot slip in between
            # taking the data and queueing its reply. The outcome decides, even if the data came
            # first: after a Tversion nothing of the old session may be answered. A read that changed
            # state (`next` begins a turn) waits for that to be saved, unflushable: its data is taken.
            reply = None
            if flight.outcome == "" and not flight.scope.cancelled_caught:
                reply, later = self.dispatcher.finish_read(blocked)
                if later is not None:  # it changed state (a turn begun): answered once saved, a flush waits for it
                    flight.flushable = False
                    reply = await self._once_saved(later, blocked, reply, flight)
            self.core.end(blocked.tag, flight)
            if flight.outcome == "reset":
                return
            if flight.outcome == "clunk":
                self.send(m.Rread(tag=blocked.tag, data=b""))  # the file was closed: end of file
            elif reply is not None:
                self.send(reply)
        except Exception as exc:  # a bug in a file must not take the connection down
            log.exception("%s: blocked read failed", self.name)
            self.core.end(blocked.tag, flight)
            self.send(self.dispatcher.blocked_read_failed(blocked, f"internal error: {exc}", errno.EIO))
        finally:
            if flight.outcome != "reset":
                self._answer_flushes(flight)
        await self._flush_out()  # at once, rather than one scheduler pass later in the writer task

    async def _once_saved(self, later, blocked: Blocked, reply: m.Message, flight: Pending) -> m.Message:
        """The read's reply once what it changed is on disk, or the error if the disk refused it; a Tversion
        (the scope's only canceller now) ends the wait, and then nothing is answered."""
        flight.scope = trio.CancelScope()  # a scope is entered once: a new one, which a Tversion cancels the same way
        with flight.scope:
            try:
                await later.wait()
            except AnvilError as exc:
                return self.dispatcher.blocked_read_failed(blocked, exc.message, exc.errno, exc.detail)
        return reply

    def _start_deferred(self, deferred: Deferred) -> None:
        # A flush does not cancel it (the prompt is on its way whatever the client does): its Rflush
        # follows its reply, as for a read that was answered first (flush(5)).
        flight = Pending(scope=trio.CancelScope(), fid_number=-1, flushable=False)
        self.core.begin(deferred.request.tag, flight)
        self._nursery.start_soon(self._finish_deferred, deferred, flight)

    async def _finish_deferred(self, deferred: Deferred, flight: Pending) -> None:
        request = deferred.request
        tag, kind, fields = request.tag, type(request), request._values()
        with flight.scope:  # cancelled only by a Tversion or the end of the connection
            try:
                await deferred.later.wait()
                reply = deferred.reply
            except AnvilError as exc:
                reply = self.dispatcher.error(kind, fields, exc.message, exc.errno, detail=exc.detail)
            except Exception as exc:  # a bug behind one file must not take the connection down
                log.exception("%s: a deferred reply failed", self.name)
                reply = self.dispatcher.error(kind, fields, f"internal error: {exc}", errno.EIO)
        self.core.end(tag, flight)
        if flight.outcome == "reset" or flight.scope.cancelled_caught:
            return  # after a Tversion nothing of the old session may be answered
        self.send(reply)
        self._answer_flushes(flight)
        await self._flush_out()

    def _answer_flushes(self, flight: Pending) -> None:
        """The Rflushes of the Tflushes that waited on `flight`, in their order, after its reply (flush(5))."""
        for tag in self.core.flushes_after(flight):
            self.send(m.Rflush(tag=tag))

    async def _wait_answerable(self, blocked: Blocked) -> None:
        """Until the read has data and its reply fits in the unsent limit, both true on return."""
        while True:
            await blocked.fid.handle.wait_ready(blocked.offset)  # returns at once when ready
            if self._has_room():
                return
            await self._wait_room()

    def _flush(self, tag: int, oldtag: int) -> None:
        """Tflush: answered by Rflush only, whatever its tag (flush(5)), now or after what it waits on."""
        if self.core.flush(tag, oldtag):
            self.send(m.Rflush(tag=tag))

    def _cancel_all(self) -> None:
        """Tversion: abort everything in flight; those requests get no reply."""
        self.core.reset()

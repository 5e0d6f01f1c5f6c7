"""Many requests in flight on one connection: the trio side of the client core (anvilfs/client/protocol.py).

One task (run) reads the stream and routes each reply to the caller waiting
on its tag; sends go out under one lock, each whole: a send is shielded from
cancellation (with a deadline), since a frame cut in half would break the
stream for every caller.

Flush on cancel: a caller cancelled while it waits for a reply sends Tflush
for its tag and waits, shielded, up to FLUSH_DEADLINE for the Rflush, so the
server is left with no request of it. A reply that raced the flush is
dropped; if that reply made a fid (a whole Twalk), the fid is clunked.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import trio

from ..client.errors import ConnectionLost, ServerError, lost
from ..client.protocol import ClientProtocol, Flushed, Reply, check, made_fid
from ..ninep import RemoteProtocolError
from ..ninep import messages as m

log = logging.getLogger("anvilfs.aioclient")

FLUSH_DEADLINE = 5.0  # seconds a cancelled request waits for its Rflush (and a clunk of what it left)
SEND_DEADLINE = 30.0  # seconds a frame may take to go out before the connection is given up
HANDSHAKE_DEADLINE = 10.0  # seconds for Tversion and Tattach to be answered
RECEIVE_SIZE = 1 << 16
CLOSED = "the client was closed"


@dataclass(frozen=True, slots=True)
class Statistics:
    """What a connection has in flight at one moment."""

    in_flight: int  # tags taken: requests waiting for their reply, flushes and flushed requests waiting for an Rflush
    waiting: tuple[str, ...]  # the requests whose callers wait for a reply, by type, sorted: ("Tread", "Tread")


class _Waiter:
    """One request's caller: the reply, or why the connection ended."""

    __slots__ = ("request", "done", "reply", "lost", "flushed")

    def __init__(self, request: str) -> None:
        self.request = request  # its type's name, for statistics()
        self.done = trio.Event()
        self.reply: m.Message | None = None
        self.lost: str | None = None
        self.flushed = False  # its caller gave it up: it waits for the Rflush, not for a reply

    def set(self, reply: m.Message | None = None, lost: str | None = None) -> None:
        self.reply, self.lost = reply, lost
        self.done.set()


class Multiplexer:
    """Owns the stream and the protocol state of one client connection."""

    def __init__(self, stream: trio.abc.Stream, protocol: ClientProtocol):
        self.stream = stream
        self.protocol = protocol
        self._send_lock = trio.Lock()
        self._waiters: dict[int, _Waiter] = {}
        self._flushes: dict[int, trio.Event] = {}  # a flushed tag -> set when its Flushed event comes
        self._lost: str | None = None  # why the connection is over; each caller gets a ConnectionLost of its own

    def statistics(self) -> Statistics:
        busy = self.protocol.busy_tags()
        waiting = sorted(w.request for w in self._waiters.values() if not (w.done.is_set() or w.flushed))
        return Statistics(len(busy), tuple(waiting))

    # ------------------------------------------------------------ calls

    async def handshake(self, *, uname: str, aname: str) -> int:
        """Tversion and Tattach, before run() starts; the root fid. A refusal raises ServerError."""
        try:
            with trio.fail_after(HANDSHAKE_DEADLINE):
                await self._handshake_rpc(self.protocol.version_request())
                root = self.protocol.new_fid()
                await self._handshake_rpc(self.protocol.request(m.Tattach(tag=0, fid=root, uname=uname, aname=aname))[1])
                return root
        except trio.TooSlowError:
            raise ConnectionLost(f"the server did not answer Tversion and Tattach within {HANDSHAKE_DEADLINE:g} s") from None
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            raise lost(_os_error(exc)) from None

    async def _handshake_rpc(self, data: bytes) -> None:
        await self.stream.send_all(data)
        while True:
            received = await self.stream.receive_some(RECEIVE_SIZE)
            if not received:
                raise lost()
            for event in self.protocol.receive_data(received):  # one request in flight: its reply
                check(event.message)
                return

    async def rpc(self, msg: m.Message) -> m.Message:
        """Send `msg` with a free tag and return its reply; Rerror raises ServerError."""
        tag, waiter = await self._start(msg)
        try:
            await waiter.done.wait()
        except trio.Cancelled:
            with trio.CancelScope(shield=True):
                await self._abandon(msg, tag, waiter)
            raise
        if waiter.lost is not None:
            raise ConnectionLost(waiter.lost)
        return check(waiter.reply)

    async def pipeline(self, msgs: list[m.Message]) -> list[m.Message]:
        """Send `msgs` in one go and return their replies in order, Rerrors included (not raised).

        The server handles a connection's requests in the order they come, so a
        later one may use the fid an earlier one walks to: a prompt's walk, open,
        write and clunk cost one round trip instead of four. Cancelled, each
        request not yet answered is flushed, as rpc() does for one.
        """
        self._check_open()
        started = []
        async with self._send_lock:
            frames = []
            for msg in msgs:  # all encoded (and checked) before any is sent
                tag, data = self.protocol.request(msg)
                started.append((msg, tag, _Waiter(type(msg).__name__)))
                frames.append(data)
            for _, tag, waiter in started:
                self._waiters[tag] = waiter
            await self._send(b"".join(frames))
        try:
            for _, _, waiter in started:
                await waiter.done.wait()
        except trio.Cancelled:
            with trio.CancelScope(shield=True):
                await self._abandon_all(started)
            raise
        for _, _, waiter in started:
            if waiter.lost is not None:
                raise ConnectionLost(waiter.lost)
        return [waiter.reply for _, _, waiter in started]

    async def post(self, msg: m.Message) -> None:
        """Send `msg` and do not wait for its reply (a clunk of a fid that was only read): it is dropped."""
        tag, waiter = await self._start(msg)
        waiter.flushed = True  # nobody waits on it: statistics() leaves it out

    async def _start(self, msg: m.Message) -> tuple[int, _Waiter]:
        self._check_open()
        async with self._send_lock:  # a cancel while waiting here has sent nothing: nothing to undo
            tag, data = self.protocol.request(msg)
            waiter = self._waiters[tag] = _Waiter(type(msg).__name__)
            await self._send(data)
        return tag, waiter

    async def _send(self, data: bytes) -> None:
        """One whole frame out (the caller holds the send lock)."""
        with trio.CancelScope(shield=True):
            with trio.move_on_after(SEND_DEADLINE) as late:
                try:
                    await self.stream.send_all(data)
                except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                    self._break(str(lost(_os_error(exc))))
        if late.cancelled_caught:
            self._break(f"the server took no data for {SEND_DEADLINE:g} s: connection given up")
            await trio.aclose_forcefully(self.stream)
        self._check_open()

    def _check_open(self) -> None:
        if self._lost is not None:
            raise ConnectionLost(self._lost)

    async def _abandon(self, msg: m.Message, tag: int, waiter: _Waiter) -> None:
        """The caller is gone (cancelled): flush its request, and undo what a raced reply made."""
        with trio.move_on_after(FLUSH_DEADLINE) as late:
            try:
                await self._flush(tag, waiter)
                fid = made_fid(msg, waiter.reply) if waiter.reply is not None else None
                if fid is not None:
                    await self.rpc(m.Tclunk(tag=0, fid=fid))
            except (ConnectionLost, ServerError):
                pass  # the connection is gone, and the fid with it; or the fid was gone already
        if late.cancelled_caught:  # its tag stays reserved in the protocol until the Rflush, if ever
            log.warning("no Rflush for tag %d (%s) after %g s", tag, type(msg).__name__, FLUSH_DEADLINE)

    async def _abandon_all(self, started: list[tuple[m.Message, int, _Waiter]]) -> None:
        """A cancelled pipeline: flush what is not answered (the last first, all at once), then clunk a fid
        its walk made, unless its own clunk was answered (a clunk before the flushes would end a held read)."""
        with trio.move_on_after(FLUSH_DEADLINE) as late:
            async with self._send_lock:
                flushes = []
                for _, tag, waiter in reversed(started):
                    if not waiter.done.is_set():
                        flushes.append(self._flushes.setdefault(tag, trio.Event()))
                        waiter.flushed = True
                        await self._send(self.protocol.flush(tag))
            for flushed in flushes:
                await flushed.wait()
        if late.cancelled_caught:  # their tags stay reserved in the protocol until the Rflushes, if ever
            log.warning("no Rflush for a pipeline of %s after %g s", [type(msg).__name__ for msg, _, _ in started],
                        FLUSH_DEADLINE)
        if any(isinstance(msg, m.Tclunk) and isinstance(waiter.reply, m.Rclunk) for msg, _, waiter in started):
            return
        for msg, _, waiter in started:
            if waiter.reply is not None and (fid := made_fid(msg, waiter.reply)) is not None:
                with trio.move_on_after(FLUSH_DEADLINE):
                    try:
                        await self.rpc(m.Tclunk(tag=0, fid=fid))
                    except (ConnectionLost, ServerError):
                        pass  # the connection is gone, and the fid with it

    async def _flush(self, tag: int, waiter: _Waiter) -> None:
        """Tflush `tag` unless its reply is here already; return once the Rflush is."""
        async with self._send_lock:
            if waiter.done.is_set():  # answered (or the connection lost) before the caller's cancel
                return
            flushed = self._flushes[tag] = trio.Event()
            waiter.flushed = True
            await self._send(self.protocol.flush(tag))
        await flushed.wait()

    # ------------------------------------------------------------ the reader

    async def run(self) -> None:
        """Read replies and hand them to their callers until the connection ends."""
        try:
            while data := await self.stream.receive_some(RECEIVE_SIZE):
                for event in self.protocol.receive_data(data):
                    self._route(event)
            self._break(str(lost()))
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            self._break(str(lost(_os_error(exc))))
        except RemoteProtocolError as exc:
            self._break(f"the server broke the 9P protocol ({exc}): connection closed")
        except Exception as exc:  # a bug here must not leave callers waiting for ever
            log.exception("the 9P client's reader failed")
            self._break(f"the client's reader failed: {exc!r}")
        finally:
            self._break(CLOSED)  # when cancelled: the client is closing
            with trio.CancelScope(shield=True):
                await trio.aclose_forcefully(self.stream)

    def _route(self, event: Reply | Flushed) -> None:
        if isinstance(event, Reply):
            waiter = self._waiters.pop(event.tag, None)
            if waiter is not None:
                waiter.set(event.message)
            return
        self._waiters.pop(event.oldtag, None)  # not replied: its caller gave it up
        flushed = self._flushes.pop(event.oldtag, None)
        if flushed is not None:
            flushed.set()

    def _break(self, why: str) -> None:
        """The connection is over: every caller, waiting now or later, gets ConnectionLost (the first why)."""
        if self._lost is None:
            self._lost = why
        for waiter in self._waiters.values():
            waiter.set(lost=self._lost)
        self._waiters.clear()
        for flushed in self._flushes.values():
            flushed.set()
        self._flushes.clear()

    async def aclose(self) -> None:
        self._break(CLOSED)
        with trio.CancelScope(shield=True):
            await trio.aclose_forcefully(self.stream)


def _os_error(exc: BaseException) -> OSError | None:
    cause = exc.__cause__
    return cause if isinstance(cause, OSError) else None

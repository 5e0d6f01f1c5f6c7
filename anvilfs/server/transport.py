"""Byte transport under a connection: a trio stream, or a socket used directly.

trio's SocketStream yields to the scheduler on every receive and send even
when the data is there; for a 9P server answering small requests one at a
time that is much of the cost of a request. SocketTransport reads and writes
the socket's file descriptor itself and waits (through trio) only when the
socket is not ready, which is where a ping-pong client always leaves it.
Other streams (trio's in-memory streams in tests) go through StreamTransport.

Reading before waiting is bounded, so that one busy connection cannot keep
the others waiting: at most EAGER_READS in a row, none while a task waits
for the scheduler's next pass, and none in a pass that has a task other
than the connections' receive loops in it (PassWatch). That last rule is
what a wake-up needs: the change that answers a blocked `wait` or `events`
read travels through a few tasks (the request's handler, the session's
runner, the blocked read's task), a scheduler pass each, and under load
each pass would otherwise also answer up to EAGER_READS requests of every
busy connection (benchmarks/history.md, "wake").
"""

from __future__ import annotations

import os

import trio

RECEIVE_SIZE = 1 << 16
EAGER_READS = 16  # reads without a checkpoint at most, in a row

try:  # trio's run queue, to see cheaply whether another task waits to run (see _others_ready)
    from trio._core._run import GLOBAL_RUN_CONTEXT as _RUN_CONTEXT
except ImportError:  # pragma: no cover - a trio without it: the public statistics do the same, slower
    _RUN_CONTEXT = None


def _run_queue():
    """trio's run queue (one deque for the whole run), or None if trio's internals moved."""
    return getattr(getattr(_RUN_CONTEXT, "runner", None), "runq", None)


def _others_ready() -> bool:
    """A task is waiting for the next scheduler pass (a blocked read this connection's request woke, a
    connection whose data came). Tasks already in the pass being run are not in the queue: the bound
    of EAGER_READS is what keeps them from waiting long."""
    runq = _run_queue()
    if runq is None:  # trio's internals moved: the public way, which builds a record each call
        return trio.lowlevel.current_statistics().tasks_runnable > 0
    return bool(runq)


class PassWatch(trio.abc.Instrument):
    """Says whether the scheduler's pass about to run has a task in it that is not a connection's
    receive loop: a woken `wait` or `events` read, a session's runner, a save handed back from its
    thread. Connections do not read ahead in such a pass, so that the task is not run after every
    connection has answered EAGER_READS more requests. Passes of connections alone (the load) keep
    their reads ahead. Tasks woken by a timer join the pass after this look and do not count."""

    def __init__(self, runq) -> None:
        self.loops: set[trio.lowlevel.Task] = set()  # the connections' receive loops
        self.others = False
        self._runq = runq

    def after_io_wait(self, timeout: float) -> None:
        # trio calls this once a pass, after the I/O wait that woke the pass's tasks into the queue
        loops = self.loops
        for task in self._runq:
            if task not in loops:
                self.others = True
                return
        self.others = False


_PASS_WATCH: trio.lowlevel.RunVar = trio.lowlevel.RunVar("anvilfs_pass_watch")


def pass_watch() -> PassWatch | None:
    """The run's PassWatch, installed on first use; None outside a trio run or if trio's run queue
    cannot be seen (then connections read ahead as the other rules allow)."""
    try:
        return _PASS_WATCH.get()
    except RuntimeError:  # not in a trio run: nothing to watch
        return None
    except LookupError:
        runq = _run_queue()
        watch = PassWatch(runq) if runq is not None else None
        if watch is not None:
            trio.lowlevel.add_instrument(watch)
        _PASS_WATCH.set(watch)
        return watch


class StreamTransport:
    """The ``*_nowait`` calls let the connection skip an await (a coroutine) when no wait is needed;
    a stream always needs one."""

    def __init__(self, stream: trio.abc.Stream):
        self.stream = stream

    def loop_began(self) -> None:
        """The connection's receive loop runs in the calling task from now until `loop_ended`."""

    def loop_ended(self) -> None:
        """The receive loop is over (the task may go on, closing the connection)."""

    def receive_nowait(self) -> bytes | None:
        """Bytes received without waiting, or None: then `receive`."""
        return None

    async def receive(self) -> bytes:
        return await self.stream.receive_some(RECEIVE_SIZE)

    def send_nowait(self, data: bytearray) -> int:
        """How many bytes of `data` went out without waiting; the rest go by `send_all`."""
        return 0

    async def send_all(self, data: bytes) -> None:
        await self.stream.send_all(data)

    async def aclose(self) -> None:
        await trio.aclose_forcefully(self.stream)


class SocketTransport(StreamTransport):
    def __init__(self, stream: trio.SocketStream):
        super().__init__(stream)
        self.fd = stream.socket.fileno()
        self._eager = 0  # reads in a row that found data without waiting
        self._runq = _run_queue()  # looked up once: the run (and its queue) outlives the connection
        self._watch = pass_watch()
        self._loop: trio.lowlevel.Task | None = None

    def loop_began(self) -> None:
        if self._watch is not None:
            self._loop = trio.lowlevel.current_task()
            self._watch.loops.add(self._loop)

    def loop_ended(self) -> None:
        if self._loop is not None:
            self._watch.loops.discard(self._loop)
            self._loop = None

    def receive_nowait(self) -> bytes | None:
        # Read first: after a reply, a client on the same CPU has usually sent
        # its next request already, and a read that finds it costs one system
        # call where a wait costs an epoll re-arm and a scheduler pass. Only
        # while no task waits for the next pass (a blocked read this client's
        # request woke), and only so many in a row, so that others are not
        # kept waiting for long.
        if self._eager >= EAGER_READS or (self._runq if self._runq is not None else _others_ready()):
            return None
        if self._watch is not None and self._watch.others:
            return None
        data = self._read_now()
        if data is not None:
            self._eager += 1
        return data

    async def receive(self) -> bytes:
        """Wait for the socket, then read (receive_nowait is the read that does not wait)."""
        self._eager = 0
        while True:
            await trio.lowlevel.wait_readable(self.fd)
            data = self._read_now()
            if data is not None:
                return data  # else woken without data: wait again

    def _read_now(self) -> bytes | None:
        """What the socket has (b"" at its end or on an error), or None if nothing yet."""
        try:
            return os.read(self.fd, RECEIVE_SIZE)
        except BlockingIOError:
            return None
        except OSError:
            return b""

    def send_nowait(self, data: bytearray) -> int:
        try:
            return os.write(self.fd, data)
        except BlockingIOError:
            return 0
        except OSError as exc:
            raise trio.BrokenResourceError(f"connection lost: {exc.strerror}") from exc

    async def send_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self.fd, view):]
            except BlockingIOError:
                await trio.lowlevel.wait_writable(self.fd)
            except OSError as exc:
                raise trio.BrokenResourceError(f"connection lost: {exc.strerror}") from exc


def transport_for(stream: trio.abc.Stream) -> StreamTransport:
    if isinstance(stream, trio.SocketStream):
        return SocketTransport(stream)
    return StreamTransport(stream)

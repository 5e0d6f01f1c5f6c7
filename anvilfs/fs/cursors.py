"""Cursors for the blocking files: what one open of `events`, `wait`, `stream` or `next` sees."""

from __future__ import annotations

from ..journal import Journal, timestamp
from ..sessions import Session, State, Turn
from ..sessions.owned import Owners

_ENDED = (State.STOPPED, State.EXITED)


class JournalCursor:
    """`events`: the lines appended after the open, as they come.

    Offsets are ignored (it is a stream); each read returns whole lines that
    fit, or blocks until there is one.
    """

    def __init__(self, journal: Journal):
        self._journal = journal
        self._seq = journal.next_seq

    def ready(self, offset: int) -> bool:
        return self._journal.next_seq > self._seq

    async def wait_ready(self, offset: int) -> None:
        await self._journal.wait_after(self._seq)

    def read(self, offset: int, count: int) -> bytes:
        lines, missed = self._journal.since(self._seq)
        out = bytearray()
        if missed:
            # a line like any other (TIME SESSION WHAT), so `read time who what` still works
            out += f"{timestamp()} - events-lost {missed} lines were dropped before this reader caught up\n".encode()[:count]
            self._seq += missed
        for line in lines:
            raw = line.encode()
            if out and len(out) + len(raw) > count:
                break
            out += raw[:count]  # a line longer than a whole read is cut, not split
            self._seq += 1
        return bytes(out)


class WaitCursor:
    """`wait`: a read at offset 0 blocks while the session is busy, then gives its state.

    Reads past 0 continue that answer, so `cat wait` prints one line and ends.
    """

    def __init__(self, session: Session):
        self._session = session
        self._answer = b""

    def ready(self, offset: int) -> bool:
        return offset > 0 or not self._session.busy

    async def wait_ready(self, offset: int) -> None:
        session = self._session
        while session.busy:
            await session.changes.wait_changed(session.changes.version)

    def read(self, offset: int, count: int) -> bytes:
        if offset == 0:
            self._answer = (self._session.state.value + "\n").encode()
        return self._answer[offset:offset + count]


class StreamCursor:
    """`stream`: the live output of the current turn (or else the next), then end of file.

    If the session ends before a turn comes, the read ends (end of file).
    """

    def __init__(self, session: Session):
        self._session = session
        current = session.turn
        self._turn: Turn | None = current if current is not None and not current.done else None
        self._wanted = session.turn_count + 1  # the next turn, if none is running now
        self._chunk = 0  # index of the next chunk of the turn to read
        self._byte = 0  # bytes of that chunk already read

    def _current(self) -> Turn | None:
        if self._turn is None:
            turn = self._session.turn
            if turn is not None and turn.number >= self._wanted:
                self._turn = turn
        return self._turn

    def ready(self, offset: int) -> bool:
        turn = self._current()
        if turn is None:
            return self._session.state in _ENDED
        return turn.done or len(turn.chunks) > self._chunk

    async def wait_ready(self, offset: int) -> None:
        while not self.ready(offset):
            turn = self._current()
            changes = turn.changes if turn is not None else self._session.changes
            await changes.wait_changed(changes.version)

    def read(self, offset: int, count: int) -> bytes:
        turn = self._current()
        if turn is None:
            return b""
        out = bytearray()
        while self._chunk < len(turn.chunks) and len(out) < count:
            raw = turn.chunks[self._chunk].encode()[self._byte:]
            take = raw[:count - len(out)]
            out += take
            if len(take) == len(raw):
                self._chunk, self._byte = self._chunk + 1, 0
            else:
                self._byte += len(take)
        return bytes(out)


class NextCursor:
    """`next` of an external session: a read at offset 0 blocks until there is a prompt for its owner.

    It gives the running turn's prompt (taken already), or else takes the
    oldest queued one, which begins its turn; the taking happens in
    ``read``, when the answer is about to be sent. Reads past 0 continue
    that answer. A session that ends (stopped, exited) ends the read: 0 bytes.
    """

    def __init__(self, owners: Owners, session: Session):
        self._owners = owners
        self._session = session
        self._answer = b""

    def ready(self, offset: int) -> bool:
        return offset > 0 or self._owners.can_take(self._session)

    async def wait_ready(self, offset: int) -> None:
        session = self._session
        while not self.ready(offset):
            await session.changes.wait_changed(session.changes.version)

    def read(self, offset: int, count: int) -> bytes:
        if offset == 0:
            prompt = self._owners.take(self._session.name) if self._session.state not in _ENDED else None
            self._answer = prompt.text.encode() if prompt is not None else b""
        return self._answer[offset:offset + count]

"""When each part of a session goes to the database, so that nothing answered is lost.

Every change is queued at once, as it happens, through the store (store.py):
the database's writer thread commits what is waiting as one transaction,
so a change costs the event loop no more than rendering its row. Who waits
for what: a request that made a change (a prompt, `new`, a ctl command, a
hook's word or answer) is answered only once every change it queued is
committed (server/dispatch.py collects them), and a prompt joins its
session's queue only then (`incoming` until it has). A turn's output and
its end, made by no request, are waited on by nobody: they reach the disk
with the next commit, in the order they came.

A change the disk refuses fails the request that made it (EIO); it stays
made in memory, and is saved again within a second, and at the session's
next change (each save writes the whole status). A transcript record the
disk refused is written again in its place (`n`). Without a store (tests),
nothing is written.
"""

from __future__ import annotations

import weakref

import trio

from ..journal import Journal, timestamp
from ..storage import DbCommit
from ..usage import Usage
from ..usage.ledger import Ledger, TurnRecord
from .session import Prompt, Session, Turn
from .store import SessionStore

RETRY_SECONDS = 1.0


class SessionSaver:
    def __init__(self, store: SessionStore | None, events: Journal):
        self.store = store
        self.events = events
        self._gone: weakref.WeakSet[Session] = weakref.WeakSet()  # removed (or refused): nothing written again
        self._outs: weakref.WeakKeyDictionary[Session, str] = weakref.WeakKeyDictionary()  # `out` as last saved
        self._unsaved: weakref.WeakSet[Session] = weakref.WeakSet()  # the last save failed: tried again
        self._unlogged: list[tuple[Session, int, str]] = []  # transcript records the disk refused
        self._unremoved: set[Session] = set()  # removals the disk refused (held: nothing else holds them)
        self._reported: dict[str, str] = {}  # what the events said failed, per thing saved: said once, till it is
        self._retry = trio.Event()
        self.ledger = Ledger()  # every turn's usage, summed (usage/ledger.py): counted here as turns end

    async def run(self) -> None:
        """Tries again what the disk refused, a second after it did, until it takes it."""
        while True:
            await self._retry.wait()
            self._retry = trio.Event()
            await trio.sleep(RETRY_SECONDS)
            for session in list(self._unsaved):
                self.changed(session)
            lines, self._unlogged = self._unlogged, []
            if lines:
                self._log(lines)
            for session in list(self._unremoved):
                self._remove(session)

    def add(self, session: Session) -> DbCommit | None:
        """A new session's row: the write that made it waits for it."""
        if self.store is None:
            return None
        self._outs[session] = session.out
        return self.store.add(session)

    def restored(self, session: Session) -> None:
        """A session read from the store: its `out` is the one saved."""
        self._outs[session] = session.out

    def changed(self, session: Session) -> None:
        """Save the session's status (and `out`, if it changed) and its prompts' states; a turn that ended is
        counted (the usage ledger), and its record saved with them until one save of it is on disk."""
        turn = session.turn
        if turn is not None and turn.done and turn.counted is None:
            turn.counted = TurnRecord(session=session.row, turn=turn.number, name=session.name, at=timestamp(),
                                      usage=turn.spent or Usage(), beads=frozenset(turn.beads),
                                      convoys=frozenset(turn.convoys))
            self.ledger.count(turn.counted)
        if self.store is None or session in self._gone:
            return
        out = self._outs.get(session) is not session.out
        self._outs[session] = session.out
        self._unsaved.discard(session)
        record = turn.counted if turn is not None and not turn.counted_saved else None
        commit = self.store.save(session, out=out, counted=record)
        commit.then(lambda error: self._saved(session, error, out, turn if record else None))

    def _saved(self, session: Session, error: OSError | None, out: bool, counted: Turn | None = None) -> None:
        if error is None:
            self._reported.pop(f"cannot save the state of {session.name}", None)  # the next refusal is said again
            if counted is not None:
                counted.counted_saved = True
        if error is None or session in self._gone:
            return
        if out:
            self._outs.pop(session, None)  # written again with the next save
        self._unsaved.add(session)
        self._failed(f"cannot save the state of {session.name}", error)

    def commit_prompt(self, session: Session, prompt: Prompt) -> DbCommit | None:
        """Put `prompt` in the session's incoming prompts and queue its row: a Commit done once it is on
        disk (None without a store: nothing to wait for, and nothing done). The prompts of many sessions
        that come together share one commit, and none waits for a turn's output in the loop."""
        if self.store is None:
            return None
        session.prompt_seq += 1
        prompt.seq = session.prompt_seq
        session.arriving(prompt)
        return self.store.add_prompt(session, prompt)

    def logged(self, session: Session, text: str) -> None:
        """A transcript record: nobody waits on it by itself; it is in the next commit."""
        if self.store is not None and session not in self._gone:
            self._log([(session, self.store.line_number(), text)])

    def _log(self, lines: list[tuple[Session, int, str]]) -> None:
        lines = [line for line in lines if line[0] not in self._gone]
        if lines:
            commit = self.store.log([(n, session.row, text) for session, n, text in lines])
            commit.then(lambda error: self._logs_failed(lines, error))

    def _logs_failed(self, lines: list[tuple[Session, int, str]], error: OSError | None) -> None:
        if error is not None:
            self._unlogged.extend(lines)
            self._failed(f"cannot save the transcript of {', '.join(sorted({s.name for s, _, _ in lines}))}", error)

    def remove(self, session: Session) -> str:
        """Mark a session removed (its rows stay as history); returns where they are ("" without a store)."""
        if self.store is None:
            return ""
        self.forget(session)
        self._remove(session)
        return self.store.where

    def _remove(self, session: Session) -> None:
        self._unremoved.discard(session)
        self.store.remove(session).then(lambda error: self._removal_failed(session, error))

    def _removal_failed(self, session: Session, error: OSError | None) -> None:
        if error is not None:
            self._unremoved.add(session)
            self._failed(f"cannot save the removal of {session.name}", error)

    def forget(self, session: Session) -> None:
        """Nothing of `session` is written any more (removed, or its `new` refused by the disk)."""
        self._gone.add(session)
        self._unsaved.discard(session)

    def _failed(self, what: str, error: OSError) -> None:
        """Report a save the disk refused (once per kind of failure); it is tried again in a second."""
        text = f"{what}: {error.strerror or error}"
        if self._reported.get(what) != text:
            self._reported[what] = text
            self.events.append(f"- state: {text}; will try again")
        self._retry.set()

"""When each part of a session is written to disk, so that nothing answered is lost.

What a request changes that must survive it is saved before it is answered
(new and the ctl commands at once, in the loop; a prompt in the prompt log,
an AppendLog whose own thread fdatasyncs it, which its write's answer waits
on, and the .toml later), and a turn's start is sealed in the queue ahead
of the turn's log lines (the prompt leaves the queue on disk only as the
turn's record). Everything else goes to the save
queue, rendered once the tasks that made the changes have run and written
by its worker thread, off the event loop: the log first, then `out`, then
the .toml, so the .toml never says a turn ended before its answer is on
disk. A save at once first writes what the queue holds of the session (and
what the thread has not written yet), so nothing older lands after it.
Without a store (tests), nothing is written.
"""

from __future__ import annotations

import weakref

import trio

from ..errors import AnvilError
from ..journal import Journal
from ..storage import Commit, SaveQueue
from .session import Prompt, Session
from .states import State
from .store import SessionStore, prompt_record, replayed_prompts

_LOG, _OUT, _STATE = 0, 1, 2  # save-queue stages


class SessionSaver:
    def __init__(self, store: SessionStore | None, events: Journal):
        self.store = store
        self.events = events
        self.queue = SaveQueue(on_error=self._failed, redo=store.redo if store is not None else None)
        # a full segment of the prompt log goes once the .tomls pending then (with its prompts) are on disk
        self.prompts = store.prompt_log(covered=self.queue.commit) if store is not None else None
        self._reported: dict = {}  # the last refusal reported per pending write
        self._refusals: list[OSError] | None = None  # during a save at once: what the disk said
        self._removed: weakref.WeakSet[Session] = weakref.WeakSet()  # nothing of these is written again

    async def run(self) -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self.prompts.run)
            nursery.start_soon(self.queue.run)

    def flush(self) -> None:
        """A clean stop: everything on disk, in place (no redo log left to replay)."""
        if self.prompts is not None:
            self.prompts.flush()  # first: a prompt that lands joins its .toml, which the queue writes next
        self.queue.flush()
        self.queue.checkpoint()

    def close(self) -> None:
        if self.prompts is not None:
            self.prompts.close()
            self.store.redo.close()

    def found_prompts(self) -> tuple[dict[tuple[str, str], list[Prompt]], list[str]]:
        """What the prompt log holds after a restart, by (session, conversation); and what is damaged."""
        records, damaged = self.prompts.records()
        found, unreadable = replayed_prompts(records)
        return found, damaged + unreadable

    def replayed(self, sessions: list[Session], *, retire: bool) -> None:
        """The sessions that took prompts from the log at a restart are saved, then the log read is deleted
        (if `retire`); if a save fails the log stays (applied again next time, harmlessly: the seqs tell)."""
        for session in sessions:
            self.save_now(session)
        if retire:
            self.prompts.retire()

    def save_now(self, session: Session) -> None:
        """Save at once, through the queue (its transcript and `out` first, and in the redo log, which a
        direct write of the .toml would overtake); raises AnvilError (EIO) if the disk refuses."""
        if self.store is None:
            return
        self._state_soon(session)
        refused: list[OSError] = []
        self._refusals = refused
        try:
            unwritten = self.queue.flush(_keys_of(session))
        finally:
            self._refusals = None
        if unwritten:
            why = refused[0] if refused else OSError("an earlier write to the state directory failed")
            raise AnvilError(f"cannot save session {session.name} in {self.store.dir}: {why.strerror or why}")

    def commit_prompt(self, session: Session, prompt: Prompt) -> Commit | None:
        """Put `prompt` in the session's incoming prompts and in the prompt log: a Commit done once it is
        on disk (None without a store: nothing to wait for, and nothing done).

        A prompt's write waits on one fdatasync of the log, not on the save queue's batch in flight
        (often the same session's ended turn) nor on an fsync in the event loop; the prompts of many
        sessions that come together share one. The .toml follows once it has landed (`landed`).
        """
        if self.store is None:
            return None
        session.prompt_seq += 1
        prompt.seq = session.prompt_seq
        session.incoming.append(prompt)
        return self.prompts.add(prompt_record(session, prompt))

    def landed(self, session: Session) -> None:
        """A prompt of the session landed in the log (or was refused): its .toml catches up soon."""
        if self.store is not None:
            self._state_soon(session)

    def changed(self, session: Session) -> None:
        """A change to save soon; a turn that just began is sealed, so it lands before the turn's log lines."""
        if self.store is None or session in self._removed:
            return
        self._state_soon(session)
        if session.turn is not None and session.turn.done:
            self.queue.replace((session, "out"), lambda: self.store.out_file(session), stage=_OUT)
        if session.state is State.RUNNING and session.turn is not None and not session.turn.done:
            # the .toml with the prompt as the turn in progress goes before the prompt's record in the
            # log: at every moment the prompt is in the .toml's queue, its turn, or the log
            self.queue.seal()

    def _state_soon(self, session: Session) -> None:
        """The .toml, rendered when the queue takes it: as the session is then."""
        if session in self._removed:
            return  # its files are in the history: a late change (a prompt landing) must not bring it back
        self.queue.replace((session, "state"), lambda: self.store.state_file(session), stage=_STATE)

    def logged(self, session: Session, text: str) -> None:
        """A transcript record: lazy, as nobody's write waits on it by itself. It is on disk before the
        next `out` or .toml lands (a turn's end or start), before a save at once of the session is
        answered, and within a second otherwise; a crash in the middle of a turn can lose the last of its
        output, never a prompt or an answer."""
        if self.store is not None and session not in self._removed:
            self.queue.append((session, "log"), self.store.files, self.store.log_name(session), text.encode(),
                              stage=_LOG, lazy=True)

    def remove(self, session: Session) -> str:
        """Move a session's files to the history; returns where (empty without a store)."""
        if self.store is None:
            return ""
        self.queue.flush(_keys_of(session))  # what is pending goes with it into the history
        try:
            where = self.store.remove(session)
        except OSError as exc:
            raise AnvilError(f"cannot move the files of session {session.name} out of {self.store.dir}: "
                             f"{exc.strerror or exc}; it was not removed") from None
        try:  # after the move, so that a crash before it keeps the session; a replay must not bring it back
            self.queue.gone(self.store.files, self.store.file_names(session))
        except OSError:  # else no record of the session's files may outlive the move: make them all durable
            self.queue.checkpoint()
        self.forget(session)
        return where

    def forget(self, session: Session) -> None:
        """Nothing of `session` is written any more (removed, or its `new` refused by the disk)."""
        for what in ("state", "log", "out"):
            self.queue.discard((session, what))
        self.queue.forget_lazy(_keys_of(session))  # a transcript tail the disk refused stays behind, not in a new NAME.log
        self._removed.add(session)

    def _failed(self, key, exc: OSError) -> None:
        """Report a background save the disk refused; it is retried every second, so say it once."""
        if self._refusals is not None:
            self._refusals.append(exc)
        owner, what = key
        if owner == "redo":
            text = f"cannot make the redo log's writes durable in place (a checkpoint): {exc.strerror or exc}"
        else:
            text = f"cannot save the {({'out': 'answer'}).get(what, what)} of {owner.name}: {exc.strerror or exc}"
        if self._reported.get(key) != text:
            self._reported[key] = text
            self.events.append(f"- state: {text}; will try again")


def _keys_of(session: Session):
    """Picks the save queue's keys of `session`: (session, "state" | "log" | "out")."""
    return lambda key: key[0] is session

"""Sessions on disk, so a server that stops, crashes or loses power loses nothing answered.

    STATE/sessions/NAME.toml   definition, status, queued prompts, the turn in progress, the agent's saved() data
    STATE/sessions/NAME.log    the transcript, appended as it grows
    STATE/sessions/NAME.out    the last answer
    STATE/prompts/NNNNNN.wal   the prompt log: each prompt, on disk before its write is answered
    STATE/redo/NNNNNN.redo     the save queue's redo log: the writes above not yet fsynced in place
    STATE/removed/NAME.TIME.*  the files of a session that was removed, kept as history

Every file goes through the storage module (anvilfs.storage): private
(0600 in a 0700 directory, no symbolic link followed), replaced atomically
or appended, and durable: through the redo log (storage/redolog.py), which a
restart replays before the files are read. What the manager decides is *when*: a prompt is
in the prompt log before its write is answered, and its session's .toml
follows in the background (`prompts` in it counts the prompts it has, so a
restart applies from the log what the .toml lacks, and nothing twice); at a
turn's start the .toml records the prompt as the turn in progress before
the prompt leaves the queue on disk. So at every instant an answered prompt
is in the prompt log, the queue or the turn record of the .toml, or in the
transcript.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass

from ..journal import timestamp
from ..storage import AppendLog, Commit, PrivateDir, RedoLog, Replace, tomlread, tomlwrite
from .session import Definition, Prompt, Session


_SUFFIXES = (".log", ".out", ".toml")  # a session's files, the .toml last (it holds the name)

@dataclass
class SavedSession:
    definition: Definition
    state: str
    detail: str
    turn_count: int
    restarts: int
    queue: list[Prompt]
    agent: dict
    out: str = ""
    log: str = ""
    role_pending: bool = False
    turn_prompt: Prompt | None = None  # the prompt of the turn in progress, if one was
    restart_pending: bool = False  # the old server was waiting to restart it after a crash
    turn_started: str = ""
    prompts: int = 0  # the seq of the last prompt this .toml has (or that was dropped before it)


class SessionStore:
    def __init__(self, state: PrivateDir):
        self.state = state
        self.files = state.subdir("sessions")
        self.dir = self.files.path
        self.prompt_dir = state.subdir("prompts")
        self.redo = RedoLog(state.subdir("redo"), {"sessions": self.files})
        self.recovered = self.redo.recover()  # before anything reads the files: a line per problem
        self._history: PrivateDir | None = None  # removed/, opened at the first removal
        # each session's [session] table as last rendered, with the Definition it was rendered from
        self._definitions: dict[str, tuple[Definition, tomlwrite.Rendered]] = {}

    def prompt_log(self, covered: Callable[[], Commit | None]) -> AppendLog:
        return AppendLog(self.prompt_dir, covered=covered)

    def state_file(self, session: Session) -> Replace:
        """The .toml as the session is now (rendered in the loop; written now, or later by the save queue)."""
        doc = {
            "session": self._session_table(session.definition),
            "status": {
                "state": session.state.value, "detail": session.detail, "turns": session.turn_count,
                "restarts": session.restarts, "role_pending": session.role_pending,
                "restart_pending": session.restart_pending, "prompts": _prompts_had(session),
            },
            "agent": session.agent.saved(),
        }
        turn = session.turn
        if turn is not None and not turn.done and turn.prompt is not None:
            doc["turn"] = {"number": turn.number, "started": turn.started, **_prompt(turn.prompt)}
        doc["queue"] = [_prompt(p) for p in session.queue]  # the incoming ones are in the prompt log
        text = tomlwrite.dumps(doc, comment="anvilfs session; rewritten by the server on every change")
        return Replace(self.files, f"{session.name}.toml", text.encode())

    def _session_table(self, definition: Definition) -> tomlwrite.Rendered:
        """The [session] table, rendered once per Definition: it is frozen, so a changed one is a new object."""
        kept = self._definitions.get(definition.name)
        if kept is None or kept[0] is not definition:
            kept = self._definitions[definition.name] = (definition, tomlwrite.rendered(asdict(definition)))
        return kept[1]

    def out_file(self, session: Session) -> Replace:
        return Replace(self.files, f"{session.name}.out", session.out.encode())

    def log_name(self, session: Session) -> str:
        return f"{session.name}.log"

    def file_names(self, session: Session) -> list[str]:
        return [f"{session.name}{suffix}" for suffix in _SUFFIXES]

    def remove(self, session: Session) -> str:
        """Move the session's files to `removed/NAME.TIME.*` (a history, never read back); returns where."""
        self._definitions.pop(session.name, None)
        if self._history is None:
            self._history = self.state.subdir("removed")
        history, stamp = self._history, timestamp().replace(":", "")
        for suffix in _SUFFIXES:  # the .toml last: while it is there, the name is taken
            # written without fsync (the redo log had them): durable before the move takes them from its reach
            self.files.sync_file(f"{session.name}{suffix}")
            self.files.move(f"{session.name}{suffix}", history, f"{session.name}.{stamp}{suffix}")
        return f"{history.path}/{session.name}.{stamp}.*"

    def has_files(self, name: str) -> bool:
        """Files of a session by this name (one that could not be read, or half removed) are here."""
        return any(self.files.exists(f"{name}{suffix}") for suffix in _SUFFIXES)

    def load_all(self) -> tuple[list[SavedSession], list[str]]:
        """The saved sessions, and a line for each file that could not be read."""
        sessions, problems = [], []
        for file in self.files.names(".toml"):
            try:
                sessions.append(self._load(file.removesuffix(".toml")))
            except Exception as exc:  # a damaged file must not stop the server
                problems.append(f"{self.dir}/{file}: cannot be read ({type(exc).__name__}: {exc}); left as it is")
        return sessions, problems

    def _load(self, name: str) -> SavedSession:
        data = tomlread.loads(self._text(f"{name}.toml"))
        status = data.get("status", {})
        turn = data.get("turn")
        return SavedSession(
            definition=Definition(**data["session"]),
            state=status.get("state", "exited"), detail=status.get("detail", ""),
            turn_count=status.get("turns", 0), restarts=status.get("restarts", 0),
            role_pending=status.get("role_pending", False), restart_pending=status.get("restart_pending", False),
            queue=[_from_toml(p) for p in data.get("queue", [])],
            agent=data.get("agent", {}),
            out=self._text(f"{name}.out"), log=self._text(f"{name}.log"),
            turn_prompt=_from_toml(turn) if turn else None, turn_started=turn.get("started", "") if turn else "",
            prompts=status.get("prompts", 0),
        )

    def _text(self, file: str) -> str:
        raw = self.files.read(file)
        return raw.decode("utf-8", errors="replace") if raw is not None else ""


def _prompts_had(session: Session) -> int:
    """The seq up to which the .toml has every prompt, or dropped it: all but those still on their way."""
    return session.incoming[0].seq - 1 if session.incoming else session.prompt_seq


def prompt_record(session: Session, prompt: Prompt) -> bytes:
    """A prompt's line in the prompt log: enough to queue it again after a crash, into this session only."""
    return json.dumps({"session": session.name, "conversation": session.definition.conversation, "seq": prompt.seq,
                       "sender": prompt.sender, "at": prompt.at, "text": prompt.text}, ensure_ascii=False).encode()


def replayed_prompts(records: list[bytes]) -> tuple[dict[tuple[str, str], list[Prompt]], list[str]]:
    """The prompt log's records by (session, conversation), each list in seq order, once each."""
    found: dict[tuple[str, str], dict[int, Prompt]] = {}
    problems = []
    for record in records:
        try:
            r = json.loads(record)
            key, prompt = (r["session"], r["conversation"]), Prompt(r["text"], r["sender"], r["at"], seq=int(r["seq"]))
        except (ValueError, KeyError, TypeError) as exc:
            problems.append(f"a prompt log record cannot be read ({type(exc).__name__}: {exc}); left out")
            continue
        found.setdefault(key, {})[prompt.seq] = prompt
    return {key: [by_seq[n] for n in sorted(by_seq)] for key, by_seq in found.items()}, problems


def _prompt(p: Prompt) -> dict:
    return {"sender": p.sender, "at": p.at, "text": p.text}


def _from_toml(p: dict) -> Prompt:
    return Prompt(p["text"], p["sender"], p.get("at", ""))

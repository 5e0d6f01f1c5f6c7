"""Sessions in the state's database (STATE/anvilfs.db), so a server that stops, crashes or loses power
loses nothing answered.

    sessions      a row per session ever made: its definition, status, the agent's saved() data, `out`;
                  a removed session keeps its row as history (`removed_at` set), and its name is free
    session_log   the transcript, a row per record, in the order they came (`n`)
    prompts       a row per prompt, whose `state` moves: queued -> turn (the turn in progress) ->
                  done, or dropped (a stop emptied the queue)

Every change goes through the database's writer thread (storage/database.py),
which commits whatever is waiting as one transaction: nothing here blocks or
flushes in the event loop. What the manager decides (saving.py) is *when*;
what is here is *what*: each change is one job, so what it says lands whole
or not at all. A session's save writes its status and moves its prompts in
the same job: at a turn's start the row says `running` and the prompt's row
says `turn` together, and at its end `await` and `done`; so at every
commit an answered prompt is queued, the turn in progress, or done (and in
the transcript). A prompt's row is written on its own before its write is
answered (the request waits for its commit: server/dispatch.py).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

from ..journal import timestamp
from ..storage import Database, DbCommit, PrivateDir
from ..usage.ledger import TurnRecord
from ..usage.ledger import insert as insert_usage
from .imported import import_files  # the one-shot import of a state directory of files (until the next release)
from .session import Definition, Prompt, Session
from .states import State

SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id INTEGER PRIMARY KEY, name TEXT NOT NULL, definition TEXT NOT NULL,
    state TEXT NOT NULL, detail TEXT NOT NULL DEFAULT '', turns INTEGER NOT NULL DEFAULT 0,
    restarts INTEGER NOT NULL DEFAULT 0, role_pending INTEGER NOT NULL DEFAULT 0,
    restart_pending INTEGER NOT NULL DEFAULT 0, turn_started TEXT NOT NULL DEFAULT '',
    agent TEXT NOT NULL DEFAULT '{}', out TEXT NOT NULL DEFAULT '', removed_at TEXT);
CREATE UNIQUE INDEX IF NOT EXISTS sessions_live ON sessions(name) WHERE removed_at IS NULL;
CREATE TABLE IF NOT EXISTS session_log (n INTEGER PRIMARY KEY, session INTEGER NOT NULL, text TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS session_log_of ON session_log(session, n);
CREATE TABLE IF NOT EXISTS prompts (
    session INTEGER NOT NULL, seq INTEGER NOT NULL, sender TEXT NOT NULL, at TEXT NOT NULL,
    text TEXT NOT NULL, state TEXT NOT NULL, PRIMARY KEY (session, seq)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS prompts_waiting ON prompts(session, seq) WHERE state IN ('queued', 'turn');
"""

_STATUS = ("state", "detail", "turns", "restarts", "role_pending", "restart_pending", "turn_started", "agent")
_UPDATE = f"UPDATE sessions SET {', '.join(f'{c} = ?' for c in _STATUS)} WHERE id = ?"
_UPDATE_OUT = f"UPDATE sessions SET {', '.join(f'{c} = ?' for c in _STATUS)}, out = ? WHERE id = ?"
# a session's prompts as its save sees them: the turn's, those it still holds (queued, or on their way in:
# their rows come first, in the writer's order), and the rest, which a turn took or a stop dropped
_PROMPTS = """UPDATE prompts SET state = CASE WHEN seq = :turn THEN 'turn'
    WHEN seq IN (SELECT value FROM json_each(:held)) THEN 'queued' WHEN state = 'turn' THEN 'done' ELSE 'dropped' END
    WHERE session = :session AND state IN ('queued', 'turn')"""


@dataclass
class SavedSession:
    """A session as its rows have it, for restore.py."""

    row: int
    definition: Definition
    state: str
    detail: str = ""
    turn_count: int = 0
    restarts: int = 0
    queue: list[Prompt] = field(default_factory=list)
    agent: dict = field(default_factory=dict)
    out: str = ""
    log: str = ""
    role_pending: bool = False
    turn_prompt: Prompt | None = None  # the prompt of the turn in progress, if one was
    restart_pending: bool = False  # the old server was waiting to restart it after a crash
    turn_started: str = ""  # when the turn in progress began ("" if none was)
    prompts: int = 0  # the seq of its last prompt


class SessionStore:
    """The sessions' tables: each method queues one job and returns its Commit (never blocks)."""

    def __init__(self, db: Database, state: PrivateDir | None = None):
        self.db = db
        self.recovered = import_files(state, db) if state is not None else []  # a line per problem
        self.unreadable: set[str] = set()  # names of rows restore could not read: not given again
        top = db.read("SELECT max(id) FROM sessions UNION ALL SELECT max(session) FROM session_log "
                      "UNION ALL SELECT max(session) FROM prompts")
        self._rows = itertools.count(max((r[0] or 0 for r in top), default=0) + 1)
        self._lines = itertools.count((db.read("SELECT max(n) FROM session_log")[0][0] or 0) + 1)

    @property
    def where(self) -> str:
        return self.db.path

    # ------------------------------------------------------------ writing

    def add(self, session: Session) -> DbCommit:
        """A new session's row (its name must be free among the live ones)."""
        session.row = next(self._rows)
        values = (session.row, session.name, json.dumps(asdict(session.definition)), *_status(session), session.out)
        return self.db.execute(f"INSERT INTO sessions (id, name, definition, {', '.join(_STATUS)}, out) "
                               f"VALUES ({', '.join('?' * len(values))})", values)

    def save(self, session: Session, *, out: bool, counted: TurnRecord | None = None) -> DbCommit:
        """The session's status (and `out`, if it changed) with its prompts' states, and the usage of the
        turn that ended (`counted`, usage/ledger.py), in one job."""
        status = (*_status(session), *((session.out,) if out else ()), session.row)
        turn = session.turn
        running = turn.prompt.seq if session.state is State.RUNNING and turn and not turn.done and turn.prompt else -1
        held = json.dumps([p.seq for p in (*session.queue, *session.incoming)])

        def work(conn) -> None:
            conn.execute(_UPDATE_OUT if out else _UPDATE, status)
            conn.execute(_PROMPTS, {"turn": running, "held": held, "session": status[-1]})
            if counted is not None:
                insert_usage(conn, counted)

        return self.db.call(work)

    def add_prompt(self, session: Session, prompt: Prompt) -> DbCommit:
        return self.db.execute("INSERT INTO prompts (session, seq, sender, at, text, state) VALUES (?, ?, ?, ?, ?, "
                               "'queued')", (session.row, prompt.seq, prompt.sender, prompt.at, prompt.text))

    def log(self, lines: Iterable[tuple[int, int, str]]) -> DbCommit:
        """Transcript records: (n, session row, text); `n` keeps their order, and makes a retry harmless."""
        return self.db.executemany("INSERT OR REPLACE INTO session_log (n, session, text) VALUES (?, ?, ?)", lines)

    def line_number(self) -> int:
        return next(self._lines)

    def remove(self, session: Session) -> DbCommit:
        """The row stays as history; its name is free, and its queue dropped."""
        row = session.row

        def work(conn) -> None:
            conn.execute("UPDATE sessions SET removed_at = ? WHERE id = ?", (timestamp(), row))
            conn.execute("UPDATE prompts SET state = 'dropped' WHERE session = ? AND state IN ('queued', 'turn')",
                         (row,))

        return self.db.call(work)

    def rename(self, row: int, definition: Definition) -> DbCommit:
        """A live session's new name (its definition's): its transcript and prompts are keyed by its row."""
        return self.db.execute("UPDATE sessions SET name = ?, definition = ? WHERE id = ?",
                               (definition.name, json.dumps(asdict(definition)), row))

    # ------------------------------------------------------------ reading (at start)

    def load_all(self) -> tuple[list[SavedSession], list[str]]:
        """The live sessions, and a line for each row that could not be read (its name stays taken)."""
        db, found, problems = self.db, {}, []
        for row in db.rows("SELECT id, name, definition, state, detail, turns, restarts, role_pending, "
                           "restart_pending, turn_started, agent, out FROM sessions WHERE removed_at IS NULL "
                           "ORDER BY id"):
            try:
                found[row[0]] = _saved(row)
            except (ValueError, TypeError, KeyError) as exc:  # a damaged row must not stop the server
                self.unreadable.add(row[1])
                problems.append(f"session {row[1]} (row {row[0]} of {db.path}) cannot be read "
                                f"({type(exc).__name__}: {exc}); left as it is, and its name is not given again")
        for session, seq, sender, at, text, state in db.rows(
                "SELECT session, seq, sender, at, text, state FROM prompts WHERE state IN ('queued', 'turn') "
                "ORDER BY session, seq"):
            if (saved := found.get(session)) is not None:
                prompt = Prompt(text, sender, at, seq=seq)
                if state == "turn":
                    saved.turn_prompt = prompt
                else:
                    saved.queue.append(prompt)
        for saved in found.values():
            saved.prompts = db.read("SELECT max(seq) FROM prompts WHERE session = ?", (saved.row,))[0][0] or 0
        logs: dict[int, list[str]] = {}
        for session, text in db.rows("SELECT l.session, l.text FROM sessions s JOIN session_log l ON l.session = s.id "
                                     "WHERE s.removed_at IS NULL ORDER BY l.session, l.n"):
            logs.setdefault(session, []).append(text)
        for row, saved in found.items():
            saved.log = "".join(logs.get(row, ()))
        return list(found.values()), problems


def _status(session: Session) -> tuple:
    turn = session.turn
    started = turn.started if session.state is State.RUNNING and turn is not None and not turn.done else ""
    return (session.state.value, session.detail, session.turn_count, session.restarts, int(session.role_pending),
            int(session.restart_pending), started, json.dumps(session.agent.saved()))


def _saved(row: tuple) -> SavedSession:
    (number, _, definition, state, detail, turns, restarts, role_pending, restart_pending, started, agent,
     out) = row
    State(state)  # a state this server knows, or ValueError
    return SavedSession(row=number, definition=Definition(**json.loads(definition)), state=state, detail=detail,
                        turn_count=turns, restarts=restarts, agent=json.loads(agent), out=out,
                        role_pending=bool(role_pending), restart_pending=bool(restart_pending), turn_started=started)

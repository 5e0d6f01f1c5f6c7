"""The one-shot import of sessions kept in files (anvilfs up to 0dec9af) into the database, at start.

    STATE/sessions/NAME.{toml,log,out}   a session: a row, its transcript, its queued prompts
    STATE/redo/NNNNNN.redo               the writes to those files a SIGKILL or a power cut kept out of them
    STATE/prompts/NNNNNN.wal             prompts answered that their session's .toml did not have yet
    STATE/removed/NAME.TIME.*            removed sessions: rows with `removed_at` set (history)

One-way, and safe to cut short: everything read goes into the database in
one transaction, with a `meta` row that says the import was done; only then
do those directories (of removed/, only the sessions' files: mail keeps
mailboxes there) move to STATE/imported/TIME/ (kept for a person; the
server never reads them again). A crash before the commit leaves the files
as they were, imported again at the next start; a crash after it leaves the
meta row, and the next start only moves what is left. Nothing is written to
the files, nor deleted. Kept for one release (docs/using.md).

The logs are read here and only here, in the formats that code wrote: lines
of `CRC32 (8 hex digits) SP record`; a torn or damaged line ends a log (a
crash in the middle of a write: never answered).
"""

from __future__ import annotations

import base64
import binascii
import json
import tomllib
import zlib
from dataclasses import asdict

from ..journal import timestamp
from ..storage import Database, PrivateDir
from ..storage.private import move_aside
from .session import Definition

OLD_DIRS = ("sessions", "redo", "prompts", "removed")
DONE = "sessions imported"  # the meta row's key


def import_files(state: PrivateDir, db: Database) -> list[str]:
    """Import a state directory's session files, once; a line per problem (for the events at start)."""
    dirs = [name for name in OLD_DIRS[:3] if state.exists(name)]
    removed = _removed_files(state)
    if not dirs and not removed:
        return []
    problems: list[str] = []
    if not db.read("SELECT 1 FROM meta WHERE key = ?", (DONE,)):
        rows = _read_all(state, problems)
        db.call(lambda conn: _insert(conn, rows, problems), barrier=True).wait_blocking()
    moved = db.call(lambda conn: _move_away(state, dirs, removed), barrier=True)
    moved.wait_blocking()
    return problems + [f"sessions imported from the files of an older anvilfs; those are kept in {moved.result}"]


def _removed_files(state: PrivateDir) -> list[str]:
    """The files of removed sessions in removed/ (NAME.TIME.toml, .log, .out; mail keeps mailboxes there too)."""
    if not state.exists("removed"):
        return []
    return [name for name in state.subdir("removed").names() if name.rsplit(".", 1)[-1] in ("toml", "log", "out")]


def _move_away(state: PrivateDir, dirs: list[str], removed: list[str]) -> str:
    """In the writer thread (moves fsync): the old directories, and removed sessions' files, out of the way
    into STATE/imported/TIME/, as mail's import does; returns where."""
    where = move_aside(state, dirs + [f"removed/{name}" for name in removed])
    if removed:
        state.remove_empty_dir("removed")  # unless mail's removed mailboxes are there too
    return where


def _read_all(state: PrivateDir, problems: list[str]) -> dict:
    files = _replayed(state, problems)
    live = {}
    for file in sorted(files):
        if file.endswith(".toml"):
            name = file.removesuffix(".toml")
            try:
                live[name] = _session(files, name)
            except Exception as exc:  # a damaged file must not stop the server: said, and kept
                problems.append(f"{state.path}/sessions/{file} cannot be read ({type(exc).__name__}: {exc}); not "
                                f"imported (kept in {state.path}/imported/, with the other files)")
    _add_logged_prompts(state, live, problems)
    removed = []
    for file in (f for f in _removed_files(state) if f.endswith(".toml")):
        stem = file.removesuffix(".toml")
        name, _, when = stem.rpartition(".")
        try:
            old = {f"{name}{suffix}": state.subdir("removed").read(f"{stem}{suffix}") or b""
                   for suffix in (".toml", ".log", ".out")}
            removed.append((_session(old, name), _iso(when)))
        except Exception as exc:
            problems.append(f"{state.path}/removed/{file} cannot be read ({type(exc).__name__}: {exc}); not imported")
    return {"live": list(live.values()), "removed": removed}


def _session(files: dict[str, bytes], name: str) -> dict:
    data = tomllib.loads(files[f"{name}.toml"].decode())
    definition = Definition(**data["session"])
    status, turn = data.get("status", {}), data.get("turn")
    prompts = [_prompt(p) for p in ([turn] if turn else []) + data.get("queue", [])]
    had = max(int(status.get("prompts", 0)), len(prompts))
    for seq, prompt in enumerate(prompts, had - len(prompts) + 1):  # they were the last ones it had
        prompt["seq"] = seq
    if turn:
        prompts[0]["state"] = "turn"
    return {
        "name": name, "definition": json.dumps(asdict(definition)), "conversation": definition.conversation,
        "state": status.get("state", "exited"), "detail": status.get("detail", ""),
        "turns": status.get("turns", 0), "restarts": status.get("restarts", 0),
        "role_pending": int(status.get("role_pending", False)),
        "restart_pending": int(status.get("restart_pending", False)),
        "turn_started": turn.get("started", "") if turn else "", "agent": json.dumps(data.get("agent", {})),
        "out": _text(files.get(f"{name}.out")), "log": _text(files.get(f"{name}.log")),
        "prompts": prompts, "had": had,
    }


def _prompt(p: dict, state: str = "queued") -> dict:
    return {"text": p["text"], "sender": p["sender"], "at": p.get("at", ""), "state": state}


def _add_logged_prompts(state: PrivateDir, live: dict[str, dict], problems: list[str]) -> None:
    """The prompt log's prompts past what their session's .toml had (matched on name and conversation)."""
    if not state.exists("prompts"):
        return
    logged: dict[tuple[str, str], dict[int, dict]] = {}
    log = state.subdir("prompts")
    for segment in sorted(log.names(".wal"), key=_number):
        for record in _records(log, segment, problems):
            try:
                r = json.loads(record)
                logged.setdefault((r["session"], r["conversation"]), {})[int(r["seq"])] = _prompt(r)
            except (ValueError, KeyError, TypeError) as exc:
                problems.append(f"a prompt log record cannot be read ({type(exc).__name__}: {exc}); left out")
    for session in live.values():
        for seq, prompt in sorted(logged.get((session["name"], session["conversation"]), {}).items()):
            if seq > session["had"]:
                prompt["seq"] = seq
                session["prompts"].append(prompt)


def _replayed(state: PrivateDir, problems: list[str]) -> dict[str, bytes]:
    """sessions/'s files, with the redo log's writes done on them, in memory (the files stay as they are)."""
    files: dict[str, bytes] = {}
    if state.exists("sessions"):
        old = state.subdir("sessions")
        for name in old.names():
            try:
                files[name] = old.read(name) or b""
            except OSError as exc:  # a symbolic link planted there is not followed: said, and left out
                problems.append(f"{old.path}/{name} cannot be read ({exc}); not imported")
    if not state.exists("redo"):
        return files
    redo, ends = state.subdir("redo"), {}
    for segment in sorted(redo.names(".redo"), key=_number):
        for record in _records(redo, segment, problems):
            try:
                for op in json.loads(record):
                    _redo(files, ends, op)
            except (ValueError, IndexError, TypeError, binascii.Error) as exc:
                problems.append(f"{redo.path}/{segment}: a record cannot be read ({exc}); the rest is left out")
                break
    for name, end in ends.items():  # past its last append, what a power cut left was never made durable
        files[name] = files[name][:end]
    return files


def _redo(files: dict[str, bytes], ends: dict[str, int], op: list) -> None:
    """One write of the redo log: a file replaced ("p"), written at an offset ("a") or removed ("g")."""
    kind, name = op[0], op[2]
    if kind == "p":
        files[name] = base64.b64decode(op[3], validate=True)
        ends.pop(name, None)
    elif kind == "a":
        offset, data = int(op[3]), base64.b64decode(op[4], validate=True)
        files[name] = files.get(name, b"")[:offset].ljust(offset, b"\0") + data
        ends[name] = offset + len(data)
    elif kind == "g":
        files.pop(name, None)
        ends.pop(name, None)
    else:
        raise ValueError(f"unknown kind of write {kind!r}")


def _records(dir: PrivateDir, segment: str, problems: list[str]) -> list[bytes]:
    """The records of a log segment up to its first torn or damaged line."""
    records = []
    for i, line in enumerate((dir.read(segment) or b"").split(b"\n"), 1):
        if not line:
            continue
        crc, _, record = line.partition(b" ")
        if len(crc) != 8 or not all(c in b"0123456789abcdef" for c in crc) or int(crc, 16) != zlib.crc32(record):
            problems.append(f"{dir.path}/{segment}: line {i} is torn or damaged; what follows it is left out")
            break
        records.append(record)
    return records


def _insert(conn, rows: dict, problems: list[str]) -> None:
    """Every row in the one transaction of the import, with the meta row that says it is done. A live
    session whose name a session of the database has (old files put back on a state begun without them)
    is kept as removed: history, not a second session of that name."""
    top = conn.execute("SELECT max(id) FROM sessions").fetchone()[0] or 0
    taken = {name for (name,) in conn.execute("SELECT name FROM sessions WHERE removed_at IS NULL")}
    now = timestamp()
    for session in rows["live"]:
        if session["name"] in taken:
            problems.append(f"the old files' session {session['name']} was not imported as live: the database has "
                            f"a session of that name; kept as removed at {now}")
    imported = [(s, now if s["name"] in taken else None) for s in rows["live"]] + rows["removed"]
    for number, (session, removed_at) in enumerate(imported, top + 1):
        conn.execute("INSERT INTO sessions (id, name, definition, state, detail, turns, restarts, role_pending, "
                     "restart_pending, turn_started, agent, out, removed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                     "?, ?)", (number, *(session[k] for k in _COLUMNS), removed_at))
        conn.executemany("INSERT INTO prompts (session, seq, sender, at, text, state) VALUES (?, ?, ?, ?, ?, ?)",
                         [(number, p["seq"], p["sender"], p["at"], p["text"],
                           p["state"] if removed_at is None else "dropped") for p in session["prompts"]])
        if session["log"]:
            conn.execute("INSERT INTO session_log (session, text) VALUES (?, ?)", (number, session["log"]))
    conn.execute("INSERT INTO meta (key, value) VALUES (?, ?)", (DONE, timestamp()))


_COLUMNS = ("name", "definition", "state", "detail", "turns", "restarts", "role_pending", "restart_pending",
            "turn_started", "agent", "out")


def _text(raw: bytes | None) -> str:
    return raw.decode("utf-8", errors="replace") if raw else ""


def _iso(when: str) -> str:
    """removed/'s stamp (2026-12-06T073441Z) as a time (2026-12-06T07:34:41Z)."""
    day, _, clock = when.partition("T")
    return f"{day}T{clock[0:2]}:{clock[2:4]}:{clock[4:]}" if len(clock) == 7 else when


def _number(name: str) -> int:
    stem = name.split(".", 1)[0]
    return int(stem) if stem.isdigit() else 0

"""The one-way import of mail kept as files by an earlier anvilfs into the database (kept for one release).

    STATE/mail/<participant>/inbox|done/<id>.json   -> mail rows (inbox or done)
    STATE/mail/approvals/<id>.json                  -> approvals rows (where requests were kept before that)
    STATE/approvals/<id>.json                       -> approvals rows (the answer too, if one was recorded)
    STATE/approvals/answered/<id>.json              -> approvals rows kept with their answer
    STATE/removed/<session>.<TIME>.mail/            -> mail rows marked removed at TIME

At start, before anything is served: everything is read and inserted in
one transaction (INSERT OR IGNORE: what the database holds already wins),
and only once that is committed are the directories moved to
STATE/imported/<TIME>/. A crash before the commit leaves the files as they
were (imported again at the next start); a crash after it leaves some
directories to move, whose rows are in the database already (imported
again, nothing changes). A message's bytes are kept as they were on disk,
so done/ reads give what was written.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3

from ..faults import kill_point
from ..storage.database import Database
from ..storage.private import PrivateDir, move_aside

_REMOVED = re.compile(r"(?P<who>.+)\.(?P<time>[^.]+)\.mail\Z")
_BASIC_TIME = re.compile(r"(\d{4}-\d\d-\d\dT\d\d)(\d\d)(\d\d)Z\Z")  # how a removed mailbox's name gave its time


def import_mail_files(state: PrivateDir, db: Database, timeout: float = 600.0) -> tuple[str, list[str]]:
    """Import whatever mail an earlier anvilfs left in `state` as files: where the files went ("" if there
    were none), and a line for each thing not imported. Both steps run in the writer thread (no fsync here)."""
    sources = _sources(state.path)
    if not sources:
        return "", []
    problems: list[str] = []
    db.call(lambda conn: _insert(conn, state, sources, problems), barrier=True).wait_blocking(timeout)
    moved = db.call(lambda conn: move_aside(state, sources, lambda: kill_point("mail-import-move")), barrier=True)
    moved.wait_blocking(timeout)
    return moved.result, problems


def _sources(root: str) -> list[str]:
    """The paths (relative to the state directory) an earlier anvilfs kept mail in."""
    found = [name for name in ("mail", "approvals") if os.path.isdir(os.path.join(root, name))]
    removed = os.path.join(root, "removed")
    if os.path.isdir(removed):
        found += [f"removed/{n}" for n in sorted(os.listdir(removed))
                  if _REMOVED.match(n) and os.path.isdir(os.path.join(removed, n))]
    return found


def _insert(conn: sqlite3.Connection, state: PrivateDir, sources: list[str], problems: list[str]) -> None:
    for source in sources:
        where = state.subpath(source)
        if source == "mail":
            for who in _subdirs(where):
                _mailbox(conn, where.subpath(who), who, None)
                if who == "approvals":  # before STATE/approvals/, the records were kept here
                    _records(conn, where.subpath(who), kept=False, problems=problems)
        elif source == "approvals":
            _records(conn, where, kept=False, problems=problems)
            if "answered" in _subdirs(where):
                _records(conn, where.subpath("answered"), kept=True, problems=problems)
        else:
            match = _REMOVED.match(source.removeprefix("removed/"))
            time = _BASIC_TIME.sub(r"\1:\2:\3Z", match["time"])
            _mailbox(conn, where, match["who"], time)
    kill_point("mail-import")


def _mailbox(conn: sqlite3.Connection, where: PrivateDir, who: str, removed: str | None) -> None:
    for box in ("inbox", "done"):
        if box not in _subdirs(where):
            continue
        files = where.subpath(box)
        conn.executemany("INSERT OR IGNORE INTO mail (id, participant, box, json, removed) VALUES (?, ?, ?, ?, ?)",
                         [(name.removesuffix(".json"), who, box, files.read(name), removed)
                          for name in files.names(".json")])


def _records(conn: sqlite3.Connection, where: PrivateDir, *, kept: bool, problems: list[str]) -> None:
    for name in where.names(".json"):
        try:
            doc = json.loads(where.read(name))
            request, answer = doc["request"], doc.get("answer")
            row = (str(request["id"]), _dumped(request), _dumped(answer) if answer else None, int(kept))
        except Exception as exc:  # a damaged record: reported, kept with the moved files
            problems.append(f"{where.path}/{name} cannot be read ({type(exc).__name__}: {exc}): not imported")
            continue
        conn.execute("INSERT OR IGNORE INTO approvals (id, request, answer, kept) VALUES (?, ?, ?, ?)", row)


def _dumped(doc: dict) -> bytes:
    return json.dumps(doc, ensure_ascii=False).encode()


def _subdirs(where: PrivateDir) -> list[str]:
    return sorted(n for n in os.listdir(where.path) if os.path.isdir(os.path.join(where.path, n)))

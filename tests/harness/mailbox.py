"""Mail over a real server's socket for tests: a message sent as the CLI sends it."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

from anvilfs.client import Client
from anvilfs.client.mailcmds import send
from anvilfs.ninep import Dialect

from .server import AnvilServer, anvil_server


@contextmanager
def server_with_dev() -> Iterator[AnvilServer]:
    """A server with one sim session `dev`: a participant of the mail besides human."""
    with anvil_server(trace=False) as server:
        with server.connect(dialect=Dialect.P2000U) as client:
            client.write_file("ctl", b"new sim /tmp name=dev\n")
        yield server


def mail(client: Client, sender: str, to: str, subject: str, body: str = "", kind: str = "QUERY_REQUEST") -> str:
    """Send one message from SENDER's mail file (mailcmds.send, as `anvilfs mail` does); its id."""
    return send(client, "", sender, {"to": to, "type": kind, "subject": subject, "body": body})


def stored(state: Path, sql: str, params: tuple = ()) -> list[tuple]:
    """Rows of the server's database (STATE/anvilfs.db) as its last commit left them, read beside the server
    (or a change made beside it: a row damaged on disk, committed at once)."""
    with closing(sqlite3.connect(state / "anvilfs.db", timeout=30)) as db, db:
        return db.execute(sql, params).fetchall()

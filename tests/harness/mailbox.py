"""Mail over a real server's socket for tests: a connection, and a message sent as the CLI sends it."""

from __future__ import annotations

import socket

from anvilfs.client import Client
from anvilfs.client.mailcmds import send
from anvilfs.ninep import Dialect

from .server import AnvilServer


def connect(srv: AnvilServer, uname: str = "tester", dialect: Dialect = Dialect.P2000U) -> Client:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(30)  # a server that stops answering fails the test instead of hanging it
    sock.connect(str(srv.socket))
    return Client(sock, uname=uname, dialect=dialect)


def mail(client: Client, sender: str, to: str, subject: str, body: str = "", kind: str = "QUERY_REQUEST") -> str:
    """Send one message from SENDER's mail file (mailcmds.send, as `anvilfs mail` does); its id."""
    return send(client, "", sender, {"to": to, "type": kind, "subject": subject, "body": body})

"""Mail over a real server's socket for tests: a message sent as the CLI sends it."""

from __future__ import annotations

from anvilfs.client import Client
from anvilfs.client.mailcmds import send


def mail(client: Client, sender: str, to: str, subject: str, body: str = "", kind: str = "QUERY_REQUEST") -> str:
    """Send one message from SENDER's mail file (mailcmds.send, as `anvilfs mail` does); its id."""
    return send(client, "", sender, {"to": to, "type": kind, "subject": subject, "body": body})

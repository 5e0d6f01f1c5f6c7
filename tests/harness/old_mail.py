"""Mail as anvilfs kept it in files before STATE/anvilfs.db (main at 0dec9af, anvilfs/mail/files.py): a
state directory of that layout, written byte for byte as that code wrote it, for the importer's tests.

    STATE/mail/<participant>/inbox/<id>.json   Message.to_json()
    STATE/mail/<participant>/done/<id>.json    the same file, renamed there by an ack
    STATE/approvals/<id>.json                  json.dumps({"request": {...}, "answer": {...}}) (answer once answered)
    STATE/approvals/answered/<id>.json         the same, moved there when no inbox took the answer
    STATE/mail/approvals/<id>.json             where the records were kept before STATE/approvals/
    STATE/removed/<session>.<TIME>.mail/       a removed session's mailbox (TIME without colons)

Directories 0700, files 0600, as PrivateDir made them. (Checked against that code's MailFiles: the
same paths, modes and bytes.) old_server() runs that commit's own server, for a state it made itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from anvilfs.mail import Draft, Message, MessageType

from .server import REPO_ROOT, AnvilServer
from .vm import wait_for_unix_socket


def message(ident: int, sender: str, to: str, subject: str, kind: MessageType = MessageType.QUERY_REQUEST, *,
            body: str = "", re: str | None = None, bead: str | None = None) -> Message:
    draft = Draft(to=to, type=kind, subject=subject, body=body, re=re, bead=bead)
    return Message.of(draft, id=f"{ident:016d}", sender=sender, timestamp="2026-12-05T10:00:00Z")


class OldMailFiles:
    def __init__(self, state: Path):
        self.state = state
        state.mkdir(mode=0o700, parents=True, exist_ok=True)

    def _write(self, path: Path, data: bytes) -> None:
        for parent in reversed([p for p in path.parents if p != self.state and self.state in p.parents]):
            parent.mkdir(mode=0o700, exist_ok=True)
        path.write_bytes(data)
        path.chmod(0o600)

    def deliver(self, msg: Message) -> None:
        self._write(self.state / "mail" / msg.to / "inbox" / f"{msg.id}.json", msg.to_json())

    def ack(self, who: str, ident: str) -> None:
        done = self.state / "mail" / who / "done"
        done.mkdir(mode=0o700, exist_ok=True)
        os.rename(self.state / "mail" / who / "inbox" / f"{ident}.json", done / f"{ident}.json")

    def wait_for_answer(self, request: Message, answer: Message | None = None, *, where: str = "approvals") -> None:
        """A waiting request's record (with `answer`: answered, the answer not yet delivered); `where` is
        "mail/approvals" for the layout before that."""
        doc = {"request": json.loads(request.to_json())}
        if answer is not None:
            doc["answer"] = json.loads(answer.to_json())
        self._write(self.state / where / f"{request.id}.json", json.dumps(doc).encode())

    def answered(self, request_id: str, *, keep: bool = False) -> None:
        record = self.state / "approvals" / f"{request_id}.json"
        if keep:
            (self.state / "approvals" / "answered").mkdir(mode=0o700, exist_ok=True)
            os.rename(record, self.state / "approvals" / "answered" / record.name)
        else:
            record.unlink()

    def retire(self, who: str, stamp: str = "2026-12-05T110000Z") -> Path:
        (self.state / "removed").mkdir(mode=0o700, exist_ok=True)
        where = self.state / "removed" / f"{who}.{stamp}.mail"
        os.rename(self.state / "mail" / who, where)
        return where

    def put_raw(self, who: str, box: str, name: str, data: bytes) -> None:
        """A file damaged on disk (what no anvilfs wrote, but a disk may leave)."""
        self._write(self.state / "mail" / who / box / name, data)


OLD_COMMIT = "0dec9af"  # main before STATE/anvilfs.db


def old_code(into: Path) -> Path | None:
    """The anvilfs package of OLD_COMMIT, extracted under `into` (None if this checkout does not have it)."""
    archive = subprocess.run(["git", "-C", str(REPO_ROOT), "archive", OLD_COMMIT, "anvilfs"], capture_output=True)
    if archive.returncode != 0:
        return None
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def old_server(code: Path, base: Path) -> AnvilServer:
    """`anvilfs serve` of that code on base/state, as start_server starts today's (its socket in base/ns)."""
    env = os.environ | {"XDG_CONFIG_HOME": str(base / "xdg-config"), "PYTHONPATH": str(code)}
    trace = base / "old-server.trace"
    with open(trace, "ab") as err:  # cwd: `python -m` finds the old package first
        proc = subprocess.Popen([sys.executable, "-m", "anvilfs", "serve", "--namespace", str(base / "ns"),
                                 "--state", str(base / "state")], cwd=code, env=env, stdin=subprocess.DEVNULL,
                                stdout=err, stderr=err)
    srv = AnvilServer(proc, base, base / "ns", base / "state", trace)
    wait_for_unix_socket(srv.socket, timeout=20, proc=proc)
    return srv

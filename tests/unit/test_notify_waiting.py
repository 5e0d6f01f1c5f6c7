"""notify's first look at what waits in human's inbox (client/mailcmds.py), against a stand-in client."""

from __future__ import annotations

import json
from types import SimpleNamespace

from anvilfs.client import ServerError
from anvilfs.client import mailcmds


class Inbox:
    """human/inbox as a client sees it: a listing, then reads; `gone` were acknowledged in between."""

    def __init__(self, messages: dict[str, dict], gone: set[str] = frozenset(), approvals: str = "") -> None:
        self.messages, self.gone, self.approvals = messages, gone, approvals

    def list_dir(self, path: str) -> list:
        return [SimpleNamespace(name=f"{ident}.json") for ident in self.messages]

    def read_file(self, path: str) -> bytes:
        if path.endswith("approvals"):
            return self.approvals.encode()
        ident = path.rsplit("/", 1)[-1].removesuffix(".json")
        if ident in self.gone:
            raise ServerError(f"'{ident}.json' does not exist")
        return json.dumps(self.messages[ident]).encode()


def message(ident: str, kind: str, subject: str) -> dict:
    return {"id": ident, "from": "dev", "to": "human", "type": kind, "subject": subject}


def test_a_message_acknowledged_between_the_listing_and_its_read_is_left_out(capsys):
    inbox = Inbox({"1": message("1", "REVIEW_REQUEST", "PR 7"), "2": message("2", "REVIEW_REQUEST", "PR 8")},
                  gone={"1"})
    assert mailcmds._tell_waiting(inbox, "agent/", [], False) == {"2"}
    assert "PR 8" in capsys.readouterr().err

"""`anvilfs inbox` and `notify` against a real server when a message is acknowledged under them.

Both list an inbox, then read each message (client/mailcmds.py:
inbox_messages). A message acknowledged between the listing and its read
is no longer in the inbox, so it is left out without a word and the rest
is told. The race is made to happen every time, not hoped for: the
client's listing is followed at once by an rm through a second connection.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from anvilfs.client import Client, mailcmds
from anvilfs.ninep import Dialect
from harness.mailbox import mail, server_with_dev


class AcknowledgedAfterListing:
    """A real client, except that right after it lists an inbox, `victim` there is acknowledged (rm)
    through `other`, another connection to the same server."""

    def __init__(self, client: Client, other: Client, victim: str):
        self.client, self.other, self.victim = client, other, victim
        self.listed: list[str] = []

    def list_dir(self, path: str):
        entries = self.client.list_dir(path)
        self.listed += [e.name for e in entries]
        self.other.remove(f"{path}/{self.victim}.json")
        return entries

    def __getattr__(self, name: str):
        return getattr(self.client, name)


@pytest.fixture
def srv():
    with server_with_dev() as server:
        yield server


def three_requests(srv) -> list[str]:
    with srv.connect(uname="dev", dialect=Dialect.P2000U) as client:
        return [mail(client, "dev", "human", f"PR {n}", kind="REVIEW_REQUEST") for n in (7, 8, 9)]


def test_inbox_leaves_out_a_message_acknowledged_after_the_listing_and_says_nothing(srv, capsys):
    first, gone, last = three_requests(srv)
    with srv.connect(dialect=Dialect.P2000U) as client, srv.connect(dialect=Dialect.P2000U) as other:
        racing = AcknowledgedAfterListing(client, other, gone)
        assert mailcmds.inbox(racing, "", SimpleNamespace(participant="human")) == 0
        assert f"{gone}.json" in racing.listed  # the listing had it: the race did happen
        out, err = capsys.readouterr()
        assert out == f"{first} dev REVIEW_REQUEST PR 7\n{last} dev REVIEW_REQUEST PR 9\n" and err == ""
        assert [e.name for e in client.list_dir("human/done")] == [f"{gone}.json"]


def test_notify_leaves_out_a_request_acknowledged_after_the_listing(srv, capsys):
    first, gone, last = three_requests(srv)
    with srv.connect(dialect=Dialect.P2000U) as client, srv.connect(dialect=Dialect.P2000U) as other:
        racing = AcknowledgedAfterListing(client, other, gone)
        assert mailcmds._tell_waiting(racing, "", [], False) == {first, last}
        assert f"{gone}.json" in racing.listed
    err = capsys.readouterr().err
    assert err == (f"anvilfs: mail {first} REVIEW_REQUEST from dev: still waiting: PR 7\n"
                   f"anvilfs: mail {last} REVIEW_REQUEST from dev: still waiting: PR 9\n")

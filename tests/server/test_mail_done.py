"""Acknowledged mail (done/) on a real server with a real state directory: lengths that reads agree with.

A listing of done/ gives each entry's length (SPEC §4) from the database
(length() of the stored JSON, which reads none of it:
tests/domain/test_mail_store.py sees the statements a listing runs), and
a read gives exactly that many bytes, in both dialects: over 9P2000.u a
directory read carries the lengths; over 9P2000.L `ls -l` is a Treaddir
and then a walk and a Tgetattr of each entry.
"""

from __future__ import annotations

import json
import os

import pytest

from anvilfs.client import Client, ServerError
from anvilfs.ninep import Dialect
from anvilfs.ninep import messages as m
from harness.mailbox import mail, server_with_dev, stored

MESSAGES = 30


@pytest.fixture
def srv():
    with server_with_dev() as server:
        yield server


def acknowledged(srv, count: int) -> list[str]:
    """COUNT messages from dev to human, every other one not ASCII, each acknowledged (rm); their ids."""
    with srv.connect(dialect=Dialect.P2000U) as client:
        ids = [mail(client, "dev", "human", f"café ☕ {i}" if i % 2 else f"plain {i}", "naïve — body " * i)
               for i in range(count)]
        for ident in ids:
            client.remove(f"human/inbox/{ident}.json")
    return ids


def lengths_9p2000u(client: Client, path: str) -> dict[str, int]:
    """A directory read: its stat records carry the lengths."""
    return {entry.name: entry.length for entry in client.list_dir(path)}


def lengths_ls_l(client: Client, path: str) -> dict[str, int]:
    """What `ls -l` does over 9P2000.L: Treaddir for the names, then a walk and a Tgetattr of each."""
    fid = client.walk(path)
    client.rpc(m.Tlopen(tag=0, fid=fid, flags=os.O_RDONLY))
    names, offset = [], 0
    while data := client.rpc(m.Treaddir(tag=0, fid=fid, offset=offset, count=8000)).data:
        pos = 0
        while pos < len(data):  # qid[13] offset[8] type[1] name[s]
            offset = int.from_bytes(data[pos + 13:pos + 21], "little")
            size = int.from_bytes(data[pos + 22:pos + 24], "little")
            names.append(data[pos + 24:pos + 24 + size].decode())
            pos += 24 + size
    client.clunk(fid)
    found = {}
    for name in names:
        entry = client.walk(f"{path}/{name}")
        found[name] = client.rpc(m.Tgetattr(tag=0, fid=entry, request_mask=0x7FF)).size
        client.clunk(entry)
    return found


@pytest.mark.parametrize("dialect, listing", [(Dialect.P2000U, lengths_9p2000u), (Dialect.P2000L, lengths_ls_l)],
                         ids=["9P2000.u", "9P2000.L"])
def test_a_done_listing_gives_the_lengths_reads_give(srv, dialect, listing):
    ids = acknowledged(srv, MESSAGES)
    with srv.connect(dialect=dialect) as client:
        lengths = listing(client, "human/done")
        assert sorted(lengths) == [f"{i}.json" for i in ids]
        with srv.connect(dialect=Dialect.P2000U) as reader:
            contents = {name: reader.read_file(f"human/done/{name}") for name in lengths}
    assert {name: len(data) for name, data in contents.items()} == lengths
    assert json.loads(contents[f"{ids[1]}.json"])["subject"] == "café ☕ 1"  # lengths are bytes, not characters
    assert len(contents[f"{ids[1]}.json"]) > len(contents[f"{ids[1]}.json"].decode())


def test_a_stored_message_damaged_on_disk_reads_as_long_as_its_listing_says(srv):
    [ident] = acknowledged(srv, 1)
    damaged = b'{"id": "0000000000000001", "body": "caf\xe9 \xff"}\n'  # Latin-1, and a stray byte
    stored(srv.state, "INSERT INTO mail (id, participant, box, json) VALUES ('0000000000000001', 'human', 'done', ?)",
           (damaged,))
    with srv.connect(dialect=Dialect.P2000U) as client:
        lengths = lengths_9p2000u(client, "human/done")
        assert sorted(lengths) == ["0000000000000001.json", f"{ident}.json"]
        data = client.read_file("human/done/0000000000000001.json")
    assert data == b'{"id": "0000000000000001", "body": "caf? ?"}\n'  # each byte that is not UTF-8 reads as "?"
    assert lengths["0000000000000001.json"] == len(data) == len(damaged)


def test_a_body_with_a_lone_surrogate_escape_is_refused_saying_why(srv):
    with srv.connect(uname="dev", dialect=Dialect.P2000U) as client:
        with pytest.raises(ServerError, match=r"body: has a lone surrogate \\ud800 at character 2; write the char"):
            mail(client, "dev", "human", "odd", "ab\ud800c")  # json.dumps writes it as the escape \ud800
        assert client.list_dir("human/inbox") == []
        assert mail(client, "dev", "human", "still works", "😀")  # refused, not broken

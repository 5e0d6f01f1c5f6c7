"""Read-back on ctl (SPEC §4): a read after a write on the same fid answers that write, from its start."""

from __future__ import annotations

import pytest

from anvilfs.client import ServerError
from anvilfs.ninep import consts as c


@pytest.fixture
def client(anvil_server):
    with anvil_server.connect("none", timeout=20) as cl:
        yield cl


def test_a_read_before_any_write_is_empty_at_once(client):
    fid = client.open("ctl", c.ORDWR)
    assert client.read_chunk(fid, 0) == b""


def test_a_sequential_read_after_the_write_gets_the_answer_whatever_the_offset(client):
    fid = client.open("ctl", c.ORDWR)
    line = b"new sim /tmp name=bot1\n"
    client.write_chunk(fid, 0, line)
    # as `exec 3<>ctl; echo ... >&3; cat <&3`: the read comes at the offset the write left
    assert client.read_chunk(fid, len(line)) == b"bot1\n"
    assert client.read_chunk(fid, len(line) + 5) == b""  # then end of file
    assert client.read_chunk(fid, 0) == b"bot1\n"  # and pread at 0 reads it again


def test_after_a_refused_write_the_read_says_why_not_the_previous_answer(client):
    fid = client.open("ctl", c.ORDWR)
    client.write_chunk(fid, 0, b"new sim /tmp name=bot1\n")
    assert client.read_chunk(fid, 0) == b"bot1\n"
    with pytest.raises(ServerError, match="already exists"):
        client.write_chunk(fid, 0, b"new sim /tmp name=bot1\n")
    answer = client.read_chunk(fid, 23)
    assert answer.startswith(b"error: ") and b"already exists" in answer and answer.endswith(b"\n")

"""The server's unix socket: its name appears only once it accepts connections, and only one server gets it."""

from __future__ import annotations

import os
import socket

import pytest
import trio

from anvilfs.server import listen
from anvilfs.server.listen import ListenError, unix_listener


def _accepts(path: str) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
        return True
    except ConnectionRefusedError:
        return False
    finally:
        probe.close()


def test_the_socket_is_named_only_once_it_listens(tmp_path, monkeypatch):
    # A client that sees the file must be able to connect (a file made by bind() refuses until listen()).
    path, named = str(tmp_path / "sock"), []
    real_link = os.link

    def link(source, target):
        named.append((target, _accepts(source)))
        real_link(source, target)

    monkeypatch.setattr(listen.os, "link", link)

    async def main():
        listener = await unix_listener(path)
        with listener.socket:
            assert _accepts(path)

    trio.run(main)
    assert named == [(path, True)]
    assert sorted(os.listdir(tmp_path)) == ["sock"], "the temporary name is left behind"
    assert os.stat(path).st_mode & 0o777 == 0o600


def test_of_two_servers_starting_at_once_the_second_is_refused_and_the_first_keeps_its_socket(tmp_path, monkeypatch):
    path = str(tmp_path / "sock")

    async def main():
        first = await unix_listener(path)
        # the second server checked for a stale socket before the first had made one
        monkeypatch.setattr(listen, "_clear_stale_socket", lambda _path: None)
        with pytest.raises(ListenError, match="another server is already listening"):
            await unix_listener(path)
        with first.socket:
            assert _accepts(path), "the first server lost its socket"
        assert sorted(os.listdir(tmp_path)) == ["sock"]

    trio.run(main)


def test_a_dead_servers_socket_is_replaced(tmp_path):
    path = str(tmp_path / "sock")
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(path)
    dead.close()
    assert not _accepts(path)

    async def main():
        listener = await unix_listener(path)
        with listener.socket:
            assert _accepts(path)

    trio.run(main)

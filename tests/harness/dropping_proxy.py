"""A 9P relay in front of a real server that can lose one answer: the request arrives, its reply never does.

    with DroppingProxy(srv.socket, tmp / "proxy") as proxy:   # dial proxy.address
        proxy.drop_next_reply_to(TREAD)  # the next Tread reaches the server; the client's connection then breaks

What a client sees when the server did a change and the connection broke
before the answer came (a server killed at that moment): the one case in
which a client cannot know whether its write was done. The blocking client
sends one request at a time, so the relay goes message by message.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from pathlib import Path

TREAD, TWRITE = 116, 118


def _message(sock: socket.socket) -> bytes:
    """One whole 9P message (size[4] type[1] ...), or b"" at the end."""
    head = sock.recv(4, socket.MSG_WAITALL)
    if len(head) < 4:
        return b""
    (size,) = struct.unpack("<I", head)
    return head + sock.recv(size - 4, socket.MSG_WAITALL)


class DroppingProxy:
    def __init__(self, server: Path, path: Path):
        self.server, self.path = server, path
        self._armed = threading.Event()
        self._kind = 0
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(path))
        self._listener.listen()
        self._thread = threading.Thread(target=self._accept, daemon=True)

    @property
    def address(self) -> str:
        return f"unix!{self.path}"

    def drop_next_reply_to(self, kind: int) -> None:
        """The next request of KIND (a 9P message type) is relayed, its reply dropped with the connection."""
        self._kind = kind
        self._armed.set()

    def __enter__(self) -> DroppingProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._listener.close()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                client, _ = self._listener.accept()
                threading.Thread(target=self._relay, args=(client,), daemon=True).start()

    def _relay(self, client: socket.socket) -> None:
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        upstream.settimeout(30)  # a server that stops answering ends the relay, not the test's process
        with client, upstream, contextlib.suppress(OSError):
            upstream.connect(str(self.server))
            while request := _message(client):
                upstream.sendall(request)
                reply = _message(upstream)
                if request[4] == self._kind and self._armed.is_set():
                    self._armed.clear()
                    return  # the server did it; the client hears nothing but the connection closing
                client.sendall(reply)

"""The tree as one session sees it: reads and writes of its files, attached as that session.

    tree = SessionTree(Identity.from_environment())   # $ANVILFS_SESSION, $ANVILFS_ADDRESS (else $NAMESPACE's)
    tree.read("beads/ready.developer")
    tree.ctl("beads/b1/ctl", "complete", "the result")   # words quoted (client/ctlwords.py)

The identity is the environment's, which the server gave the agent: never
a tool's argument, so a model cannot act as another session by naming it.
Every refusal is the server's own text (ServerError). A lost connection (a
server restarting) is dialled again once before it is reported, but not
once a write went out: the server may have done it, and doing it again
would send a second mail or make a second bead.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from ..client.address import AddressError, dial, resolve
from ..client.client import Client
from ..client.credentials import attach_aname
from ..client.ctlwords import ctl_line
from ..client.errors import ConnectionLost, ServerError
from ..client.commands import whole
from ..ninep import consts as c
from ..ninep import messages as m

__all__ = ["Identity", "SessionTree", "ToolError"]


class ToolError(Exception):
    """A tool call refused, with the text the model is to see (the file's own error, or what to do)."""


@dataclass(frozen=True, slots=True)
class Identity:
    """Who the tools act as and where the tree is."""

    session: str
    address: str  # unix!PATH or tcp!HOST!PORT
    conductor: bool = False
    role: str = ""  # for the brief alone: the tools read the live role from the tree
    worktree: bool = False  # for the brief alone: the session works in a worktree of its own

    @classmethod
    def from_environment(cls, environ: dict[str, str] | None = None) -> Identity:
        env = os.environ if environ is None else environ
        session = env.get("ANVILFS_SESSION", "")
        if not session:
            raise ToolError("ANVILFS_SESSION is not set: `anvilfs mcp` serves the session an anvilfs server started "
                            "it for, and that server sets ANVILFS_SESSION and ANVILFS_ADDRESS")
        address = env.get("ANVILFS_ADDRESS") or "unix!" + resolve("agent/").address
        return cls(session, address, env.get("ANVILFS_CONDUCTOR") == "1", env.get("ANVILFS_ROLE", ""),
                   env.get("ANVILFS_WORKTREE") == "1")


class SessionTree:
    """One connection to the tree as the session; paths are relative to the tree's root (`beads/list`)."""

    def __init__(self, identity: Identity, connect: Callable[[], Client] | None = None):
        self.identity = identity
        self._connect = connect or self._dial
        self._client: Client | None = None
        self._sent = False  # a write of this call went out: a lost connection may have lost only its answer

    @property
    def me(self) -> str:
        return self.identity.session

    def _dial(self) -> Client:
        try:
            target = resolve("", self.identity.address)
            return Client(dial(target), uname=self.identity.session, aname=attach_aname(target))
        except (AddressError, OSError) as exc:
            raise ToolError(f"cannot reach the anvilfs server at {self.identity.address}: {exc}") from None

    def _call(self, action: Callable[[Client], object], path: str = ""):
        for attempt in (1, 2):
            if self._client is None:
                self._client = self._connect()
            self._sent = False
            try:
                return action(self._client)
            except ConnectionLost:
                self.close()
                if self._sent:
                    raise ToolError("the connection to the anvilfs server broke after the write was sent: it may "
                                    "have been done; look (my_work, bead, inbox, read) before doing it again") from None
                if attempt == 2:
                    raise ToolError("the anvilfs server closed the connection twice; is it running?") from None
            except ServerError as exc:  # 9P2000's 127 bytes of it: the whole text is in `errors`
                text = whole(self._client, path, str(exc)) if path and self._client is not None else str(exc)
                raise ToolError(self._explained(text)) from None
        raise AssertionError("unreachable")

    def _explained(self, error: str) -> str:
        """The server's text, and what it means for the tools when it is their own session that is gone."""
        if error.startswith(f"'{self.me}' does not exist"):
            return (f"your session {self.me} no longer exists on this server (it was removed): the tools act as it "
                    f"and cannot go on ({error})")
        return error

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    # ------------------------------------------------------------ files

    def read(self, path: str) -> str:
        def run(client: Client) -> bytes:
            fid, qid = client.open_with_qid(path, c.OREAD)
            try:
                if qid.type & c.QTDIR:  # its bytes are stat records, nothing a model can read
                    raise ToolError(f"{path or 'the root'} is a directory: list it")
                return b"".join(client.read_chunks(fid))
            finally:
                client.clunk(fid)
        return self._call(run, path).decode(errors="replace")

    def exists(self, path: str) -> bool:
        try:
            self._call(lambda client: client.stat(path), path)
        except ToolError:
            return False
        return True

    def entries(self, path: str) -> list[tuple[str, bool]]:
        """A directory's (name, is_directory) pairs."""
        def run(client: Client) -> list[tuple[str, bool]]:
            if not client.stat(path).mode & c.DMDIR:  # a file's bytes are no stat records
                raise ToolError(f"{path} is a file: read it")
            return [(s.name, bool(s.mode & c.DMDIR)) for s in client.list_dir(path)]
        return self._call(run, path)

    def write(self, path: str, data: str) -> None:
        """Everything on one open: a prompt, a bead's result (submitted at the clunk)."""
        self.rdwr(path, data, answer=False)

    def ctl(self, path: str, verb: str, *words: str, answer: bool = False) -> str:
        """One ctl command, its words quoted; with answer, the read-back (a new id) of a readable ctl."""
        return self.rdwr(path, ctl_line(verb, *words), answer=answer)

    def rdwr(self, path: str, data: str, *, answer: bool = True) -> str:
        """Write on one open fid; with answer, then read what the file answers (a mail's id, or `error: why`)."""
        def run(client: Client) -> str:
            fid = client.open(path, c.ORDWR if answer else c.OWRITE)
            self._sent = True
            try:
                client.write_all(fid, data.encode())
                return client.read_chunk(fid, 0).decode(errors="replace").strip() if answer else ""
            finally:
                client.clunk(fid)
        return self._call(run, path)

    def remove(self, path: str) -> None:
        def run(client: Client) -> None:
            fid = client.walk(path)
            self._sent = True
            client.rpc(m.Tremove(tag=0, fid=fid))  # the server clunks the fid, removed or not
        self._call(run, path)

    def wait(self, path: str, timeout: float) -> str | None:
        """A blocking file's text (a session's `wait`), or None if it did not answer within TIMEOUT seconds.

        On a connection of its own, so that other calls go on meanwhile and giving up is closing it (the
        server flushes the read). Not dialled again: a server that went away is reported at once.
        """
        client = self._connect()
        try:
            client.sock.settimeout(timeout)
            return client.read_file(path).decode(errors="replace")
        except ConnectionLost as exc:
            if isinstance(exc.__context__, TimeoutError):
                return None
            raise ToolError(f"the anvilfs server closed the connection during the wait on {path}; is it running?") \
                from None
        except ServerError as exc:
            raise ToolError(self._explained(str(exc))) from None
        finally:
            client.close()

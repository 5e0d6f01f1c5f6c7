"""Who the client says it is: the uname, and the aname (the TCP token), as a real server's trace shows them.

Every command is a separate ``python -m anvilfs ...`` process, as a shell
user would type it.
"""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import tempfile
from pathlib import Path

import pytest

from harness.server import AnvilServer, start_server

TOKEN = "0123456789abcdef" * 4


def _attaches(srv: AnvilServer) -> list[str]:
    return [line for line in srv.trace().splitlines() if "-> Tattach " in line]


def _attach_of(srv: AnvilServer, *args: str, env: dict[str, str], check: bool = True) -> str:
    """Run one client command and return the Tattach it sent (the trace line)."""
    before = len(_attaches(srv))
    r = srv.run_cli(*args, env=env)
    assert r.returncode == 0 or not check, f"{args} -> {r.returncode}: {r.stderr}\n{srv.trace_tail()}"
    new = _attaches(srv)[before:]
    assert len(new) == 1, new
    return new[0]


@pytest.fixture
def tcp_server():
    """A server with a TCP listener whose state directory is $XDG_STATE_HOME/anvilfs, holding a known token."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    base = Path(tempfile.mkdtemp(prefix="anvil."))
    state = base / "xdg-state" / "anvilfs"
    state.mkdir(parents=True, mode=0o700)
    fd = os.open(state / "token", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # kept by a server that makes tokens
    os.write(fd, f"{TOKEN}\n".encode())
    os.close(fd)
    srv = start_server(base, state=state, extra_args=["--listen", f"tcp!127.0.0.1!{port}"])
    try:
        yield srv, f"tcp!127.0.0.1!{port}"
    finally:
        srv.stop()
        shutil.rmtree(base, ignore_errors=True)


def test_tcp_attach_presents_the_token(tcp_server) -> None:
    srv, tcp = tcp_server
    default = {"XDG_STATE_HOME": str(srv.state.parent), "ANVILFS_TOKEN": ""}
    elsewhere = {"XDG_STATE_HOME": str(srv.base / "nothing-here")}
    cases = {
        "the default token file": ([], default),
        "$ANVILFS_TOKEN": ([], elsewhere | {"ANVILFS_TOKEN": TOKEN}),
        "--token-file": (["--token-file", str(srv.state / "token")], elsewhere | {"ANVILFS_TOKEN": ""}),
        "-A": (["-A", TOKEN], elsewhere | {"ANVILFS_TOKEN": ""}),
    }
    for what, (options, env) in cases.items():
        # the server admits the attach only with the token; the trace never shows it
        line = _attach_of(srv, "-a", tcp, *options, "read", "list", env=env)
        assert line.endswith(' aname "(hidden: it may be the token)"'), (what, line)
    # no token anywhere: an empty aname, which the server refuses with its own explanation
    line = _attach_of(srv, "-a", tcp, "read", "list", env=elsewhere | {"ANVILFS_TOKEN": ""}, check=False)
    assert line.endswith(' aname ""'), line
    assert TOKEN not in srv.trace(), "the token must never be in the trace (--trace output goes to logs)"


def test_unix_attach_sends_no_token(tcp_server) -> None:
    srv, _ = tcp_server
    env = {"XDG_STATE_HOME": str(srv.state.parent), "ANVILFS_TOKEN": TOKEN}
    assert _attach_of(srv, "read", "agent/list", env=env).endswith(' aname ""')
    assert _attach_of(srv, "-A", "agent", "read", "agent/list", env=env).endswith(" aname agent")


def test_a_token_file_that_cannot_be_read_is_a_clear_error(tcp_server) -> None:
    srv, tcp = tcp_server
    missing = srv.base / "no-such-token"
    before = len(_attaches(srv))
    r = srv.run_cli("-a", tcp, "--token-file", str(missing), "read", "list")
    assert r.returncode == 1 and r.stdout == "", r
    assert r.stderr.startswith(f"anvilfs: cannot read token file {missing}: no such file or directory;"), r.stderr
    assert len(_attaches(srv)) == before, "nothing is sent with a token that could not be read"


def test_uname_is_the_calling_agents_session(anvil_server: AnvilServer) -> None:
    srv = anvil_server
    login = _attach_of(srv, "read", "agent/list", env={"ANVILFS_SESSION": ""})
    assert f" uname {getpass.getuser()} " in login, login
    agent = _attach_of(srv, "read", "agent/list", env={"ANVILFS_SESSION": "bot7"})
    assert " uname bot7 " in agent, agent


def test_the_default_token_file_goes_only_to_loopback_addresses(tmp_path) -> None:
    from anvilfs.client import attach_aname, resolve

    state = tmp_path / "anvilfs"
    state.mkdir(mode=0o700)
    (state / "token").write_text(TOKEN + "\n")
    env = {"XDG_STATE_HOME": str(tmp_path), "ANVILFS_TOKEN": ""}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        assert attach_aname(resolve("list", "tcp!127.0.0.1!5640")) == TOKEN
        assert attach_aname(resolve("list", "tcp!localhost!5640")) == TOKEN
        assert attach_aname(resolve("list", "tcp!192.0.2.7!5640")) == ""  # another host: only if given explicitly
        assert attach_aname(resolve("list", "tcp!192.0.2.7!5640"), token_file=str(state / "token")) == TOKEN
    finally:
        for k, v in old.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)

"""Who can get in (SPEC §2): a TCP attach needs the state directory's token; the unix socket is 0600.

Real clients over a real `anvilfs serve --listen tcp!127.0.0.1!PORT`:
python-9p (9P2000) and p9fs (9P2000.u, 9P2000.L) from their own venvs,
once as the server's user and once as `nobody`, a second local user.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import stat
import subprocess
from collections.abc import Iterator

import pytest

from harness import venvs
from harness.server import AnvilServer, anvil_server

pytestmark = pytest.mark.clients

AS_NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
LIST = [{"op": "read", "path": "list"}]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def tcp_server() -> Iterator[tuple[AnvilServer, int]]:
    port = free_port()
    with anvil_server(extra_args=["--listen", f"tcp!127.0.0.1!{port}"]) as srv:
        yield srv, port
        print(srv.trace_tail())


def drive(client: str, where: list[str], *, dialect: str = "", aname: str | None = None,
          prefix: list[str] = (), ops: list[dict] = LIST) -> list[dict]:
    argv = venvs.driver_command(client, *where)
    if dialect:
        argv += ["--dialect", dialect]
    if aname is not None:
        argv += ["--aname", aname]
    proc = subprocess.run([*prefix, *argv], input="\n".join(map(json.dumps, ops)) + "\n",
                          capture_output=True, text=True, timeout=60)
    results = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert results, f"no results; rc {proc.returncode}\nstderr: {proc.stderr}"
    return results


def token_of(srv: AnvilServer) -> str:
    path = srv.state / "token"
    info = os.lstat(path)
    assert stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o600, oct(info.st_mode)
    return path.read_text().strip()


CASES = [("python-9p", ""), ("p9fs", "9P2000.u"), ("p9fs", "9P2000.L")]


@pytest.mark.parametrize(("client", "dialect"), CASES, ids=[f"{c}-{d or '9P2000'}" for c, d in CASES])
def test_tcp_attach_needs_the_token(tcp_server, client: str, dialect: str) -> None:
    srv, port = tcp_server
    where = ["--tcp", f"127.0.0.1:{port}"]
    token = token_of(srv)

    made = drive(client, where, dialect=dialect, aname=token,
                 ops=[{"op": "write", "path": "ctl", "data": "new sim /tmp name=tbot\n"}, *LIST])
    assert all(r["ok"] for r in made), made
    assert made[1]["data"].startswith("tbot sim "), made

    for wrong in ("", "agent", token.upper()):
        [refused] = drive(client, where, dialect=dialect, aname=wrong)
        assert refused["ok"] is False and refused["stage"] in ("login", "attach") and refused["remote"], refused
        if dialect == "9P2000.L":
            assert refused["errno"] == errno.EACCES, refused
        else:
            assert str(srv.state / "token") in refused["error"], refused
    assert "tbot" in srv.run_cli("read", "agent/list").stdout  # the unix socket needs no token


def test_another_local_user_gets_in_neither_by_tcp_nor_by_the_socket(tcp_server) -> None:
    srv, port = tcp_server
    [tcp] = drive("p9fs", ["--tcp", f"127.0.0.1:{port}"], dialect="9P2000.L", prefix=AS_NOBODY)
    assert tcp["ok"] is False and tcp["remote"] and tcp["errno"] == errno.EACCES, tcp
    [unix] = drive("p9fs", ["--unix", str(srv.socket)], dialect="9P2000.L", prefix=AS_NOBODY)
    assert unix["ok"] is False and unix["stage"] == "connect" and "PermissionError" in unix["error"], unix
    assert os.stat(srv.socket).st_uid == os.getuid() and stat.S_IMODE(os.stat(srv.socket).st_mode) == 0o600
    # the token itself is out of its reach too
    read = subprocess.run([*AS_NOBODY, "cat", str(srv.state / "token")], capture_output=True, text=True, timeout=10)
    assert read.returncode != 0 and read.stdout == "", read


def test_no_token_lets_an_attach_in_and_says_so() -> None:
    port = free_port()
    with anvil_server(extra_args=["--listen", f"tcp!127.0.0.1!{port}", "--no-token"]) as srv:
        [listed] = drive("p9fs", ["--tcp", f"127.0.0.1:{port}"], dialect="9P2000.L", aname="")
        assert listed["ok"] is True, f"{listed}\n{srv.trace_tail()}"
        assert "without a token (--no-token): every local user can drive your agents" in srv.trace()
        assert not (srv.state / "token").exists()


def test_a_token_file_that_cannot_be_trusted_stops_the_server(tmp_path) -> None:
    from harness.server import start_server

    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "token").write_text("0" * 64 + "\n")
    os.chmod(state / "token", 0o644)
    with pytest.raises(RuntimeError, match=r"has mode 0644, not 0600: remove it and the server makes a new one"):
        start_server(tmp_path, state=state, extra_args=["--listen", f"tcp!127.0.0.1!{free_port()}"], timeout=15)

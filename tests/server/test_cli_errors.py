"""What the client commands say when something is wrong: one clear line, or the server's own text.

Every command is a separate ``python -m anvilfs ...`` process, as a shell
user would type it (tests/harness/cli_runs.py), against a real ``anvilfs
serve`` where one is involved.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from harness.cli_runs import alone as _cli
from harness.cli_runs import fails, list_rows, ok
from harness.server import AnvilServer

USAGE_NEW = "new <backend> <cwd>"


@pytest.mark.parametrize(
    ("path", "command", "expected", "usage"),
    [
        ("agent/ctl", "bogus thing", ["bogus", "invalid\ncommands: "], [USAGE_NEW]),
        ("agent/ctl", "new", ["new", "invalid\nusage: "], ["usage", USAGE_NEW]),
        ("agent/ctl", "new nosuchbackend /tmp", ["nosuchbackend", "sim"], []),
        ("agent/s/ctl", "frobnicate", ["frobnicate", "invalid\ncommands: "], ["stop", "kill", "restart", "interrupt"]),
    ],
    ids=["unknown-command", "missing-args", "unknown-backend", "session-ctl"],
)
def test_bad_ctl_command_fails_with_the_servers_text(
    anvil_server: AnvilServer, path: str, command: str, expected: list[str], usage: list[str]
) -> None:
    srv = anvil_server
    ok(srv, "write", "agent/ctl", "new sim /tmp name=s")
    err = fails(srv, "write", path, command)
    for word in expected:
        assert word in err, (word, err)
    assert set(list_rows(srv)) == {"s"}, "a bad command must not create anything"
    # the server's text says to see errors, where the usage follows it; the client printed that usage
    first_line = err.strip().split("\n")[0].split(": ", 2)[-1]  # "anvilfs: agent/ctl: <server text>\n<usage>"
    line = next((ln for ln in ok(srv, "read", "agent/errors").splitlines() if first_line in ln), None)
    assert line is not None, (first_line, srv.trace_tail())
    for word in usage:
        assert word in line.split(first_line, 1)[1] and word in err, (word, line, err)


def test_reading_a_missing_file_fails(anvil_server: AnvilServer) -> None:
    err = fails(anvil_server, "read", "agent/nope")
    assert "nope" in err, err
    err = fails(anvil_server, "read", "agent/nosession/out")
    assert "nosession" in err, err
    err = fails(anvil_server, "stat", "agent/nope")
    assert "nope" in err, err


def test_refused_tcp_connection_is_one_clear_line() -> None:
    with socket.socket() as s:  # a port nobody listens on once this closes
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = _cli("-a", f"tcp!127.0.0.1!{port}", "read", "list")
    assert r.returncode == 1, r
    assert r.stderr == (f"anvilfs: cannot connect to tcp!127.0.0.1!{port}: connection refused; "
                        f"is `anvilfs serve --listen tcp!127.0.0.1!{port}` running?\n"), r.stderr
    assert r.stdout == ""


@pytest.mark.parametrize("port", ["\u00b2", "\u0663", "5640x", "70000"])
def test_a_port_in_other_than_the_digits_0_to_9_is_a_bad_address(port: str) -> None:
    # str.isdigit() is true for "²" (then int() failed: "invalid literal for int()") and "٣" (dialled port 3)
    r = _cli("-a", f"tcp!127.0.0.1!{port}", "read", "list")
    assert (r.returncode, r.stdout) == (1, ""), r
    assert r.stderr == f"anvilfs: bad address 'tcp!127.0.0.1!{port}': write tcp!HOST!PORT, e.g. tcp!127.0.0.1!5640\n", r.stderr


def test_a_server_that_does_not_speak_9p_is_one_clear_line() -> None:
    import threading

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.settimeout(30)  # the accept has a deadline too
        port = listener.getsockname()[1]

        def answer_like_a_web_server() -> None:
            conn, _ = listener.accept()
            with conn:
                conn.recv(4096)
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")

        web = threading.Thread(target=answer_like_a_web_server, daemon=True)
        web.start()
        r = _cli("-a", f"tcp!127.0.0.1!{port}", "read", "list")
        web.join(timeout=30)
    assert r.returncode == 1 and r.stdout == "", r
    assert r.stderr.startswith("anvilfs: list: the server's reply is not 9P (frame size "), r.stderr
    assert r.stderr.endswith("is that an anvilfs server?\n") and r.stderr.count("\n") == 1, r.stderr


def test_a_refused_ctl_line_prints_its_usage(anvil_server: AnvilServer) -> None:
    srv = anvil_server
    ok(srv, "write", "agent/ctl", "new sim /tmp name=bot1")
    r = srv.run_cli("write", "agent/bot1/ctl", "stop now")
    assert (r.returncode, r.stderr) == (1, "anvilfs: agent/bot1/ctl: stop: unexpected 'now': invalid\nusage: stop\n"), r
    r = srv.run_cli("write", "agent/ctl", "fly")
    assert r.returncode == 1 and r.stderr.startswith("anvilfs: agent/ctl: unknown command 'fly': invalid\ncommands: new "), r


def test_a_session_named_without_agent_is_pointed_out(anvil_server: AnvilServer) -> None:
    r = anvil_server.run_cli("read", "bot1/out")
    assert (r.returncode, r.stdout) == (1, ""), r
    assert r.stderr == f"anvilfs: no service bot1 in {anvil_server.namespace}; did you mean agent/bot1/out?\n", r.stderr


def test_missing_unix_socket_is_one_clear_line(tmp_path: Path) -> None:
    r = _cli("read", "agent/list", env={"NAMESPACE": str(tmp_path)})
    assert r.returncode == 1, r
    assert r.stderr == (f"anvilfs: cannot connect to unix!{tmp_path}/agent: no such file or directory; "
                        "is `anvilfs serve` running?\n"), r.stderr


def test_reading_a_directory_says_to_use_ls(anvil_server: AnvilServer) -> None:
    srv = anvil_server
    ok(srv, "write", "agent/ctl", "new sim /tmp name=bot1")
    for name in ("agent", "agent/bot1"):
        r = srv.run_cli("read", name)
        assert (r.returncode, r.stdout) == (1, ""), r
        assert r.stderr == f"anvilfs: {name} is a directory: use `anvilfs ls {name}`\n", r.stderr
    assert "bot1" in ok(srv, "ls", "agent").split()  # and ls does list it


def test_an_error_longer_than_plan9ports_127_bytes_is_printed_whole(anvil_server: AnvilServer) -> None:
    """9P2000 carries at most 127 bytes of an error; the client prints it whole, from `errors` (issue 32)."""
    name = "nosuchbackend" + "x" * 60
    err = fails(anvil_server, "write", "agent/ctl", f"new {name} /tmp")
    assert "\u2026" not in err and len(err.split(": ", 2)[-1].encode()) > 127, err
    assert f"no such backend '{name}'; known backends: " in err and "sim" in err, err
    err = fails(anvil_server, "write", "agent/beads/ctl", f"new title dev description {name}")
    assert f"dependency '{name}' is not a bead; `beads/list` shows the beads there are" in err, err

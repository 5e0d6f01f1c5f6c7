"""The user story, end to end: a real ``anvilfs serve`` driven by the project's own client.

Every command is a separate ``python -m anvilfs ...`` process (``srv.run_cli``),
as a shell user would type it, with $NAMESPACE pointing at the server's
namespace directory. Failures print the server's 9P trace.
"""

from __future__ import annotations

import getpass
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from harness.server import AnvilServer, start_server
from harness.server import anvil_server as running_server

USAGE_NEW = "new <backend> <cwd>"
ROOT_FILES = {"ctl": "-rw-------", "list": "-r--------", "events": "-r--------",
              "backends": "-r--------", "errors": "-r--------"}  # fmt: skip


def ok(srv: AnvilServer, *args: str, input: str | None = None) -> str:
    """Run a client command that must succeed; return its stdout."""
    r = srv.run_cli(*args, input=input)
    assert r.returncode == 0, f"anvilfs {' '.join(args)} -> {r.returncode}\n{r.stderr}\n{srv.trace_tail()}"
    assert r.stderr == "", r.stderr
    return r.stdout


def fails(srv: AnvilServer, *args: str, input: str | None = None) -> str:
    """Run a client command that must fail; return its stderr."""
    r = srv.run_cli(*args, input=input)
    assert r.returncode != 0, f"anvilfs {' '.join(args)} succeeded:\n{r.stdout}\n{srv.trace_tail()}"
    assert r.stdout == "", r.stdout
    return r.stderr


def list_rows(srv: AnvilServer) -> dict[str, list[str]]:
    return {line.split()[0]: line.split() for line in ok(srv, "read", "agent/list").splitlines()}


def test_user_story(anvil_server: AnvilServer) -> None:
    srv = anvil_server
    assert ok(srv, "write", "agent/ctl", "new sim /tmp name=bot1") == ""
    assert ok(srv, "write", "agent/bot1/in", input="hello\n") == ""  # echo hello | anvilfs write ...
    assert ok(srv, "read", "agent/bot1/wait").splitlines() == ["await"]

    out = ok(srv, "read", "agent/bot1/out")
    assert out.startswith("[simulated]"), out
    assert "hello" in out, out

    rows = list_rows(srv)
    assert set(rows) == {"bot1"}, rows
    name, backend, status, _role, cwd, *rest = rows["bot1"]  # name backend status role cwd
    assert (backend, status, cwd) == ("sim", "await", "/tmp"), rows
    assert "simulated" in rest, rows  # a fake agent never passes for a real one

    assert ok(srv, "read", "agent/bot1/status").split()[0] == "await"
    assert "hello" in ok(srv, "read", "agent/bot1/log")


def test_ctl_read_after_write_on_the_same_fid_names_the_session(anvil_server: AnvilServer) -> None:
    # rdwr: read, write a line, read again -- all on one open fid
    out = ok(anvil_server, "rdwr", "agent/ctl", input="new sim /tmp name=bot2\n")
    assert out.splitlines()[-1] == "bot2", out
    assert "bot2" in list_rows(anvil_server)


def test_failed_turn_is_reported_by_wait_and_list(anvil_server: AnvilServer) -> None:
    srv = anvil_server
    ok(srv, "write", "agent/ctl", "new sim /tmp name=bad")
    ok(srv, "write", "agent/bad/in", input="sim:fail please\n")
    assert ok(srv, "read", "agent/bad/wait").splitlines() == ["error"]
    assert list_rows(srv)["bad"][2] == "error"


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


def test_ls_and_stat(anvil_server: AnvilServer) -> None:
    srv = anvil_server
    ok(srv, "write", "agent/ctl", "new sim /tmp name=bot1")

    names = ok(srv, "ls", "agent").split()
    assert set(ROOT_FILES) | {"bot1"} <= set(names), names

    modes = {line.split()[-1]: line.split()[0] for line in ok(srv, "ls", "-l", "agent").splitlines()}
    for name, mode in ROOT_FILES.items():
        assert modes[name] == mode, (name, modes)
    assert modes["bot1"] == "dr-x------", modes

    st = ok(srv, "stat", "agent/list")
    assert st.startswith("'list' "), st
    assert " m 0o400 " in st, st
    assert " q (" in st and " 00) " in st, st  # a plain file's qid type
    st = ok(srv, "stat", "agent/bot1")
    assert st.startswith("'bot1' ") and f" m {0x80000000 | 0o500:#o} " in st, st


def test_dial_address_with_a(anvil_server: AnvilServer) -> None:
    srv = anvil_server
    ok(srv, "write", "agent/ctl", "new sim /tmp name=bot1")
    nowhere = {"NAMESPACE": str(srv.base / "not-a-namespace")}  # so only -a can find the server
    r = srv.run_cli("-a", srv.address, "read", "list", env=nowhere)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[0] == "bot1", r.stdout
    r = srv.run_cli("read", "-a", srv.address, "/bot1/cwd", env=nowhere)
    assert (r.returncode, r.stdout.strip()) == (0, "/tmp"), r
    r = srv.run_cli("-a", srv.address, "write", "ctl", "new sim /tmp name=viaa", env=nowhere)
    assert r.returncode == 0, r.stderr
    assert "viaa" in list_rows(srv)
    # and without -a, that NAMESPACE really does not reach the server
    r = srv.run_cli("read", "agent/list", env=nowhere)
    assert r.returncode != 0 and r.stdout == ""


def test_tcp_listener() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    tcp = f"tcp!127.0.0.1!{port}"
    # --no-token: this client's attach sends no aname (token attaches: tests/interop/test_tcp_token.py)
    with running_server(extra_args=["--listen", tcp, "--no-token"]) as srv:
        r = srv.run_cli("-a", tcp, "write", "ctl", "new sim /tmp name=tcpbot")
        assert r.returncode == 0, r.stderr + srv.trace_tail()
        assert "tcpbot" in list_rows(srv)  # same server over the unix socket


def test_reading_a_missing_file_fails(anvil_server: AnvilServer) -> None:
    err = fails(anvil_server, "read", "agent/nope")
    assert "nope" in err, err
    err = fails(anvil_server, "read", "agent/nosession/out")
    assert "nosession" in err, err
    err = fails(anvil_server, "stat", "agent/nope")
    assert "nope" in err, err


# --- the server process -----------------------------------------------------


def _wait_for_trace(srv: AnvilServer, predicate, what: str, timeout: float = 10) -> None:
    """Poll the server's trace (an external process's output) until ``predicate`` holds."""
    deadline = time.monotonic() + timeout
    while not predicate(srv.trace()):
        assert time.monotonic() < deadline, f"no {what} in the trace after {timeout}s\n{srv.trace_tail()}"
        time.sleep(0.02)  # poll interval, bounded by the deadline


def _blocked_reads(trace: str) -> int:
    """Treads that have had no answer yet, counted per connection and tag."""
    pending: set[tuple[str, str]] = set()
    for line in trace.splitlines():
        parts = line.split()
        if len(parts) >= 5 and parts[1] == "->" and parts[2] == "Tread":
            pending.add((parts[0], parts[4]))
        elif len(parts) >= 5 and parts[1] == "<-" and parts[2] in ("Rread", "Rerror", "Rlerror"):
            pending.discard((parts[0], parts[4]))
    return len(pending)


def test_sigterm_stops_cleanly_with_blocked_readers(anvil_server: AnvilServer) -> None:
    srv = anvil_server
    ok(srv, "write", "agent/ctl", "new sim /tmp name=hang")
    ok(srv, "write", "agent/hang/in", input="sim:hang forever\n")
    readers = [
        subprocess.Popen([sys.executable, "-m", "anvilfs", "read", path], env=srv.env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for path in ("agent/events", "agent/hang/wait")
    ]  # fmt: skip
    try:
        _wait_for_trace(srv, lambda t: _blocked_reads(t) == 2, "two blocked Treads")
        assert all(p.poll() is None for p in readers)
        rc = srv.stop(sig=signal.SIGTERM, timeout=5)  # then SIGKILL: rc -9
        assert rc == 0, f"exit status {rc} after SIGTERM\n{srv.trace_tail()}"
        assert not os.path.lexists(srv.socket), "the socket file was left behind"
        assert "SIGTERM" in srv.trace()
        for p in readers:  # the server going away ends the blocked reads
            out, _ = p.communicate(timeout=10)
            assert p.returncode != 0 or out == "", (p.args, p.returncode, out)
    finally:
        for p in readers:
            if p.poll() is None:
                p.kill()
                p.communicate(timeout=10)


def test_sigterm_idle_server(anvil_server: AnvilServer) -> None:
    assert anvil_server.stop(sig=signal.SIGTERM) == 0, anvil_server.trace_tail()
    assert not os.path.lexists(anvil_server.socket)


def _stale_socket_left_by_sigkill(base: Path) -> AnvilServer:
    old = start_server(base, log_name="old.trace")
    ok(old, "write", "agent/ctl", "new sim /tmp name=before")
    assert old.stop(sig=signal.SIGKILL) == -signal.SIGKILL
    assert os.path.lexists(old.socket), "SIGKILL should leave the socket file behind"
    with socket.socket(socket.AF_UNIX) as s, pytest.raises(ConnectionRefusedError):
        s.connect(str(old.socket))
    return old


def test_stale_socket_is_replaced_by_a_new_server() -> None:
    base = Path(tempfile.mkdtemp(prefix="anvil."))
    new = None
    try:
        old = _stale_socket_left_by_sigkill(base)
        new = start_server(base, namespace=old.namespace, state=old.state, log_name="new.trace")
        assert new.proc.poll() is None
        ok(new, "write", "agent/ctl", "new sim /tmp name=after")
        ok(new, "write", "agent/after/in", input="hello again\n")
        assert ok(new, "read", "agent/after/wait").splitlines() == ["await"]
        assert "after" in list_rows(new)
        assert os.stat(new.socket).st_mode & 0o777 == 0o600
        assert new.stop() == 0, new.trace_tail()
        assert not os.path.lexists(new.socket)
    finally:
        if new is not None:
            new.stop(sig=signal.SIGKILL)
        shutil.rmtree(base, ignore_errors=True)


def test_live_socket_is_not_taken_over(anvil_server: AnvilServer) -> None:
    srv = anvil_server
    ok(srv, "write", "agent/ctl", "new sim /tmp name=first")
    with pytest.raises(RuntimeError, match="already listening") as info:
        start_server(srv.base, namespace=srv.namespace, state=srv.base / "state2", log_name="second.trace")
    assert "exited with 1" in str(info.value)
    assert "first" in list_rows(srv)  # the first server still owns the socket


# --- the command line a new user meets -----------------------------------------


def _cli(*args: str, env: dict[str, str] | None = None, input: str = "") -> subprocess.CompletedProcess[str]:
    """``python -m anvilfs ARGS`` with no server involved."""
    return subprocess.run([sys.executable, "-m", "anvilfs", *args], input=input, capture_output=True, text=True,
                          env=os.environ | {"COLUMNS": "100"} | (env or {}), timeout=30)


def test_version_is_the_packages() -> None:
    import tomllib

    from anvilfs import __version__

    pyproject = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    assert __version__ == pyproject["project"]["version"], "anvilfs.__version__ and pyproject.toml disagree"
    r = _cli("--version")
    assert (r.returncode, r.stdout, r.stderr) == (0, f"anvilfs {__version__}\n", "")


def _parsers():
    from anvilfs.cli import _parser

    top = _parser()
    commands = next(a for a in top._actions if a.dest == "command").choices  # the subparsers
    return top, commands


def test_every_command_and_option_says_what_it_does() -> None:
    top, commands = _parsers()
    assert set(commands) == {"serve", "install-service", "read", "write", "ls", "stat", "rdwr", "rm", "notify", "inbox", "approve",
                             "reject", "mail", "top", "web", "hook"}
    for name, parser in {"anvilfs": top, **commands}.items():
        assert parser.description, f"{name} has no description"
        epilog = parser.epilog or ""
        assert epilog.startswith("examples:\n") and f"anvilfs {'' if name == 'anvilfs' else name}" in epilog, \
            f"{name} --help has no example"
        for action in parser._actions:
            assert action.help, f"{name} {action.option_strings or action.dest} has no help"


def test_help_reads_well() -> None:
    top = _cli("--help")
    assert top.returncode == 0 and top.stderr == ""
    for name in ("serve", "read", "write", "ls", "stat", "rdwr", "--version", "examples:"):
        assert name in top.stdout, (name, top.stdout)
    serve = _cli("serve", "--help").stdout
    for option in ("--listen", "--max-connections", "--msize", "--trace", "examples:"):
        assert option in serve, (option, serve)
    from anvilfs.server import Limits

    assert str(Limits().max_msize) in serve, "the --msize help gives the server's real default"
    read = _cli("read", "--help").stdout
    assert "anvilfs read agent/list" in read and "-a ADDRESS" in read, read


def test_refused_tcp_connection_is_one_clear_line() -> None:
    with socket.socket() as s:  # a port nobody listens on once this closes
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = _cli("-a", f"tcp!127.0.0.1!{port}", "read", "list")
    assert r.returncode == 1, r
    assert r.stderr == (f"anvilfs: cannot connect to tcp!127.0.0.1!{port}: connection refused; "
                        f"is `anvilfs serve --listen tcp!127.0.0.1!{port}` running?\n"), r.stderr
    assert r.stdout == ""


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


def test_rm_acknowledges_mail_and_removes_a_stopped_session(anvil_server: AnvilServer) -> None:
    srv = anvil_server
    ok(srv, "write", "agent/ctl", "new sim /tmp name=bot1")
    ident = ok(srv, "mail", "bot1", "QUERY_REQUEST", "where?", input="the config").strip()
    assert ok(srv, "ls", "agent/bot1/inbox").split() == [f"{ident}.json"]
    assert ok(srv, "rm", f"agent/bot1/inbox/{ident}.json") == ""
    assert ok(srv, "ls", "agent/bot1/inbox") == "" and f"{ident}.json" in ok(srv, "ls", "agent/bot1/done")
    r = srv.run_cli("rm", "agent/bot1")  # still running: refused, and said so
    assert r.returncode == 1 and r.stderr.startswith("anvilfs: agent/bot1: ") and "stop" in r.stderr, r
    ok(srv, "write", "agent/bot1/ctl", "stop")
    ok(srv, "rm", "agent/bot1")
    assert "bot1" not in ok(srv, "ls", "agent").split()
    r = srv.run_cli("rm", "agent/nothere", "agent/list")
    assert r.returncode == 1 and "nothere" in r.stderr, r


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


def _start_reader(srv: AnvilServer, path: str, *, sigint_ignored: bool = False) -> subprocess.Popen:
    """``anvilfs read PATH`` in the background, returned once its read is blocked in the server.

    sigint_ignored: started as a shell starts a job with `&` (SIGINT ignored, inherited through exec).
    """
    before = _blocked_reads(srv.trace())
    ignore = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if sigint_ignored else None
    proc = subprocess.Popen([sys.executable, "-m", "anvilfs", "read", path], env=srv.env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=ignore)
    _wait_for_trace(srv, lambda t: _blocked_reads(t) > before, f"blocked Tread of {path}")
    return proc


def _finish(proc: subprocess.Popen, timeout: float = 10) -> tuple[int, bytes]:
    """Wait for a reader to exit (killing it if it does not), and return its status and stderr."""
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError(f"{proc.args} still running {timeout}s later") from None
    return proc.returncode, err


@pytest.mark.parametrize("sigint_ignored", [False, True], ids=["foreground", "started-with-&"])
def test_ctrl_c_on_a_blocking_read_exits_130_without_a_traceback(anvil_server: AnvilServer, sigint_ignored) -> None:
    # A client started from a background job inherits SIGINT ignored; it takes the signal back, as the server does.
    reader = _start_reader(anvil_server, "agent/events", sigint_ignored=sigint_ignored)
    reader.send_signal(signal.SIGINT)
    status, err = _finish(reader)
    assert (status, err) == (130, b""), (status, err.decode(errors="replace"))


def _read_line(proc: subprocess.Popen, timeout: float = 10) -> bytes:
    """The first line a process writes to its stdout pipe, within a deadline."""
    import select

    data, deadline = b"", time.monotonic() + timeout
    while b"\n" not in data:
        left = deadline - time.monotonic()
        assert left > 0, f"no line from {proc.args} after {timeout}s: {data!r}"
        if select.select([proc.stdout], [], [], left)[0]:
            chunk = os.read(proc.stdout.fileno(), 4096)
            assert chunk, f"{proc.args} closed its output after {data!r}"
            data += chunk
    return data


def test_a_reader_that_goes_away_ends_the_read_quietly(anvil_server: AnvilServer) -> None:
    # anvilfs read agent/events | head -1
    srv = anvil_server
    reader = _start_reader(srv, "agent/events")
    ok(srv, "write", "agent/ctl", "new sim /tmp name=first")
    assert b"first" in _read_line(reader)
    reader.stdout.close()  # head has its line and exits
    ok(srv, "write", "agent/ctl", "new sim /tmp name=second")  # the next event meets the closed pipe
    status, err = _finish(reader)
    assert (status, err) == (128 + signal.SIGPIPE, b""), (status, err.decode(errors="replace"))


# --- who the client says it is: uname and aname -------------------------------------------

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

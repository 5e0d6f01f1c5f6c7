"""The user story, end to end: a real ``anvilfs serve`` driven by the project's own client.

Every command is a separate ``python -m anvilfs ...`` process (``srv.run_cli``),
as a shell user would type it, with $NAMESPACE pointing at the server's
namespace directory. Failures print the server's 9P trace.
"""

from __future__ import annotations

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

from harness.cli_runs import alone as _cli
from harness.cli_runs import list_rows, ok
from harness.server import AnvilServer, start_server
from harness.server import anvil_server as running_server

ROOT_FILES = {"ctl": "-rw-------", "list": "-r--------", "events": "-r--------",
              "backends": "-r--------", "errors": "-r--------"}  # fmt: skip


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
                             "reject", "mail", "top", "web", "hook", "mcp", "mountline"}
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


def test_mountline_prints_the_servers_real_socket_even_with_user_unset(anvil_server: AnvilServer) -> None:
    """Issue 32: `/tmp/ns.$USER.:0` by hand is `/tmp/ns..:0` where USER is unset; mountline names the socket the
    server listens on, for the kernel's 9p and for 9pfuse, and `serve` says both as it starts."""
    import pwd
    import shlex

    env = {k: v for k, v in os.environ.items() if k not in ("USER", "NAMESPACE", "DISPLAY")}
    r = subprocess.run([sys.executable, "-m", "anvilfs", "mountline"], capture_output=True, text=True, env=env, timeout=30)
    login = pwd.getpwuid(os.getuid()).pw_name
    lines = r.stdout.splitlines()
    assert r.returncode == 0 and len(lines) == 4, r
    assert shlex.split(lines[1])[-2:] == [f"/tmp/ns.{login}.:0/agent", "/mnt/agent"], lines
    assert f"access={os.getuid()}" in lines[1] and lines[1].startswith("sudo mount -t 9p -o trans=unix,"), lines
    assert shlex.split(lines[3]) == ["9pfuse", f"unix!/tmp/ns.{login}.:0/agent", "/mnt/agent"], lines
    here = _cli("-a", f"unix!{anvil_server.socket}", "mountline", "/srv/a dir")
    assert here.returncode == 0 and here.stderr == "", here  # a server is there: nothing to warn of
    assert shlex.split(here.stdout.splitlines()[1])[-2:] == [str(anvil_server.socket), "/srv/a dir"], here
    said = anvil_server.trace()
    assert f"9pfuse {shlex.quote(f'unix!{anvil_server.socket}')} /mnt/agent" in said, said

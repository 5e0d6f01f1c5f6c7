"""The real agent CLIs driven through anvilfs against stub model servers.

    def test_x(stub):                                   # StubModels, stopped after the test
        with agent_server(stub, "claude", env=claude_env(stub)) as srv:
            new_session(srv, "claude", cwd, "a")
            assert "turn 1" in turn(srv, "a", "hello")

The CLI is the pinned release (harness/agent_clis.py), installed on first use;
its directory goes first on the server's PATH, as a user's install would be
on theirs, so the backends under test are the built-in ones of
anvilfs/config/builtin.py unless a test gives a config file. Each server
gets a HOME of its own (the CLIs keep their settings and conversations
there), made before the server starts by ``home=`` (a function of the HOME
path) when a CLI needs files in it. ``args`` go to `anvilfs serve` (e.g.
--tmux-socket), and ``srv.again(log_name=...)`` starts another server on the
same state, arguments and environment (after the test stopped the first).
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from harness import agent_clis, prerequisites
from harness.server import AnvilServer, start_server

from stubs import StubModels

TURN_TIMEOUT = 90  # s: a turn of a real CLI on a loaded 2-core machine, with the stub answering at once


def cli_bin(name: str) -> Path:
    """The pinned CLI's bin directory, installed on first use; skip (fail under CI) if it cannot be."""
    try:
        return agent_clis.cli_bin(name)
    except agent_clis.Unavailable as exc:
        prerequisites.missing(f"{name}: {exc}")
        raise


@contextlib.contextmanager
def agent_server(stub: StubModels, *clis: str, env: dict[str, str] | None = None, config: str = "",
                 home: Callable[[Path], None] | None = None, keep: bool = False,
                 args: Sequence[str] = ()) -> Iterator[AnvilServer]:
    """A real ``anvilfs serve`` whose agents find the named CLIs first on PATH and a private HOME."""
    paths = [str(cli_bin(name)) for name in clis]
    base = Path(tempfile.mkdtemp(prefix="anvil."))
    try:
        home_dir = base / "home"
        home_dir.mkdir()
        if home is not None:
            home(home_dir)
        args = list(args)
        if config:
            (base / "config.toml").write_text(config)
            args += ["--config", str(base / "config.toml")]
        server_env = {"HOME": str(home_dir), "PATH": os.pathsep.join([*paths, os.environ.get("PATH", os.defpath)]),
                      **(env or {})}
        srv = start_server(base, extra_args=args, env=server_env)
        srv.again = functools.partial(start_server, base, extra_args=args, env=server_env)
        try:
            yield srv
        finally:
            srv.stop()
            print(srv.trace_tail())  # shown by pytest only when the test failed
    finally:
        if not keep:
            shutil.rmtree(base, ignore_errors=True)


def cli(srv: AnvilServer, *args: str, timeout: float = 30) -> str:
    """``anvilfs ARGS`` against srv; its stdout, or an AssertionError with what it said."""
    result = srv.run_cli(*args, timeout=timeout)
    assert result.returncode == 0, f"anvilfs {' '.join(args)} failed ({result.returncode}): {result.stderr}"
    return result.stdout


def new_session(srv: AnvilServer, backend: str, cwd: Path, name: str, *options: str) -> None:
    cli(srv, "write", "agent/ctl", " ".join(["new", backend, str(cwd), f"name={name}", *options]))
    state = cli(srv, "read", f"agent/{name}/wait", timeout=TURN_TIMEOUT).strip()
    assert state == "await" or state == "idle", f"session {name} started as {state!r}: " + cli(srv, "read", "agent/errors")


def turn(srv: AnvilServer, name: str, prompt: str, *, expect: str = "await") -> str:
    """Send prompt to session name, wait for the turn's end (its state must be ``expect``), return ``out``."""
    cli(srv, "write", f"agent/{name}/in", prompt)
    state = cli(srv, "read", f"agent/{name}/wait", timeout=TURN_TIMEOUT).strip()
    assert state.split()[0] == expect, (f"turn of {name} ended {state!r}, not {expect}; errors:\n"
                                        + cli(srv, "read", "agent/errors") + "\nstatus: "
                                        + cli(srv, "read", f"agent/{name}/status"))
    return cli(srv, "read", f"agent/{name}/out")


def wait_until(check: Callable[[], object], what: str, timeout: float = TURN_TIMEOUT) -> None:
    """Poll another process's state (nothing to block on across processes) until check() holds, or fail."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.05)


@contextlib.contextmanager
def next_stream(srv: AnvilServer, name: str) -> Iterator[Callable[[], str]]:
    """What `stream` showed of the next turn of session ``name``: call it before sending the prompt.

    A read of `stream` follows the turn going when it is first read, or else the next, from its first piece:
    a thread reads it at once (the prompt's writer, a process yet to start, comes after), to the turn's end.
    The function given waits for that end (with a deadline) and returns what was shown.
    """
    with srv.connect("tester", timeout=TURN_TIMEOUT) as client:
        fid = client.open(f"{name}/stream", 0)  # OREAD; the client attaches at agent/
        pieces: list[bytes] = []
        reader = threading.Thread(target=lambda: pieces.extend(client.read_chunks(fid)), daemon=True)
        reader.start()

        def shown() -> str:
            reader.join(TURN_TIMEOUT)
            assert not reader.is_alive(), f"{name}'s stream did not end within {TURN_TIMEOUT} s"
            return b"".join(pieces).decode()
        yield shown

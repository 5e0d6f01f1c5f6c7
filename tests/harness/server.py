"""Start a real ``anvilfs serve`` process for a test, and drive it with the project's client.

    with anvil_server() as srv:                       # fresh namespace + state dirs
        srv.run_cli("write", "agent/ctl", "new sim /tmp name=bot1")
        with srv.connect("glenda") as client:         # anvilfs.client, attached as glenda
            client.read_file("list")
        run_in_guest(srv.socket, "cat list")          # tests/harness/vm.py
        assert ..., srv.trace_tail()                  # every 9P message, for failures

The server runs as ``sys.executable -m anvilfs serve --namespace NS --state ST
--trace`` with its stderr (the 9P trace) in ``<base>/server.trace``. The
context manager waits for the unix socket ``NS/agent`` with a deadline (failing
at once if the process exits), and always stops the server on the way out:
SIGTERM, then SIGKILL after a bounded wait.

Temp dirs are made under /tmp with short names: a unix socket path must fit in
108 bytes, which pytest's ``tmp_path`` does not promise.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from anvilfs.client import Client
from anvilfs.ninep import Dialect

from .vm import wait_for_unix_socket

REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass
class AnvilServer:
    proc: subprocess.Popen
    base: Path  # temp dir holding everything below
    namespace: Path  # $NAMESPACE for the client: the socket is namespace/agent
    state: Path
    trace_path: Path
    returncode: int | None = field(default=None)  # set by stop()

    @property
    def socket(self) -> Path:
        return self.namespace / "agent"

    @property
    def address(self) -> str:
        """The plan9 dial string of the unix socket, for ``anvilfs -a``."""
        return f"unix!{self.socket}"

    def env(self) -> dict[str, str]:
        return os.environ | {"NAMESPACE": str(self.namespace)}

    def connect(self, uname: str = "tester", *, dialect: Dialect = Dialect.P2000, timeout: float = 30) -> Client:
        """A client attached as ``uname``; close it, or use it as a context manager (``with srv.connect() as c``).

        Every reply must come within ``timeout`` seconds (the socket's timeout): a
        server that stops answering fails the test instead of hanging it.
        """
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(timeout)
            sock.connect(str(self.socket))
            return Client(sock, uname=uname, dialect=dialect)
        except BaseException:
            sock.close()  # a refused or failed attach leaves no socket open
            raise

    def run_cli(
        self, *args: str, input: str | None = None, timeout: float = 30,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """``python -m anvilfs ARGS`` with NAMESPACE pointing at this server (``env`` overrides)."""
        return subprocess.run(
            [sys.executable, "-m", "anvilfs", *args],
            input=input if input is not None else "",
            capture_output=True,
            text=True,
            env=self.env() | (env or {}),
            cwd=REPO_ROOT,
            timeout=timeout,
        )

    def trace(self) -> str:
        """The server's stderr so far: its log lines and, with --trace, every 9P message."""
        try:
            return self.trace_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def trace_tail(self, lines: int = 150) -> str:
        text = self.trace().splitlines()
        return "\n".join(["--- anvilfs trace (tail) ---", *text[-lines:]])

    def stop(self, *, sig: int = signal.SIGTERM, timeout: float = 10) -> int:
        """Send ``sig``; SIGKILL if still running after ``timeout`` s. Returns the exit status."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=timeout)
        self.returncode = self.proc.returncode
        return self.returncode


def start_server(
    base: Path,
    *,
    namespace: Path | None = None,
    state: Path | None = None,
    extra_args: Sequence[str] = (),
    trace: bool = True,
    timeout: float = 20,
    log_name: str = "server.trace",
    env: dict[str, str] | None = None,
    wrap: Sequence[str] = (),
) -> AnvilServer:
    """Start ``anvilfs serve`` and return once its socket accepts connections (``env`` adds to its environment).

    ``wrap``: a command line to run the server under (``strace ... --``); ``proc`` is then that command.
    """
    namespace = namespace or base / "ns"
    state = state or base / "state"
    trace_path = base / log_name
    before = _identity(namespace / "agent")  # a stale (or live) socket already there
    argv = [*wrap, sys.executable, "-m", "anvilfs", "serve",
            "--namespace", str(namespace), "--state", str(state), *extra_args]
    if trace:
        argv.append("--trace")
    # the user's own configuration must not leak into tests: an empty config dir
    # (env: more for the server and the agents it starts, e.g. a CLI's endpoint and HOME)
    env = os.environ | {"XDG_CONFIG_HOME": str(base / "xdg-config")} | (env or {})
    with open(trace_path, "ab") as err:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=err, stderr=err, cwd=REPO_ROOT, env=env)
    srv = AnvilServer(proc, base, namespace, state, trace_path)
    try:
        deadline = time.monotonic() + timeout
        # A connect() to an old socket must not count: wait for this server's own file.
        while before is not None and _identity(srv.socket) == before:
            if proc.poll() is not None:
                raise RuntimeError(f"server exited with {proc.returncode} before listening")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{srv.socket} not replaced after {timeout}s")
            time.sleep(0.02)  # poll interval, bounded by the deadline
        wait_for_unix_socket(srv.socket, timeout=max(deadline - time.monotonic(), 0.1), proc=proc)
    except BaseException as exc:
        srv.stop(sig=signal.SIGKILL)
        raise RuntimeError(f"anvilfs serve did not come up: {exc}\n{srv.trace()}") from exc
    return srv


def _identity(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    return (st.st_dev, st.st_ino, st.st_ctime_ns)


@contextlib.contextmanager
def anvil_server(
    *, extra_args: Sequence[str] = (), trace: bool = True, keep: bool = False, timeout: float = 20,
    env: dict[str, str] | None = None,
) -> Iterator[AnvilServer]:
    """A server in fresh temp dirs, stopped (SIGTERM, then SIGKILL) and cleaned up afterwards."""
    base = Path(tempfile.mkdtemp(prefix="anvil."))
    try:
        srv = start_server(base, extra_args=extra_args, trace=trace, timeout=timeout, env=env)
        try:
            yield srv
        finally:
            srv.stop()
    finally:
        if not keep:
            shutil.rmtree(base, ignore_errors=True)

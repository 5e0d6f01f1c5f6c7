"""Run shell snippets in a QEMU guest whose Linux v9fs client mounts a 9P server.

A thin wrapper over ``v9fs-guest.sh`` (beside this file; its header documents the
transport and the knobs). The 9P server under test must already be listening on
a host unix socket, in another process: these calls block.

    ensure_assets()                       # once per test session: kernel + initramfs
    r = run_in_guest(sock, "cat list")    # GuestResult(returncode, output, log)

Errors: ``GuestSetupError`` when the harness itself cannot run (missing packages,
no assets, QEMU failure); ``GuestTimeout`` (a subclass) when the guest did not
finish in time. A failed mount is a result, not an error: ``mounted`` is False
and ``returncode`` is 126.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

SCRIPT = Path(__file__).with_name("v9fs-guest.sh")
INSTALL_HINT = "apt-get update && apt-get install -y qemu-system-x86 busybox-static"
MOUNT_FAILED = 126


class GuestSetupError(RuntimeError):
    """The guest could not be run at all; the message says what is missing."""


class GuestTimeout(GuestSetupError):
    """The guest did not finish within its timeout."""


@dataclass(frozen=True, slots=True)
class GuestResult:
    returncode: int  # the snippet's exit status, or 126 if the mount failed
    output: str  # the snippet's stdout and stderr, merged (or mount's error)
    log: str = ""  # the harness's own diagnostics (stderr of v9fs-guest.sh)
    mounted: bool = True


def ensure_assets(*, timeout: float = 900) -> None:
    """Build (or find) the cached guest kernel and initramfs; safe to run concurrently."""
    if shutil.which("qemu-system-x86_64") is None:
        raise GuestSetupError(f"qemu-system-x86_64 not found: {INSTALL_HINT}")
    proc = _run([str(SCRIPT), "--build-assets"], os.environ.copy(), timeout)
    if proc.returncode != 0:
        raise GuestSetupError(
            f"building the v9fs guest assets failed (rc {proc.returncode}); "
            f"needs {INSTALL_HINT} and the Debian archive:\n{proc.stderr}"
        )


def run_in_guest(
    socket_path: str | os.PathLike[str],
    snippet: str,
    *,
    version: str = "9p2000.L",
    opts: str = "",
    aname: str = "",
    timeout: float = 180,
) -> GuestResult:
    """Boot a guest, mount the 9P server at ``socket_path``, run ``snippet`` there.

    The snippet runs under busybox sh as root, with cwd = the mount point
    ($V9_MNT). ``version`` is the v9fs dialect (9p2000.L, 9p2000.u, 9p2000) and
    ``opts`` extra mount options, comma-separated.
    """
    ensure_assets()
    with tempfile.TemporaryDirectory(prefix="v9fs-status.") as tmp:
        status_file = Path(tmp) / "status"
        env = os.environ | {
            "V9_VERSION": version,
            "V9_OPTS": opts,
            "V9_ANAME": aname,
            "V9_TIMEOUT": str(int(timeout)),
            "V9_STATUS_FILE": str(status_file),
        }
        argv = [str(SCRIPT), os.fspath(socket_path), snippet]
        proc = _run(argv, env, timeout + 30)
        status = status_file.read_text().split() if status_file.exists() else []
    return _result(proc, status, timeout)


def wait_for_unix_socket(
    path: str | os.PathLike[str], *, timeout: float = 10, proc: subprocess.Popen | None = None
) -> None:
    """Return once a connect() to ``path`` succeeds; fail after ``timeout`` seconds.

    With ``proc`` (the server's process), fail at once if it has exited.
    """
    deadline = time.monotonic() + timeout
    while True:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before listening on {path}")
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            try:
                s.connect(os.fspath(path))
                return
            except (FileNotFoundError, ConnectionRefusedError):
                pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"nothing listening on {path} after {timeout}s")
        time.sleep(0.02)  # poll interval, not synchronisation: bounded by the deadline


def _result(
    proc: subprocess.CompletedProcess[str], status: list[str], timeout: float
) -> GuestResult:
    kind = status[0] if status else "setup"
    if kind == "timeout":
        raise GuestTimeout(f"guest did not finish in {timeout}s:\n{proc.stdout}\n{proc.stderr}")
    if kind not in ("snippet", "mount"):
        raise GuestSetupError(
            f"v9fs guest failed to run (rc {proc.returncode}):\n{proc.stderr}{proc.stdout}"
        )
    return GuestResult(proc.returncode, proc.stdout, proc.stderr, mounted=kind == "snippet")


def _run(argv: list[str], env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    """subprocess.run, but a timeout kills the whole process group (QEMU too)."""
    with subprocess.Popen(
        argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, errors="replace", start_new_session=True,
    ) as p:
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(p.pid)
            out, err = p.communicate(timeout=30)  # the group is dead: its pipes close
            msg = f"{argv[0]} still running after {timeout}s:\n{out}\n{err}"
            raise GuestTimeout(msg) from None
        except BaseException:
            _kill_group(p.pid)
            raise
    return subprocess.CompletedProcess(argv, p.returncode, out, err)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def sections(output: str) -> dict[str, tuple[list[str], int | None]]:
    """Split the snippet's output at the markers: step -> (lines, the step's exit status)."""
    out: dict[str, tuple[list[str], int | None]] = {}
    name, lines = None, []
    for line in output.splitlines() + ["@@ <eof>"]:
        if line.startswith("@@ "):
            if name is not None:
                rc = None
                if lines and (m := re.fullmatch(r"rc=(\d+)", lines[-1])):
                    rc, lines = int(m.group(1)), lines[:-1]
                out[name] = (lines, rc)
            name, lines = line[3:], []
        else:
            lines.append(line)
    return out

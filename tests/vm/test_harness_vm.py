"""The QEMU/v9fs harness itself, checked against a real 9P2000.L server: diod.

If these fail, the harness is broken, not anvilfs. Recipe: benchmarks/diod.md.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.prerequisites import require
from harness.vm import ensure_assets, run_in_guest, wait_for_unix_socket

pytestmark = pytest.mark.vm

HELLO = "hello from diod 9P2000.L\n"


@dataclass(frozen=True)
class Diod:
    socket: Path
    export: Path


@pytest.fixture(scope="session")
def guest_assets() -> None:
    ensure_assets()


@pytest.fixture(scope="module")
def diod(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Diod]:
    exe = require("diod")
    base = tmp_path_factory.mktemp("diod")
    export, sock = base / "export", base / "sock"
    export.mkdir()
    (export / "hello").write_text(HELLO)
    # -S -U root: every attach acts as root, whatever uname the guest sends
    # (v9fs attaches as "nobody", who cannot enter pytest's 0700 temp dirs).
    argv = [exe, "-f", "-n", "-S", "-U", "root", "-c", "/dev/null", "-L", "stderr",
            "-l", str(sock), "-e", str(export)]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_unix_socket(sock, timeout=10, proc=proc)
        yield Diod(sock, export)
    finally:
        proc.kill()
        _, err = proc.communicate(timeout=10)
        print(f"diod stderr:\n{err}")


def test_guest_reads_and_writes_through_diod(guest_assets: None, diod: Diod) -> None:
    r = run_in_guest(diod.socket, "cat hello; ls -l; echo written > new; cat new",
                     aname=str(diod.export))
    assert r.returncode == 0, r
    assert r.mounted
    lines = r.output.splitlines()
    assert lines[0] == HELLO.rstrip("\n")
    assert any(line.endswith(" hello") and f" {len(HELLO)} " in line for line in lines), r.output
    assert lines[-1] == "written"
    assert (diod.export / "new").read_text() == "written\n"  # the write reached the server


def test_snippet_status_and_output_are_returned(guest_assets: None, diod: Diod) -> None:
    r = run_in_guest(diod.socket, "echo out-$((6 * 7)); echo err-$((6 * 7)) >&2; false",
                     aname=str(diod.export))
    assert r.mounted
    assert r.returncode == 1, r
    assert r.output.splitlines() == ["out-42", "err-42"]


def test_mount_failure_is_reported(guest_assets: None, diod: Diod) -> None:
    r = run_in_guest(diod.socket, "echo should-not-run", aname=str(diod.export / "missing"))
    assert not r.mounted
    assert r.returncode == 126
    assert "should-not-run" not in r.output
    assert "mount -t 9p" in r.output

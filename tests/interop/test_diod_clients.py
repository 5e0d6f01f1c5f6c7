"""diod's own command-line clients (Debian package diod) against a running anvilfs.

diodls and diodcat speak 9P2000.L and send Tauth before Tattach; only an
ENOENT answer tells them that no authentication is needed (SPEC §2).
"""

from __future__ import annotations

import shutil
import subprocess

from harness.server import AnvilServer

_SBIN = "/usr/sbin:/sbin:/usr/local/sbin"


def diod_tool(name: str) -> str:
    exe = shutil.which(name) or shutil.which(name, path=_SBIN)
    assert exe, f"{name} is not installed: apt-get install diod"
    return exe


def run_diod_tool(srv: AnvilServer, name: str, *args: str) -> subprocess.CompletedProcess[str]:
    # -t: the tool's own deadline; timeout=: ours, should the tool ignore it
    argv = [diod_tool(name), "-t", "20", "-s", str(srv.socket), "-a", "agent", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)


def test_diodls_lists_the_tree(anvil_server: AnvilServer) -> None:
    made = anvil_server.run_cli("write", "agent/ctl", "new sim /tmp name=dbot")
    assert made.returncode == 0, made.stderr
    proc = run_diod_tool(anvil_server, "diodls")
    assert proc.returncode == 0, proc.stderr
    assert {"ctl", "list", "events", "backends", "roles", "errors", "dbot"} <= set(proc.stdout.split()), proc.stdout


def test_diodcat_prints_list(anvil_server: AnvilServer) -> None:
    made = anvil_server.run_cli("write", "agent/ctl", "new sim /tmp name=dbot")
    assert made.returncode == 0, made.stderr
    proc = run_diod_tool(anvil_server, "diodcat", "list")
    assert proc.returncode == 0, proc.stderr
    name, backend, status = proc.stdout.split()[:3]
    assert (name, backend) == ("dbot", "sim") and status in ("starting", "idle"), proc.stdout


def test_diodls_long_shows_owner_only_modes(anvil_server: AnvilServer) -> None:
    proc = run_diod_tool(anvil_server, "diodls", "-l")
    assert proc.returncode == 0, proc.stderr
    modes = {line.split()[-1]: line.split()[0].rstrip(".") for line in proc.stdout.splitlines()}
    assert modes["ctl"] == "-rw-------" and modes["list"] == "-r--------", proc.stdout

"""Linux's v9fs, in a QEMU guest, mounting a running anvilfs (tests/harness/vm.py).

One guest boot per dialect runs SNIPPET, which does every step and prints a
marker line ("@@ step") before each, so one boot (~2.5 s) checks the lot.
The "flush" step interrupts a blocked read of events (SIGTERM; v9fs sends
Tflush) once the guest's kernel shows cat waiting for the server's answer to
its read: in p9_client_rpc (/proc/PID/wchan) inside read or sendfile (busybox
cat uses sendfile; /proc/PID/syscall), polled with a deadline. A fixed delay
instead lost the race on a loaded machine: cat had not read yet, no Tflush.
"""

from __future__ import annotations

import os

import pytest

from harness.server import AnvilServer
from harness.vm import ensure_assets, run_in_guest, sections

pytestmark = pytest.mark.vm

SNIPPET = r"""
step() { echo "@@ $1"; }
blocked_in_read() {  # PID: until its read waits for the server's answer (30 s deadline)
  i=0
  until [ "$(cat /proc/$1/wchan)" = p9_client_rpc ] && grep -qE '^(0|40) ' /proc/$1/syscall; do
    i=$((i+1)); [ $i -gt 600 ] && echo "cat's read never blocked" && return; usleep 50000
  done
}
step ls;     ls -l;                                  echo "rc=$?"
step list;   cat list;                               echo "rc=$?"
step new;    echo 'new sim /tmp name=vmbot' > ctl;   echo "rc=$?"
step in;     echo hello > vmbot/in;                  echo "rc=$?"
step wait;   cat vmbot/wait;                         echo "rc=$?"
step out;    cat vmbot/out;                          echo "rc=$?"
step list2;  cat list;                               echo "rc=$?"
step bogus;  echo bogus > ctl;                       echo "rc=$?"
step ls2;    ls -l vmbot;                            echo "rc=$?"
step lsd;    ls -ld vmbot;                           echo "rc=$?"
step flush;  cat events & pid=$!; blocked_in_read $pid; kill $pid; wait $pid; echo "rc=$?"
step after;  cat vmbot/wait;                         echo "rc=$?"
step end
"""
STEPS = ["ls", "list", "new", "in", "wait", "out", "list2", "bogus", "ls2", "lsd", "flush", "after", "end"]


@pytest.fixture(scope="session")
def guest_assets() -> None:
    ensure_assets()


@pytest.mark.parametrize("version", ["9p2000.L", "9p2000.u", "9p2000"])
def test_v9fs_mount(guest_assets: None, anvil_server: AnvilServer, version: str) -> None:
    srv = anvil_server
    r = run_in_guest(srv.socket, SNIPPET, version=version, timeout=90)
    why = f"{r}\n{srv.trace_tail()}"
    assert r.mounted, why
    s = sections(r.output)
    assert list(s) == STEPS, why

    # ls -l: the root's files with truthful modes (busybox: MODE LINKS UID GID SIZE DATE.. NAME)
    lines, rc = s["ls"]
    assert rc == 0, why
    modes = {ln.split()[-1]: ln.split()[0] for ln in lines if not ln.startswith("total")}
    assert {"ctl", "list", "events", "backends", "errors"} <= set(modes), why
    assert modes["ctl"] == "-rw-------", why
    assert modes["list"] == "-r--------", why
    assert modes["events"] == "-r--------", why

    assert s["list"] == ([], 0), why  # no sessions yet: empty, and read to EOF
    assert s["new"] == ([], 0), why  # shell redirection: O_TRUNC accepted, command done
    assert s["in"] == ([], 0), why
    assert s["wait"] == (["await"], 0), why

    out, rc = s["out"]
    assert rc == 0 and out and out[0].startswith("[simulated]"), why
    assert any("hello" in ln for ln in out), why

    rows = [ln.split() for ln in s["list2"][0]]
    assert s["list2"][1] == 0, why
    assert [row[:3] for row in rows] == [["vmbot", "sim", "await"]], why
    assert "simulated" in rows[0], why

    lines, rc = s["bogus"]
    assert rc is not None and rc != 0, f"echo bogus > ctl must fail\n{why}"
    assert any("write error" in ln for ln in lines), why
    if version != "9p2000":  # plain 9P2000 has no errno: Linux maps unknown text to ESERVERFAULT
        assert any(ln.endswith("write error: Invalid argument") for ln in lines), why

    lines, rc = s["ls2"]
    assert rc == 0, why
    modes = {ln.split()[-1]: ln.split()[0] for ln in lines if not ln.startswith("total")}
    assert modes.get("ctl") == "--w-------" and modes.get("in") == "--w-------", why
    assert modes.get("out") == "-r--------" and modes.get("wait") == "-r--------", why
    assert modes.get("status") == "-rw-------", why
    lines, rc = s["lsd"]
    assert rc == 0 and lines and lines[0].split()[0] == "dr-x------", why

    # a blocked read interrupted in the guest is flushed (Tflush/Rflush); the mount still works
    # rc 143: cat died of the SIGTERM while its read waited. Whether busybox sh
    # also prints "Terminated" depends on when it reaps the child (during
    # `kill` or during `wait`), a race of the guest's shell, not of the server.
    lines, rc = s["flush"]
    assert rc == 143 and lines in ([], ["Terminated"]), why
    assert s["after"] == (["await"], 0), why
    trace = srv.trace()
    assert " -> Tflush " in trace and " <- Rflush " in trace, why

    # 9P2000.L carries only an errno: the full text is in agent/errors
    errors = srv.run_cli("read", "agent/errors")
    assert errors.returncode == 0, errors.stderr
    bogus = [ln for ln in errors.stdout.splitlines() if "'bogus'" in ln]
    assert bogus, f"no error for 'bogus' in agent/errors:\n{errors.stdout}\n{why}"
    assert "unknown command 'bogus'" in bogus[-1] and "new <backend> <cwd>" in bogus[-1], bogus


ACCESS_SNIPPET = r"""
mkdir -p /etc
echo 'root:x:0:0::/:/bin/sh' > /etc/passwd; echo 'nobody:x:65534:65534::/:/bin/sh' >> /etc/passwd
echo 'root:x:0:' > /etc/group; echo 'nogroup:x:65534:' >> /etc/group
step() { echo "@@ $1"; }
step owner;   echo 'new sim /tmp name=abot' > ctl && cat list;   echo "rc=$?"
step other;   su -s /bin/sh nobody -c "cat $V9_MNT/list";          echo "rc=$?"
step end
"""


def test_v9fs_access_uid_admits_only_that_user(guest_assets: None, anvil_server: AnvilServer) -> None:
    # the README's mount line: access=<uid> of the server's user; a second guest user is refused
    srv = anvil_server
    r = run_in_guest(srv.socket, ACCESS_SNIPPET, version="9p2000.L", opts=f"access={os.getuid()}", timeout=90)
    why = f"{r}\n{srv.trace_tail()}"
    assert r.mounted, why
    s = sections(r.output)
    lines, rc = s["owner"]
    assert rc == 0 and lines and lines[0].startswith("abot sim "), why
    lines, rc = s["other"]
    assert rc != 0 and not any(ln.startswith("abot") for ln in lines), why

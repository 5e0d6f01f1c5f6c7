"""Third-party 9P clients against a running anvilfs.

python-9p speaks 9P2000; p9fs speaks 9P2000, 9P2000.u and 9P2000.L. Each runs
from its own virtualenv through its JSON driver (tests/harness/venvs.py,
tests/clients/*_driver.py), one driver process per case, over the server's
unix socket.
"""

from __future__ import annotations

import errno
import os

import pytest

from harness import venvs
from harness.server import AnvilServer

pytestmark = pytest.mark.clients

DMDIR = 0x80000000
QTDIR = 0x80
ROOT_MODES = {"ctl": 0o600, "list": 0o400, "events": 0o400, "backends": 0o400, "errors": 0o400}
BAD_TEXT = "unknown command 'bogus'"
USAGE = "new <backend> <cwd>"

OPS = [
    {"op": "read", "path": "list"},  # 0
    {"op": "write", "path": "ctl", "data": "new sim /tmp name=cbot\n"},  # 1
    {"op": "write", "path": "cbot/in", "data": "hello\n"},  # 2
    {"op": "read", "path": "cbot/wait"},  # 3
    {"op": "read", "path": "cbot/out"},  # 4
    {"op": "read", "path": "list"},  # 5
    {"op": "ls", "path": ""},  # 6
    {"op": "stat", "path": "list"},  # 7
    {"op": "write", "path": "ctl", "data": "bogus\n"},  # 8
    {"op": "read", "path": "errors"},  # 9
    {"op": "read", "path": "nope"},  # 10
    {"op": "read", "path": "list"},  # 11: errors did not wedge the connection
]

CASES = [("python-9p", "9P2000"), ("p9fs", "9P2000"), ("p9fs", "9P2000.u"), ("p9fs", "9P2000.L")]


@pytest.mark.parametrize(("client", "dialect"), CASES, ids=[f"{c}-{d}" for c, d in CASES])
def test_client_drives_anvilfs(anvil_server: AnvilServer, client: str, dialect: str) -> None:
    args = ["--unix", str(anvil_server.socket)]
    if client == "p9fs":
        args += ["--dialect", dialect]
    results, proc = venvs.run_driver(client, OPS, *args)
    why = f"{results}\nstderr: {proc.stderr}\n{anvil_server.trace_tail()}"
    assert proc.returncode == 0, why
    assert len(results) == len(OPS), why
    r = dict(enumerate(results))
    for i, op in enumerate(OPS):
        assert r[i]["op"] == op["op"], why
    for i in (0, 1, 2, 3, 4, 5, 6, 7, 9, 11):
        assert r[i]["ok"] is True, (i, r[i], why)
    dotL = dialect == "9P2000.L"

    assert r[0]["data"] == "", why
    assert r[1]["count"] == len(OPS[1]["data"]) and r[2]["count"] == len(OPS[2]["data"]), why
    assert r[3]["data"] == "await\n", why
    assert r[4]["data"].startswith("[simulated]") and "hello" in r[4]["data"], why
    row = r[5]["data"].split()
    assert row[:3] == ["cbot", "sim", "await"] and "simulated" in row, why

    entries = {e["name"]: e for e in r[6]["entries"]}
    assert set(ROOT_MODES) | {"cbot"} <= set(entries), why
    for name, perm in ROOT_MODES.items():
        assert entries[name]["mode"] & 0o777 == perm, (name, oct(entries[name]["mode"]))
        assert not entries[name]["dir"] and not entries[name]["mode"] & DMDIR, name
    assert entries["cbot"]["dir"] and entries["cbot"]["qid"][0] & QTDIR, entries["cbot"]
    assert entries["cbot"]["mode"] & 0o777 == 0o500, oct(entries["cbot"]["mode"])
    if dotL:
        assert entries["list"]["unix_mode"] == 0o100400, oct(entries["list"]["unix_mode"])
        assert entries["ctl"]["unix_mode"] == 0o100600, oct(entries["ctl"]["unix_mode"])
        assert entries["cbot"]["unix_mode"] == 0o040500, oct(entries["cbot"]["unix_mode"])

    st = r[7]["stat"]
    assert st["mode"] & 0o777 == 0o400 and not st["dir"], st
    assert st["qid"] == entries["list"]["qid"], (st, entries["list"])
    if not dotL:
        assert st["name"] == "list", st

    # the bad command: Rerror with the server's text, or (9P2000.L) an errno
    bad = r[8]
    assert bad["ok"] is False and bad["remote"] is True and bad["stage"] == "write", bad
    if dotL:
        assert bad["errno"] == errno.EINVAL, bad
        assert bad["error"] == os.strerror(errno.EINVAL), bad
    else:
        assert BAD_TEXT in bad["error"] and USAGE not in bad["error"], bad  # the usage goes to errors only
    # ... and its full text, with the usage, is in errors whatever the dialect
    assert any(BAD_TEXT in ln and USAGE in ln for ln in r[9]["data"].splitlines()), r[9]

    missing = r[10]
    assert missing["ok"] is False and missing["remote"] is True and missing["stage"] == "walk", missing
    if dotL:
        assert missing["errno"] == errno.ENOENT, missing
    else:
        assert "nope" in missing["error"], missing

    assert r[11]["data"] == r[5]["data"], why


FSSPEC_OPS = [
    {"op": "fsspec_write", "path": "ctl", "data": "new sim /tmp name=fbot\n"},  # 0
    {"op": "fsspec_write", "path": "fbot/in", "data": "hello from fsspec\n"},  # 1
    {"op": "read", "path": "fbot/wait"},  # 2
    {"op": "read", "path": "fbot/out"},  # 3
    {"op": "read", "path": "fbot/log"},  # 4
    {"op": "fsspec_write", "path": "notes", "data": "x\n"},  # 5: a name that is not there
]


@pytest.mark.parametrize("dialect", ["9P2000.u", "9P2000.L"])
def test_p9fs_open_for_writing_creates_then_opens(anvil_server: AnvilServer, dialect: str) -> None:
    # fs.open(path, "wb") creates the existing name first (SPEC §4); in 9P2000.u with OREAD
    results, proc = venvs.run_driver("p9fs", FSSPEC_OPS, "--unix", str(anvil_server.socket), "--dialect", dialect)
    why = f"{results}\nstderr: {proc.stderr}\n{anvil_server.trace_tail()}"
    assert proc.returncode == 0 and len(results) == len(FSSPEC_OPS), why
    r = dict(enumerate(results))
    for i in range(5):
        assert r[i]["ok"] is True, (i, r[i], why)
    assert r[2]["data"] == "await\n", why
    assert "hello from fsspec" in r[3]["data"], why
    # the create's own open and close wrote nothing: one prompt, not two
    assert "--- prompt 1 " in r[4]["data"] and "--- prompt 2 " not in r[4]["data"], r[4]["data"]
    refused = r[5]
    assert refused["ok"] is False and refused["remote"] is True, refused
    if dialect == "9P2000.L":
        assert refused["errno"] == errno.EPERM, refused
    else:
        assert "cannot create 'notes'" in refused["error"], refused

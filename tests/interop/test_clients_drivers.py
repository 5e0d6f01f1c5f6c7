"""The third-party client drivers (tests/clients) work against real servers: p9fs (9P2000.L) against
diod, and python-9p (9P2000) plus p9fs (9P2000, 9P2000.u) against the 9P2000/.u file server that ships
inside p9fs (``python -m py9p``), over UNIX sockets and TCP."""

from __future__ import annotations

import contextlib
import json
import os
import select
import socket
import subprocess
import time
from pathlib import Path

import pytest

from harness import venvs  # as every test imports it: `tests.harness` would be a second copy of the module
from harness.ninep_values import DMDIR, QTDIR
from harness.prerequisites import require
from harness.processes import stop

pytestmark = pytest.mark.clients


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _can_connect(addr) -> bool:
    family = socket.AF_UNIX if isinstance(addr, str) else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.settimeout(1)
        try:
            s.connect(addr)
        except OSError:
            return False
        return True


@contextlib.contextmanager
def running_server(cmd: list[str], addr, logfile: Path, deadline: float = 20.0):
    """Start ``cmd``; yield once ``addr`` accepts connections; always kill it."""
    with open(logfile, "wb") as log:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    try:
        end = time.monotonic() + deadline
        while not (
            (not isinstance(addr, str) or os.path.exists(addr)) and _can_connect(addr)
        ):
            try:
                rc = proc.wait(timeout=0.05)  # bounded poll; also notices an early exit
            except subprocess.TimeoutExpired:
                rc = None
            if rc is not None:
                pytest.fail(f"{cmd[0]} exited with {rc} before listening:\n{logfile.read_text()}")
            if time.monotonic() > end:
                pytest.fail(f"{cmd[0]} not listening on {addr} after {deadline}s:\n{logfile.read_text()}")
        yield proc
    finally:
        stop(proc, grace=5)


def _diod() -> str:
    return require("diod")


BIG = "".join(f"line {i:05d} of the big file\n" for i in range(2500))  # ~70 kB: many Treads


BLOB = "".join(chr(ord("a") + i % 26) for i in range(20000))  # 20 kB: several Twrites


def make_tree(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "list").write_text("alpha\nbeta\n")
    (root / "ctl").write_text("")
    (root / "big").write_text(BIG)
    (root / "bin").write_bytes(bytes(range(256)))
    (root / "sub").mkdir()
    (root / "sub" / "inner").write_text("x")
    return root


@pytest.fixture
def tree(tmp_path) -> Path:
    return make_tree(tmp_path / "export")


def _sock_path(tmp_path: Path, name: str) -> str:
    path = str(tmp_path / name)
    assert len(path) < 100, "UNIX socket path too long"
    return path


@contextlib.contextmanager
def diod_server(tmp_path: Path, export: Path, transport: str):
    if transport == "unix":
        addr = _sock_path(tmp_path, "diod.sock")
        listen = addr
    else:
        port = _free_port()
        addr = ("127.0.0.1", port)
        listen = f"127.0.0.1:{port}"
    cmd = [_diod(), "-f", "-n", "-c", "/dev/null", "-L", "stderr", "-l", listen, "-e", str(export)]
    with running_server(cmd, addr, tmp_path / "diod.log"):
        yield ["--unix", addr] if transport == "unix" else ["--tcp", listen]


@contextlib.contextmanager
def p9fs_server(tmp_path: Path, p9fs_python: Path, export: Path, transport: str, dotu: bool):
    """The 9P2000(.u) file server shipped in p9fs: ``python -m py9p``."""
    cmd = [str(p9fs_python), "-I", "-m", "py9p", "-w", "-r", str(export)]
    if dotu:
        cmd.append("-D")
    if transport == "unix":
        addr = _sock_path(tmp_path, "p9fs.sock")
        cmd += ["-a", addr, "-p", str(0o600)]  # -p is the socket's chmod mode for UNIX sockets
        args = ["--unix", addr]
    else:
        port = _free_port()
        addr = ("127.0.0.1", port)
        cmd += ["-a", "127.0.0.1", "-p", str(port)]
        args = ["--tcp", f"127.0.0.1:{port}"]
    with running_server(cmd, addr, tmp_path / "p9fs-server.log"):
        yield args


OPS = [
    {"op": "version"},
    {"op": "read", "path": "list"},
    {"op": "read", "path": "nope"},
    {"op": "read", "path": "big"},
    {"op": "read", "path": "bin"},
    {"op": "read", "path": "list", "offset": 6, "count": 4},
    {"op": "write", "path": "ctl", "data": "new sim /tmp name=bot1\n"},
    {"op": "read", "path": "ctl"},
    {"op": "write", "path": "sub", "data": "x"},
    {"op": "ls", "path": ""},
    {"op": "stat", "path": "list"},
    {"op": "stat", "path": "sub"},
    {"op": "walk", "path": "sub/inner"},
    {"op": "create", "path": "sub/made", "data": "made here"},
    {"op": "write", "path": "sub/made", "data": "MADE", "trunc": True},
    {"op": "read", "path": "sub/made"},
    {"op": "create", "path": "sub/blob", "data": BLOB},
    {"op": "read", "path": "sub/blob"},
    {"op": "create", "path": "sub/dir2", "perm": DMDIR | 0o755, "mode": 0},
    {"op": "ls", "path": "sub"},
    {"op": "remove", "path": "sub/made"},
    {"op": "remove", "path": "sub/dir2"},
    {"op": "remove", "path": "nope"},
    {"op": "bogus"},
    {"op": "read", "path": "list"},
]


def check_results(results: list[dict], proc, export: Path, *, version: str, enoent, eisdir):
    """``enoent``/``eisdir``: dict of fields the server's error must carry."""
    assert proc.returncode == 0, proc.stderr
    assert len(results) == len(OPS), (results, proc.stderr)
    r = dict(enumerate(results))
    for i, op in enumerate(OPS):
        assert r[i]["op"] == op["op"], (i, r[i])
    ok = lambda i: r[i]["ok"] is True  # noqa: E731

    assert ok(0) and r[0]["version"] == version and r[0]["msize"] == 8192
    assert ok(1) and r[1]["data"] == "alpha\nbeta\n"
    assert r[2]["ok"] is False and r[2]["stage"] == "walk" and r[2]["remote"] is True
    assert {k: r[2].get(k) for k in enoent} == enoent, r[2]
    assert ok(3) and r[3]["data"] == BIG
    assert ok(4) and r[4]["data_hex"] == bytes(range(256)).hex()
    assert ok(5) and r[5]["data"] == "beta"
    assert ok(6) and r[6]["count"] == 23
    assert ok(7) and r[7]["data"] == "new sim /tmp name=bot1\n"
    assert r[8]["ok"] is False and r[8]["stage"] == "open" and r[8]["remote"] is True
    assert {k: r[8].get(k) for k in eisdir} == eisdir, r[8]

    assert ok(9)
    entries = {e["name"]: e for e in r[9]["entries"]}
    assert set(entries) == {"list", "ctl", "big", "bin", "sub"}
    assert entries["sub"]["dir"] and entries["sub"]["mode"] & DMDIR and entries["sub"]["qid"][0] & QTDIR
    assert not entries["list"]["dir"] and entries["list"]["length"] == 11
    assert entries["big"]["length"] == len(BIG)
    assert all(0 <= e["qid"][0] <= 0xFF and e["qid"][2] >= 0 for e in entries.values())
    assert entries["sub"]["qid"][0] == QTDIR and entries["list"]["qid"][0] == 0

    assert ok(10) and r[10]["stat"]["length"] == 11 and not r[10]["stat"]["dir"]
    assert r[10]["stat"]["mode"] & 0o777 == 0o644
    assert ok(11) and r[11]["stat"]["dir"] and r[11]["stat"]["mode"] & DMDIR
    assert ok(12) and r[12]["complete"] and len(r[12]["qids"]) == 2 and r[12]["qids"][0][0] & QTDIR
    assert ok(13) and r[13]["count"] == len("made here")
    assert ok(14) and r[14]["count"] == 4
    assert ok(15) and r[15]["data"] == "MADE"
    assert ok(16) and r[16]["count"] == len(BLOB)
    assert ok(17) and r[17]["data"] == BLOB
    assert ok(18) and r[18]["qid"][0] & QTDIR
    assert ok(19) and {e["name"] for e in r[19]["entries"]} == {"inner", "made", "blob", "dir2"}
    assert ok(20) and ok(21)
    assert r[22]["ok"] is False and r[22]["remote"] is True and r[22]["stage"] == "walk"
    assert r[23]["ok"] is False and r[23]["remote"] is False and "unknown op" in r[23]["error"]
    assert ok(24) and r[24]["data"] == "alpha\nbeta\n"  # errors did not wedge the session

    # and the server really did it
    assert (export / "ctl").read_text() == "new sim /tmp name=bot1\n"
    assert (export / "sub" / "blob").read_text() == BLOB
    assert not (export / "sub" / "made").exists() and not (export / "sub" / "dir2").exists()


@pytest.mark.parametrize("transport", ["unix", "tcp"])
def test_p9fs_driver_9P2000L_against_diod(tmp_path, tree, p9fs_python, transport):
    with diod_server(tmp_path, tree, transport) as where:
        results, proc = venvs.run_driver(
            "p9fs", OPS, *where, "--dialect", "9P2000.L", "--aname", str(tree)
        )
    check_results(
        results, proc, tree, version="9P2000.L",
        enoent={"errno": 2, "error": os.strerror(2)},
        eisdir={"errno": 21, "error": os.strerror(21)},
    )  # fmt: skip
    # .L extras: Linux modes and nanosecond times from Tgetattr
    st = results[10]["stat"]
    assert st["unix_mode"] == 0o100644 and len(st["mtime"]) == 2


@pytest.mark.parametrize("dialect", ["9P2000", "9P2000.u"])
def test_p9fs_driver_reports_diod_refusing_dialect(tmp_path, tree, p9fs_python, dialect):
    with diod_server(tmp_path, tree, "unix") as where:
        results, proc = venvs.run_driver("p9fs", OPS[:2], *where, "--dialect", dialect, "--aname", str(tree))
    assert proc.returncode == 2, proc.stderr
    assert len(results) == 1
    assert results[0]["op"] == "connect" and results[0]["fatal"] is True and results[0]["ok"] is False
    assert results[0]["stage"] == "login"


@pytest.mark.parametrize("transport", ["unix", "tcp"])
def test_py9p_driver_against_p9fs_server(tmp_path, tree, py9p_python, p9fs_python, transport):
    with p9fs_server(tmp_path, p9fs_python, tree, transport, dotu=False) as where:
        results, proc = venvs.run_driver("python-9p", OPS, *where)
    check_results(
        results, proc, tree, version="9P2000",
        enoent={"error": "file not found"}, eisdir={"error": "is a directory"},
    )  # fmt: skip
    assert results[10]["stat"]["name"] == "list" and results[10]["stat"]["uid"]


@pytest.mark.parametrize("dialect", ["9P2000", "9P2000.u"])
def test_p9fs_driver_against_p9fs_server(tmp_path, tree, p9fs_python, dialect):
    dotu = dialect == "9P2000.u"
    with p9fs_server(tmp_path, p9fs_python, tree, "unix", dotu=dotu) as where:
        results, proc = venvs.run_driver("p9fs", OPS, *where, "--dialect", dialect)
    check_results(
        results, proc, tree, version=dialect,
        enoent={"error": "file not found"}, eisdir={"error": "is a directory"},
    )  # fmt: skip
    st = results[10]["stat"]
    assert st["name"] == "list"
    assert ("uidnum" in st) is dotu


def _readline(proc: subprocess.Popen, buf: bytearray, deadline: float) -> dict:
    fd = proc.stdout.fileno()
    while b"\n" not in buf:
        left = deadline - time.monotonic()
        assert left > 0, f"no result line before the deadline; got {bytes(buf)!r}"
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            chunk = os.read(fd, 65536)
            assert chunk, f"driver closed stdout; stderr: {proc.stderr.read()!r}"
            buf += chunk
    line, _, rest = bytes(buf).partition(b"\n")
    buf[:] = rest
    return json.loads(line)


@pytest.mark.parametrize("client", ["python-9p", "p9fs"])
def test_driver_answers_each_op_as_it_arrives(tmp_path, tree, p9fs_python, client):
    with p9fs_server(tmp_path, p9fs_python, tree, "unix", dotu=False) as where:
        proc = subprocess.Popen(
            venvs.driver_command(client, *where),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            buf = bytearray()
            deadline = time.monotonic() + 30
            proc.stdin.write(b'{"op": "read", "path": "list"}\n')
            proc.stdin.flush()
            assert _readline(proc, buf, deadline)["data"] == "alpha\nbeta\n"
            # a pretty-printed op spanning lines, sent after the first answer came back
            proc.stdin.write(b'{\n  "op": "write",\n  "path": "ctl",\n  "data": "go\\n"\n}\n')
            proc.stdin.flush()
            assert _readline(proc, buf, deadline) == {"op": "write", "count": 3, "ok": True}
            assert (tree / "ctl").read_text() == "go\n"
            proc.stdin.close()
            assert proc.wait(timeout=30) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=5)


@pytest.mark.parametrize("client", ["python-9p", "p9fs"])
def test_driver_reports_unreachable_server(tmp_path, client):
    results, proc = venvs.run_driver(client, [{"op": "version"}], "--unix", str(tmp_path / "nobody.sock"))
    assert proc.returncode == 2
    assert results == [
        {
            "op": "connect",
            "ok": False,
            "fatal": True,
            "stage": "connect",
            "error": results[0]["error"],
            "remote": False,
        }
    ]
    assert "FileNotFoundError" in results[0]["error"]

"""Checks for the third-party 9P client harness (tests/harness, tests/clients).

* the two client venvs (python-9p, p9fs) exist, are pinned and isolated, and
  their creation is cached and safe under concurrency;
* the python-9p codec oracle agrees with an independent spec-derived encoder
  (intro(5)) for every 9P2000 message type, round-trips, and frames as
  size[4] type[1] tag[2];
* the drivers work against real servers: p9fs (9P2000.L) against diod, and
  python-9p (9P2000) plus p9fs (9P2000, 9P2000.u) against the 9P2000/.u file
  server that ships inside p9fs (``python -m py9p``), over UNIX sockets and TCP.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import select
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness import venvs  # as every test imports it: `tests.harness` would be a second copy of the module
from harness.prerequisites import require
from harness.processes import stop

pytestmark = pytest.mark.clients

DMDIR = 0x80000000
QTDIR = 0x80
NOTAG = 0xFFFF
NOFID = 0xFFFFFFFF
U64 = (1 << 64) - 1
I64 = (1 << 63) - 1


# ---------------------------------------------------------------------------
# venvs
# ---------------------------------------------------------------------------

PROBE = r"""
import importlib.metadata as md, importlib.util, json, sys
def ver(d):
    try:
        return md.version(d)
    except md.PackageNotFoundError:
        return None
spec = importlib.util.find_spec("py9p")
print(json.dumps({"prefix": sys.prefix, "python-9p": ver("python-9p"), "p9fs": ver("p9fs"),
                  "py9p": spec.origin if spec else None}))
"""


def _probe(python: Path) -> dict:
    out = subprocess.run([str(python), "-I", "-c", PROBE], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture(scope="session")
def py9p_python() -> Path:
    return venvs.ensure_client_venv("python-9p")


@pytest.fixture(scope="session")
def p9fs_python() -> Path:
    return venvs.ensure_client_venv("p9fs")


def test_client_venvs_are_separate_pinned_and_not_in_project_venv(py9p_python, p9fs_python):
    import importlib.util

    root = venvs.venvs_root().resolve()
    a, b = _probe(py9p_python), _probe(p9fs_python)
    assert Path(a["prefix"]).resolve() == root / "python-9p"
    assert Path(b["prefix"]).resolve() == root / "p9fs"
    assert (a["python-9p"], a["p9fs"]) == ("0.1.0", None)
    assert (b["p9fs"], b["python-9p"]) == ("0.0.4", None)
    # each venv's py9p is its own package
    assert a["py9p"].startswith(a["prefix"]) and b["py9p"].startswith(b["prefix"])
    assert (Path(a["py9p"]).parent / "libpy9p.so").exists()  # python-9p's native codec
    assert (Path(b["py9p"]).parent / "py9p.py").exists()  # p9fs's pure-python module
    # and neither leaks into the project's own venv
    assert importlib.util.find_spec("py9p") is None


def _ensure_in_subprocess(cache: Path, name: str) -> subprocess.Popen:
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from harness import venvs; print(venvs.ensure_client_venv(sys.argv[2]))"
    )
    env = dict(os.environ, ANVILFS_TEST_CACHE=str(cache))
    return subprocess.Popen(
        [sys.executable, "-c", code, str(venvs.REPO_ROOT / "tests"), name],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_venv_creation_is_race_safe_cached_and_repairs_half_built(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    t0 = time.monotonic()
    procs = [_ensure_in_subprocess(cache, "python-9p") for _ in range(2)]
    outs = [p.communicate(timeout=900) for p in procs]
    build_s = time.monotonic() - t0
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
    paths = {out.strip() for out, _ in outs}
    expected = cache / "venvs" / "python-9p" / "bin" / "python"
    assert paths == {str(expected)}
    marker = cache / "venvs" / "python-9p" / venvs.MARKER
    assert marker.is_file()
    assert json.loads(marker.read_text())["requirement"] == "python-9p==0.1.0"
    print(f"fresh python-9p venv (two racing callers): {build_s:.1f}s")

    # cached: a further call does not rebuild
    monkeypatch.setenv("ANVILFS_TEST_CACHE", str(cache))
    stamp = marker.stat().st_mtime_ns
    assert venvs.ensure_client_venv("python-9p") == expected
    assert marker.stat().st_mtime_ns == stamp

    # a venv without its marker (crashed build) is thrown away and rebuilt
    marker.unlink()
    junk = cache / "venvs" / "python-9p" / "half-built"
    junk.write_text("")
    assert venvs.ensure_client_venv("python-9p") == expected
    assert marker.is_file() and not junk.exists()


def test_venv_pip_failure_raises_with_pip_output(tmp_path, monkeypatch):
    monkeypatch.setenv("ANVILFS_TEST_CACHE", str(tmp_path / "cache"))
    missing = tmp_path / "does_not_exist-0.0.0-py3-none-any.whl"
    monkeypatch.setitem(
        venvs.CLIENTS,
        "broken",
        venvs.ClientSpec(name="broken", requirement=str(missing), dist="x", version="0", check="pass"),
    )
    with pytest.raises(venvs.VenvError) as exc:
        venvs.ensure_client_venv("broken")
    text = str(exc.value)
    assert "pip install" in text and "does_not_exist-0.0.0-py3-none-any.whl" in text
    assert "ERROR" in text  # pip's own output is carried along
    assert not (tmp_path / "cache" / "venvs" / "broken" / venvs.MARKER).exists()


# ---------------------------------------------------------------------------
# codec oracle (python-9p) vs an independent encoder written from intro(5)
# ---------------------------------------------------------------------------

TYPES = {
    "Tversion": 100, "Rversion": 101, "Tauth": 102, "Rauth": 103, "Tattach": 104,
    "Rattach": 105, "Rerror": 107, "Tflush": 108, "Rflush": 109, "Twalk": 110,
    "Rwalk": 111, "Topen": 112, "Ropen": 113, "Tcreate": 114, "Rcreate": 115,
    "Tread": 116, "Rread": 117, "Twrite": 118, "Rwrite": 119, "Tclunk": 120,
    "Rclunk": 121, "Tremove": 122, "Rremove": 123, "Tstat": 124, "Rstat": 125,
    "Twstat": 126, "Rwstat": 127,
}  # fmt: skip


def _s(x: str) -> bytes:
    b = x.encode("utf-8")
    return struct.pack("<H", len(b)) + b


def _q(q) -> bytes:
    return struct.pack("<BIQ", *q)


def ref_stat(st: dict) -> bytes:
    body = (
        struct.pack("<HI", st["type"], st["dev"])
        + _q(st["qid"])
        + struct.pack("<IIIQ", st["mode"], st["atime"], st["mtime"], st["length"])
        + b"".join(_s(st[k]) for k in ("name", "uid", "gid", "muid"))
    )
    return struct.pack("<H", len(body)) + body


def ref_body(m: dict) -> bytes:
    t = m["type"]
    if t in ("Tversion", "Rversion"):
        return struct.pack("<I", m["msize"]) + _s(m["version"])
    if t == "Tauth":
        return struct.pack("<I", m["afid"]) + _s(m["uname"]) + _s(m["aname"])
    if t in ("Rauth", "Rattach"):
        return _q(m["qid"])
    if t == "Tattach":
        return struct.pack("<II", m["fid"], m["afid"]) + _s(m["uname"]) + _s(m["aname"])
    if t == "Rerror":
        return _s(m["ename"])
    if t == "Tflush":
        return struct.pack("<H", m["oldtag"])
    if t == "Twalk":
        return struct.pack("<IIH", m["fid"], m["newfid"], len(m["wnames"])) + b"".join(map(_s, m["wnames"]))
    if t == "Rwalk":
        return struct.pack("<H", len(m["wqids"])) + b"".join(map(_q, m["wqids"]))
    if t == "Topen":
        return struct.pack("<IB", m["fid"], m["mode"])
    if t in ("Ropen", "Rcreate"):
        return _q(m["qid"]) + struct.pack("<I", m["iounit"])
    if t == "Tcreate":
        return struct.pack("<I", m["fid"]) + _s(m["name"]) + struct.pack("<IB", m["perm"], m["mode"])
    if t == "Tread":
        return struct.pack("<IQI", m["fid"], m["offset"], m["count"])
    if t == "Rread":
        data = bytes.fromhex(m["data"])
        return struct.pack("<I", len(data)) + data
    if t == "Twrite":
        data = bytes.fromhex(m["data"])
        return struct.pack("<IQI", m["fid"], m["offset"], len(data)) + data
    if t == "Rwrite":
        return struct.pack("<I", m["count"])
    if t in ("Tclunk", "Tremove", "Tstat"):
        return struct.pack("<I", m["fid"])
    if t == "Rstat":
        st = ref_stat(m["stat"])
        return struct.pack("<H", len(st)) + st
    if t == "Twstat":
        st = ref_stat(m["stat"])
        return struct.pack("<IH", m["fid"], len(st)) + st
    if t in ("Rflush", "Rclunk", "Rremove", "Rwstat"):
        return b""
    raise AssertionError(t)


def ref_encode(m: dict) -> bytes:
    rest = struct.pack("<BH", TYPES[m["type"]], m["tag"]) + ref_body(m)
    return struct.pack("<I", 4 + len(rest)) + rest


STAT = {
    "type": 0x1234, "dev": 0xDEADBEEF, "qid": [QTDIR, 7, 0x0123456789ABCDEF],
    "mode": DMDIR | 0o755, "atime": 1700000000, "mtime": 1700000001, "length": 0,
    "name": "sessions", "uid": "glenda", "gid": "sys", "muid": "ünïcode",
}  # fmt: skip

SAMPLES = {
    "Tversion": {"type": "Tversion", "tag": NOTAG, "msize": 8192, "version": "9P2000"},
    "Rversion": {"type": "Rversion", "tag": NOTAG, "msize": 65536, "version": "9P2000"},
    "Tauth": {"type": "Tauth", "tag": 1, "afid": 5, "uname": "glenda", "aname": ""},
    "Rauth": {"type": "Rauth", "tag": 1, "qid": [0x08, 0, 42]},
    "Tattach": {"type": "Tattach", "tag": 2, "fid": 0, "afid": NOFID, "uname": "glenda", "aname": "/"},
    "Rattach": {"type": "Rattach", "tag": 2, "qid": [QTDIR, 0, 1]},
    "Rerror": {"type": "Rerror", "tag": 3, "ename": "unknown command: frob"},
    "Tflush": {"type": "Tflush", "tag": 4, "oldtag": 3},
    "Rflush": {"type": "Rflush", "tag": 4},
    "Twalk": {"type": "Twalk", "tag": 5, "fid": 0, "newfid": 1, "wnames": ["sessions", "bot1", "ctl"]},
    "Rwalk": {"type": "Rwalk", "tag": 5, "wqids": [[QTDIR, 0, 2], [QTDIR, 0, 3], [0, 9, 4]]},
    "Topen": {"type": "Topen", "tag": 6, "fid": 1, "mode": 1 | 16},
    "Ropen": {"type": "Ropen", "tag": 6, "qid": [0, 9, 4], "iounit": 8168},
    "Tcreate": {"type": "Tcreate", "tag": 7, "fid": 1, "name": "notes", "perm": 0o644, "mode": 1},
    "Rcreate": {"type": "Rcreate", "tag": 7, "qid": [0, 0, 5], "iounit": 0},
    "Tread": {"type": "Tread", "tag": 8, "fid": 1, "offset": 1 << 40, "count": 8168},
    "Rread": {"type": "Rread", "tag": 8, "data": b"hello\x00\xff world\n".hex()},
    "Twrite": {"type": "Twrite", "tag": 9, "fid": 1, "offset": 3, "data": b"new sim /tmp name=bot1\n".hex()},
    "Rwrite": {"type": "Rwrite", "tag": 9, "count": 23},
    "Tclunk": {"type": "Tclunk", "tag": 10, "fid": 1},
    "Rclunk": {"type": "Rclunk", "tag": 10},
    "Tremove": {"type": "Tremove", "tag": 11, "fid": 2},
    "Rremove": {"type": "Rremove", "tag": 11},
    "Tstat": {"type": "Tstat", "tag": 12, "fid": 3},
    "Rstat": {"type": "Rstat", "tag": 12, "stat": STAT},
    "Twstat": {"type": "Twstat", "tag": 13, "fid": 3, "stat": dict(STAT, name="renamed", mode=0o600, qid=[0, 0, 9])},
    "Rwstat": {"type": "Rwstat", "tag": 13},
}
assert set(SAMPLES) == set(TYPES)


def run_oracle(python: Path, requests: list[dict], timeout: float = 120) -> list[dict]:
    proc = subprocess.run(
        [str(python), "-I", str(venvs.PY9P_CODEC)],
        input="".join(json.dumps(r) + "\n" for r in requests),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == len(requests), (proc.stdout, proc.stderr)
    return [json.loads(line) for line in lines]


@pytest.fixture(scope="module")
def sample_codec(py9p_python):
    names = sorted(SAMPLES)
    enc = run_oracle(py9p_python, [{"encode": SAMPLES[n]} for n in names])
    for n, r in zip(names, enc):
        assert "hex" in r, (n, r)
    dec = run_oracle(py9p_python, [{"decode": r["hex"]} for r in enc])
    return {n: (bytes.fromhex(e["hex"]), d) for n, e, d in zip(names, enc, dec)}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_codec_every_message_type(sample_codec, name):
    msg = SAMPLES[name]
    wire, decoded = sample_codec[name]
    # python-9p's encode_message returns the whole frame, size prefix included
    size, mtype, tag = struct.unpack_from("<IBH", wire)
    assert size == len(wire)
    assert mtype == TYPES[name] and tag == msg["tag"]
    assert wire == ref_encode(msg)
    assert decoded == {"msg": msg}


def test_codec_known_bytes_and_double_stat_size(sample_codec):
    # Tversion, spelled out byte by byte from intro(5)/version(5)
    assert sample_codec["Tversion"][0] == bytes.fromhex("13000000" "64" "ffff" "00200000" "0600" "395032303030")
    assert sample_codec["Rflush"][0] == bytes.fromhex("07000000" "6d" "0400")
    # Rstat: size[4] type[1] tag[2] n[2] stat[n], and stat begins with its own size[2] = n - 2
    wire = sample_codec["Rstat"][0]
    (n,) = struct.unpack_from("<H", wire, 7)
    assert n == len(wire) - 9
    (inner,) = struct.unpack_from("<H", wire, 9)
    assert inner == n - 2
    # Twstat: ... fid[4] n[2] stat[n]
    wire = sample_codec["Twstat"][0]
    (n,) = struct.unpack_from("<H", wire, 11)
    assert n == len(wire) - 13
    assert struct.unpack_from("<H", wire, 13)[0] == n - 2


def _rand_str(rng: random.Random) -> str:
    alphabet = "abcXYZ019 ._-/\u00e9\u4e2d\U0001f600"
    return "".join(rng.choice(alphabet) for _ in range(rng.choice([0, 1, 3, 12, 40])))


def _rand_qid(rng):
    return [rng.randrange(256), rng.randrange(1 << 32), rng.choice([0, U64, rng.randrange(1 << 64)])]


def _rand_stat(rng):
    return {
        "type": rng.randrange(1 << 16), "dev": rng.randrange(1 << 32), "qid": _rand_qid(rng),
        "mode": rng.randrange(1 << 32), "atime": rng.randrange(1 << 32), "mtime": rng.randrange(1 << 32),
        "length": rng.choice([0, I64, rng.randrange(1 << 63)]),  # python-9p: length <= 2**63-1
        "name": _rand_str(rng), "uid": _rand_str(rng), "gid": _rand_str(rng), "muid": _rand_str(rng),
    }  # fmt: skip


def _rand_msg(rng: random.Random, t: str) -> dict:
    u32 = lambda: rng.choice([0, NOFID, rng.randrange(1 << 32)])  # noqa: E731
    m = {"type": t, "tag": rng.randrange(1 << 16)}
    data = lambda: bytes(rng.randrange(256) for _ in range(rng.choice([0, 1, 100, 3000]))).hex()  # noqa: E731
    fields = {
        "Tversion": lambda: dict(msize=u32(), version=_rand_str(rng)),
        "Rversion": lambda: dict(msize=u32(), version=_rand_str(rng)),
        "Tauth": lambda: dict(afid=u32(), uname=_rand_str(rng), aname=_rand_str(rng)),
        "Rauth": lambda: dict(qid=_rand_qid(rng)),
        "Tattach": lambda: dict(fid=u32(), afid=u32(), uname=_rand_str(rng), aname=_rand_str(rng)),
        "Rattach": lambda: dict(qid=_rand_qid(rng)),
        "Rerror": lambda: dict(ename=_rand_str(rng)),
        "Tflush": lambda: dict(oldtag=rng.randrange(1 << 16)),
        "Twalk": lambda: dict(fid=u32(), newfid=u32(), wnames=[_rand_str(rng) for _ in range(rng.randrange(17))]),
        "Rwalk": lambda: dict(wqids=[_rand_qid(rng) for _ in range(rng.randrange(17))]),
        "Topen": lambda: dict(fid=u32(), mode=rng.randrange(256)),
        "Ropen": lambda: dict(qid=_rand_qid(rng), iounit=u32()),
        "Tcreate": lambda: dict(fid=u32(), name=_rand_str(rng), perm=u32(), mode=rng.randrange(256)),
        "Rcreate": lambda: dict(qid=_rand_qid(rng), iounit=u32()),
        "Tread": lambda: dict(fid=u32(), offset=rng.choice([0, I64, rng.randrange(1 << 63)]), count=u32()),
        "Rread": lambda: dict(data=data()),
        "Twrite": lambda: dict(fid=u32(), offset=rng.choice([0, I64, rng.randrange(1 << 63)]), data=data()),
        "Rwrite": lambda: dict(count=u32()),
        "Tclunk": lambda: dict(fid=u32()),
        "Tremove": lambda: dict(fid=u32()),
        "Tstat": lambda: dict(fid=u32()),
        "Rstat": lambda: dict(stat=_rand_stat(rng)),
        "Twstat": lambda: dict(fid=u32(), stat=_rand_stat(rng)),
    }
    m.update(fields.get(t, dict)())
    return m


def test_codec_random_messages_match_reference_and_round_trip(py9p_python):
    rng = random.Random(20240913)
    msgs = [_rand_msg(rng, t) for _ in range(12) for t in sorted(TYPES)]
    enc = run_oracle(py9p_python, [{"encode": m} for m in msgs])
    bad = [(m, r) for m, r in zip(msgs, enc) if r.get("hex") != ref_encode(m).hex()]
    assert not bad, bad[:3]
    dec = run_oracle(py9p_python, [{"decode": r["hex"]} for r in enc])
    bad = [(m, r) for m, r in zip(msgs, dec) if r != {"msg": m}]
    assert not bad, bad[:3]


def test_codec_stat_helpers_and_raw_dont_touch_wstat(py9p_python):
    dont_touch = {
        "type": 0xFFFF, "dev": NOFID, "qid": [0xFF, NOFID, U64], "mode": NOFID, "atime": NOFID,
        "mtime": NOFID, "length": U64, "name": "", "uid": "", "gid": "", "muid": "",
    }  # fmt: skip
    raw = ref_stat(dont_touch).hex()
    twstat = {"type": "Twstat", "tag": 1, "fid": 7, "stat": raw}
    r = run_oracle(
        py9p_python,
        [
            {"encode_stat": STAT},
            {"decode_stat": ref_stat(STAT).hex()},
            {"encode": twstat},
            {"decode": ref_encode(dict(twstat, stat=dont_touch)).hex()},
            # python-9p's Dir cannot hold length >= 2**63: a stat *object* with ~0 length fails
            {"encode": dict(twstat, stat=dont_touch)},
        ],
    )
    assert r[0] == {"hex": ref_stat(STAT).hex()}
    assert r[1] == {"stat": STAT}
    assert r[2] == {"hex": ref_encode(dict(twstat, stat=dont_touch)).hex()}
    assert r[3] == {"msg": dict(twstat, stat=dont_touch)}
    assert "error" in r[4] and "length" in r[4]["error"]


def test_codec_rejects_malformed_input_and_keeps_serving(py9p_python):
    good = ref_encode(SAMPLES["Tversion"])
    reqs = [
        {"decode": good[:-1].hex()},  # truncated
        {"decode": (good + b"\x00").hex()},  # trailing byte, size says 19
        {"decode": (struct.pack("<I", len(good) + 1) + good[4:] + b"\x00").hex()},  # size covers junk
        {"decode": struct.pack("<IBH", 7, 200, 0).hex()},  # unknown type
        {"decode": struct.pack("<IBH", 7, 106, 0).hex()},  # Terror is not a valid message
        {"decode": "0700"},  # shorter than a header
        {"encode": {"type": "Twalk", "tag": 1, "fid": 0, "newfid": 1, "wnames": ["x"] * 17}},  # MAXWELEM
        {"encode": {"type": "Tread", "tag": 1, "fid": 0, "offset": 1 << 63, "count": 1}},
        {"encode": {"type": "Tnope", "tag": 1}},
        {"decode": good.hex()},
    ]
    r = run_oracle(py9p_python, reqs)
    for req, resp in zip(reqs[:-1], r[:-1]):
        assert set(resp) == {"error"}, (req, resp)
    assert r[-1] == {"msg": SAMPLES["Tversion"]}


def test_codec_decodes_unsigned_wire_offset(py9p_python):
    # python-9p stores offset in an int64: the oracle reports the unsigned wire value
    wire = struct.pack("<IBHIQI", 23, 116, 1, 1, U64, 1)
    assert run_oracle(py9p_python, [{"decode": wire.hex()}]) == [
        {"msg": {"type": "Tread", "tag": 1, "fid": 1, "offset": U64, "count": 1}}
    ]


# ---------------------------------------------------------------------------
# servers
# ---------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------
# drivers
# ---------------------------------------------------------------------------

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

"""The python-9p codec oracle (tests/harness, tests/clients) agrees with an independent spec-derived
encoder (intro(5)) for every 9P2000 message type, round-trips, and frames as size[4] type[1] tag[2]."""

from __future__ import annotations

import json
import random
import struct
import subprocess
from pathlib import Path

import pytest

from harness import venvs  # as every test imports it: `tests.harness` would be a second copy of the module
from harness.ninep_values import DMDIR, I64, NOFID, NOTAG, QTDIR, U64

pytestmark = pytest.mark.clients

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

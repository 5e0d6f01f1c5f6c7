"""Byte-for-byte agreement with python-9p (plan9port's C codec) on 9P2000.

Our encoder's bytes must be what python-9p encodes for the same message, and
what python-9p encodes must decode to the same message here. python-9p runs
in its own virtualenv (it clashes with p9fs on the name `py9p`), as a
long-lived oracle process speaking JSON lines (tests/clients/py9p_codec.py).
"""

from __future__ import annotations

import dataclasses
import json
import select
import subprocess

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from anvilfs.ninep import Dialect, Qid, Stat, decode, encode
from anvilfs.ninep import messages as m
from harness.venvs import PY9P_CODEC, client_command
from strategies import message_strategy

pytestmark = pytest.mark.clients

P2000 = Dialect.P2000
TYPES = sorted((cls for cls in m.MESSAGE_TYPES.values() if cls.TYPE >= 100), key=lambda c: c.TYPE)
ANSWER_DEADLINE = 30  # seconds
_SIGNED_MAX = (1 << 63) - 1  # python-9p holds offsets and lengths in signed 64-bit fields


@pytest.fixture(scope="module")
def oracle():
    proc = subprocess.Popen(client_command("python-9p", PY9P_CODEC), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)

    def ask(request: dict) -> dict:
        proc.stdin.write(json.dumps(request) + "\n")
        proc.stdin.flush()
        # one answer line per request, so nothing is left in stdout's buffer for select to miss
        ready, _, _ = select.select([proc.stdout], [], [], ANSWER_DEADLINE)
        assert ready, f"python-9p codec gave no answer within {ANSWER_DEADLINE}s to {request}"
        answer = json.loads(proc.stdout.readline())
        assert "error" not in answer, answer["error"]
        return answer

    try:
        yield ask
    finally:
        proc.stdin.close()
        proc.wait(timeout=10)


def _qid(q: Qid) -> list[int]:
    return [q.type, q.version, q.path]


def _stat(s: Stat) -> dict:
    return {"type": s.type, "dev": s.dev, "qid": _qid(s.qid), "mode": s.mode, "atime": s.atime,
            "mtime": s.mtime, "length": s.length, "name": s.name, "uid": s.uid, "gid": s.gid, "muid": s.muid}


def to_json(msg: m.Message) -> dict:
    out = {"type": type(msg).__name__, "tag": msg.tag}
    for name in (f.name for f in dataclasses.fields(msg)):
        value = getattr(msg, name)
        if name in ("tag", "errno", "n_uname", "extension"):
            continue  # 9P2000.u fields: not on the wire in 9P2000
        if isinstance(value, bytes):
            value = value.hex()
        elif isinstance(value, Qid):
            value = _qid(value)
        elif isinstance(value, Stat):
            value = _stat(value)
        elif name == "wqids":
            value = [_qid(q) for q in value]
        elif isinstance(value, tuple):
            value = list(value)
        out["qid" if name == "aqid" else name] = value
    return out


def python9p_can_hold(msg: m.Message) -> bool:
    """python-9p refuses NUL in strings and offsets or lengths of 2**63 and more."""
    for name in (f.name for f in dataclasses.fields(msg)):
        value = getattr(msg, name)
        texts = value if isinstance(value, tuple) and value and isinstance(value[0], str) else (value,)
        if any(isinstance(t, str) and "\0" in t for t in texts):
            return False
        if name == "offset" and value > _SIGNED_MAX:
            return False
        if isinstance(value, Stat):
            if value.length > _SIGNED_MAX or any("\0" in getattr(value, f) for f in ("name", "uid", "gid", "muid")):
                return False
    return True


any_9p2000_message = st.one_of([message_strategy(cls, P2000) for cls in TYPES])
_settings = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@_settings
@given(msg=any_9p2000_message)
def test_our_bytes_are_python9p_bytes(oracle, msg):
    assume(python9p_can_hold(msg))
    assert encode(msg, P2000).hex() == oracle({"encode": to_json(msg)})["hex"]


@_settings
@given(msg=any_9p2000_message)
def test_we_decode_what_python9p_encodes(oracle, msg):
    assume(python9p_can_hold(msg))
    raw = bytes.fromhex(oracle({"encode": to_json(msg)})["hex"])
    assert decode(raw, P2000) == msg


@_settings
@given(msg=any_9p2000_message)
def test_python9p_decodes_what_we_encode(oracle, msg):
    assume(python9p_can_hold(msg))
    assert oracle({"decode": encode(msg, P2000).hex()})["msg"] == to_json(msg)


def test_every_9p2000_message_type_is_compared(oracle):
    """One fixed example per type, so no type can slip through the random ones."""
    qid = Qid(0x80, 7, 1 << 40)
    examples = [
        m.Tversion(tag=0xFFFF, msize=8192, version="9P2000"), m.Rversion(tag=0xFFFF, msize=8192, version="9P2000"),
        m.Tauth(tag=1, afid=2, uname="glenda", aname=""), m.Rauth(tag=1, aqid=qid),
        m.Tattach(tag=1, fid=0, afid=0xFFFFFFFF, uname="glenda", aname="agent"), m.Rattach(tag=1, qid=qid),
        m.Rerror(tag=2, ename="unknown fid 9"), m.Tflush(tag=3, oldtag=2), m.Rflush(tag=3),
        m.Twalk(tag=4, fid=0, newfid=1, wnames=("bot1", "wait")), m.Rwalk(tag=4, wqids=(qid, qid)),
        m.Topen(tag=5, fid=1, mode=0x10), m.Ropen(tag=5, qid=qid, iounit=8168),
        m.Tcreate(tag=6, fid=1, name="x", perm=0o644, mode=1), m.Rcreate(tag=6, qid=qid, iounit=0),
        m.Tread(tag=7, fid=1, offset=6, count=100), m.Rread(tag=7, data=b"await\n"),
        m.Twrite(tag=8, fid=1, offset=0, data=b"new sim /tmp\n"), m.Rwrite(tag=8, count=13),
        m.Tclunk(tag=9, fid=1), m.Rclunk(tag=9), m.Tremove(tag=10, fid=1), m.Rremove(tag=10),
        m.Tstat(tag=11, fid=1), m.Rstat(tag=11, stat=Stat(qid=qid, mode=0o444, name="list", uid="u", gid="g", muid="u")),
        m.Twstat(tag=12, fid=1, stat=Stat(qid=qid, mode=0o20000000555, name="d")), m.Rwstat(tag=12),
    ]
    assert sorted({type(x) for x in examples}, key=lambda c: c.TYPE) == TYPES
    for msg in examples:
        assert encode(msg, P2000).hex() == oracle({"encode": to_json(msg)})["hex"], type(msg).__name__
        assert decode(bytes.fromhex(oracle({"encode": to_json(msg)})["hex"]), P2000) == msg

"""9P2000 codec oracle backed by python-9p (plan9port's convS2M/convM2S).

Run with the python of the python-9p venv (see tests/harness/venvs.py).
Reads JSON lines on stdin and answers each with one JSON line on stdout:

    {"encode": MSG}          -> {"hex": "<python-9p's bytes>"}
    {"decode": "<hex>"}      -> {"msg": MSG}
    {"encode_stat": STAT}    -> {"hex": "<stat bytes, incl. its size[2]>"}
    {"decode_stat": "<hex>"} -> {"stat": STAT}
    anything that fails      -> {"error": "<ExceptionType>: <text>"}

The encoded bytes are the complete frame: size[4] type[1] tag[2] body, with
size counting itself.  MSG is a JSON object with plan9 fcall-style names:

    {"type": "Twalk", "tag": 1, "fid": 1, "newfid": 2, "wnames": ["a", "b"]}

    Tversion/Rversion  msize, version
    Tauth              afid, uname, aname
    Rauth              qid            (python-9p calls it aqid; "aqid" accepted)
    Tattach            fid, afid, uname, aname
    Rattach            qid
    Rerror             ename
    Tflush             oldtag
    Twalk              fid, newfid, wnames   ("wname" accepted)
    Rwalk              wqids                 ("wqid" accepted)
    Topen              fid, mode
    Ropen/Rcreate      qid, iounit
    Tcreate            fid, name, perm, mode
    Tread              fid, offset, count
    Rread              data (hex)
    Twrite             fid, offset, data (hex)
    Rwrite             count
    Tclunk/Tremove/Tstat  fid
    Rstat              stat
    Twstat             fid, stat
    Rflush/Rclunk/Rremove/Rwstat  (tag only)

A qid is [type, version, path].  STAT is {"type", "dev", "qid", "mode",
"atime", "mtime", "length", "name", "uid", "gid", "muid"}.  In Rstat/Twstat
"stat" may also be a hex string: raw stat bytes (with their own size[2]) sent
as-is, e.g. a wstat whose length is ~0, which python-9p's Dir cannot hold.
On decode, a stat that python-9p cannot parse as a Dir comes back as hex.
python-9p holds offset and stat length in signed 64-bit fields (it decodes a
wire ~0 as -1 and refuses to encode values >= 2**63); the oracle reports the
unsigned wire value on decode.
"tag" may be omitted: python-9p's default (NOTAG for Tversion/Rversion, 0
otherwise) is used.
"""

from __future__ import annotations

import json
import sys

import py9p
from py9p.constants import MessageType

CLASSES = {
    name: getattr(py9p, name)
    for name in (
        "Tversion Rversion Tauth Rauth Tattach Rattach Rerror Tflush Rflush "
        "Twalk Rwalk Topen Ropen Tcreate Rcreate Tread Rread Twrite Rwrite "
        "Tclunk Rclunk Tremove Rremove Tstat Rstat Twstat Rwstat"
    ).split()
}

U64 = (1 << 64) - 1

STAT_FIELDS = ("type", "dev", "qid", "mode", "atime", "mtime", "length", "name", "uid", "gid", "muid")


def qid_from_json(q) -> py9p.Qid:
    if isinstance(q, dict):
        return py9p.Qid(type=q["type"], vers=q.get("vers", q.get("version", 0)), path=q["path"])
    t, v, p = q
    return py9p.Qid(type=t, vers=v, path=p)


def qid_to_json(q: py9p.Qid) -> list[int]:
    return [q.type, q.vers, q.path]


def stat_from_json(s: dict) -> py9p.Dir:
    unknown = set(s) - set(STAT_FIELDS)
    if unknown:
        raise ValueError(f"unknown stat fields {sorted(unknown)}")
    return py9p.Dir(
        type=s.get("type", 0),
        dev=s.get("dev", 0),
        qid=qid_from_json(s.get("qid", [0, 0, 0])),
        mode=s.get("mode", 0),
        atime=s.get("atime", 0),
        mtime=s.get("mtime", 0),
        length=s.get("length", 0),
        name=s.get("name", ""),
        uid=s.get("uid", ""),
        gid=s.get("gid", ""),
        muid=s.get("muid", ""),
    )


def stat_to_json(d: py9p.Dir) -> dict:
    return {
        "type": d.type,
        "dev": d.dev,
        "qid": qid_to_json(d.qid),
        "mode": d.mode,
        "atime": d.atime,
        "mtime": d.mtime,
        "length": d.length & U64,
        "name": d.name,
        "uid": d.uid,
        "gid": d.gid,
        "muid": d.muid,
    }


def stat_field_from_json(s):
    if isinstance(s, str):
        return bytes.fromhex(s)
    return stat_from_json(s)


def stat_field_to_json(s):
    if isinstance(s, py9p.Dir):
        return stat_to_json(s)
    return bytes(s).hex()


def message_from_json(m: dict) -> py9p.Message:
    m = dict(m)
    tname = m.pop("type")
    if isinstance(tname, int):
        tname = MessageType(tname).name.capitalize()
    cls = CLASSES[tname]
    kw: dict = {}
    if "tag" in m:
        kw["tag"] = m.pop("tag")
    # JSON names that differ from python-9p's attribute names.
    if tname == "Rauth":
        kw["aqid"] = qid_from_json(m.pop("qid") if "qid" in m else m.pop("aqid"))
    if tname == "Twalk":
        kw["wname"] = tuple(m.pop("wnames") if "wnames" in m else m.pop("wname", ()))
    if tname == "Rwalk":
        kw["wqid"] = tuple(qid_from_json(q) for q in (m.pop("wqids") if "wqids" in m else m.pop("wqid", ())))
    for key in ("qid",):
        if key in m:
            kw[key] = qid_from_json(m.pop(key))
    if "data" in m:
        kw["data"] = bytes.fromhex(m.pop("data"))
    if "stat" in m:
        kw["stat"] = stat_field_from_json(m.pop("stat"))
    kw.update(m)  # remaining scalar fields map 1:1
    return cls(**kw)


def message_to_json(msg: py9p.Message) -> dict:
    tname = type(msg).__name__
    out: dict = {"type": tname, "tag": msg.tag}
    if isinstance(msg, (py9p.Tversion, py9p.Rversion)):
        out.update(msize=msg.msize, version=msg.version)
    elif isinstance(msg, py9p.Tauth):
        out.update(afid=msg.afid, uname=msg.uname, aname=msg.aname)
    elif isinstance(msg, py9p.Rauth):
        out.update(qid=qid_to_json(msg.aqid))
    elif isinstance(msg, py9p.Tattach):
        out.update(fid=msg.fid, afid=msg.afid, uname=msg.uname, aname=msg.aname)
    elif isinstance(msg, py9p.Rattach):
        out.update(qid=qid_to_json(msg.qid))
    elif isinstance(msg, py9p.Rerror):
        out.update(ename=msg.ename)
    elif isinstance(msg, py9p.Tflush):
        out.update(oldtag=msg.oldtag)
    elif isinstance(msg, py9p.Twalk):
        out.update(fid=msg.fid, newfid=msg.newfid, wnames=list(msg.wname))
    elif isinstance(msg, py9p.Rwalk):
        out.update(wqids=[qid_to_json(q) for q in msg.wqid])
    elif isinstance(msg, py9p.Topen):
        out.update(fid=msg.fid, mode=msg.mode)
    elif isinstance(msg, (py9p.Ropen, py9p.Rcreate)):
        out.update(qid=qid_to_json(msg.qid), iounit=msg.iounit)
    elif isinstance(msg, py9p.Tcreate):
        out.update(fid=msg.fid, name=msg.name, perm=msg.perm, mode=msg.mode)
    elif isinstance(msg, py9p.Tread):
        out.update(fid=msg.fid, offset=msg.offset & U64, count=msg.count)
    elif isinstance(msg, py9p.Rread):
        out.update(data=msg.data.hex())
    elif isinstance(msg, py9p.Twrite):
        out.update(fid=msg.fid, offset=msg.offset & U64, data=msg.data.hex())
    elif isinstance(msg, py9p.Rwrite):
        out.update(count=msg.count)
    elif isinstance(msg, (py9p.Tclunk, py9p.Tremove, py9p.Tstat)):
        out.update(fid=msg.fid)
    elif isinstance(msg, py9p.Rstat):
        out.update(stat=stat_field_to_json(msg.stat))
    elif isinstance(msg, py9p.Twstat):
        out.update(fid=msg.fid, stat=stat_field_to_json(msg.stat))
    elif isinstance(msg, (py9p.Rflush, py9p.Rclunk, py9p.Rremove, py9p.Rwstat)):
        pass
    else:  # pragma: no cover - python-9p has no other classes
        raise TypeError(f"unexpected message class {tname}")
    return out


def handle(req: dict) -> dict:
    if "encode" in req:
        return {"hex": py9p.encode_message(message_from_json(req["encode"])).hex()}
    if "decode" in req:
        return {"msg": message_to_json(py9p.decode_message(bytes.fromhex(req["decode"])))}
    if "encode_stat" in req:
        return {"hex": py9p.encode_dir(stat_from_json(req["encode_stat"])).hex()}
    if "decode_stat" in req:
        return {"stat": stat_to_json(py9p.decode_dir(bytes.fromhex(req["decode_stat"])))}
    raise ValueError(f"unknown request keys {sorted(req)}")


def main() -> int:
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            resp = handle(json.loads(line))
        except Exception as exc:  # report, keep serving
            resp = {"error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(resp) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())

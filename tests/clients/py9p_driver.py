"""Drive a 9P2000 server with python-9p's ``py9p.Client``.

Run with the python of the python-9p venv (tests/harness/venvs.py)::

    python -I py9p_driver.py --unix /path/to/sock  < ops
    python -I py9p_driver.py --tcp 127.0.0.1:5640 < ops

The driver connects, negotiates 9P2000 (Tversion), attaches (Tattach, no
Tauth), then reads operations from stdin -- JSON objects, one per line or
pretty-printed, processed as each one arrives -- and prints exactly one JSON
line per operation on stdout, flushed at once.

Operations (``path`` is relative to the attach root, "" is the root itself;
``mode`` is a 9P open mode: 0 OREAD, 1 OWRITE, 2 ORDWR, |16 OTRUNC):

    {"op": "version"}                        -> {"version", "msize"}
    {"op": "walk", "path": P}                -> {"qids", "complete"}
    {"op": "read", "path": P, ["offset", "count", "mode"]}
        walk, open (OREAD), read to EOF (or one Tread of "count" bytes at
        "offset"), clunk                     -> {"data" | "data_hex", "qid", "iounit"}
    {"op": "write", "path": P, "data": TEXT | "data_hex": HEX, ["offset", "trunc", "mode"]}
        walk, open (OWRITE, |OTRUNC if trunc), write, clunk -> {"count"}
    {"op": "ls", "path": P}                  -> {"entries": [{"name", "mode", "dir", "qid", "length", ...}]}
    {"op": "stat", "path": P}                -> {"stat": {...}}
    {"op": "create", "path": P, ["perm", "mode", "data", "data_hex"]}
        walk to parent, Tcreate, optional write, clunk -> {"qid", "iounit"}
    {"op": "remove", "path": P}              -> {}

Any op that walks takes ``"stepwise": true`` to walk one name per Twalk
(as Linux v9fs does), so a name that is not there gets the server's Rerror
rather than a short Rwalk.

Every result has "op" and "ok".  A failure is
``{"ok": false, "stage": <walk|open|read|...>, "error": TEXT, "remote": BOOL}``:
``remote`` is true when the server answered Rerror and ``error`` is then its
ename verbatim.  A failed op never stops the driver; fids taken by a failed op
are clunked.  If connecting / Tversion / Tattach fails, a single line
``{"op": "connect", "ok": false, "fatal": true, ...}`` is printed and the exit
status is 2.  A qid is [type, version, path].
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys

import py9p
from py9p import Client, RemoteError

IOHDRSZ = 24
ROOT = 0


class Incomplete(Exception):
    pass


def qid_json(q: py9p.Qid) -> list[int]:
    return [q.type, q.vers, q.path]


def dir_json(d: py9p.Dir) -> dict:
    return {
        "name": d.name,
        "mode": d.mode,
        "dir": bool(d.mode & 0x80000000),
        "qid": qid_json(d.qid),
        "length": d.length,
        "type": d.type,
        "dev": d.dev,
        "atime": d.atime,
        "mtime": d.mtime,
        "uid": d.uid,
        "gid": d.gid,
        "muid": d.muid,
    }


def data_json(data: bytes) -> dict:
    try:
        return {"data": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"data_hex": data.hex()}


def op_data(op: dict) -> bytes:
    if "data_hex" in op:
        return bytes.fromhex(op["data_hex"])
    return op.get("data", "").encode("utf-8")


def split_path(path: str) -> list[str]:
    return [p for p in path.split("/") if p]


class Driver:
    def __init__(self, client: Client):
        self.c = client
        self.next_fid = 1
        self.stage = ""
        self.stepwise = False

    def fid(self) -> int:
        f = self.next_fid
        self.next_fid += 1
        return f

    @property
    def iosize(self) -> int:
        return self.c.msize - IOHDRSZ

    def walk_to(self, names: list[str]) -> int:
        """Walk a new fid from the root; raise Incomplete on a short Rwalk.

        With ``stepwise`` (set per op), one name per Twalk, as Linux v9fs
        walks: the name that stops the walk then gets the server's error.
        """
        self.stage = "walk"
        fid = self.fid()
        if not self.stepwise:
            qids = self.c.walk(ROOT, fid, names)
            if len(qids) != len(names):
                raise Incomplete(f"walk incomplete: {len(qids)} of {len(names)} elements")
            return fid
        self.c.walk(ROOT, fid, [])
        try:
            for name in names:
                self.c.walk(fid, fid, [name])  # one name: a miss is an Rerror, and fid stays where it was
        except BaseException:
            self.clunk_quietly(fid)
            raise
        return fid

    def clunk_quietly(self, fid: int) -> None:
        try:
            self.c.clunk(fid)
        except Exception:
            pass

    def with_fid(self, names: list[str], body):
        fid = self.walk_to(names)
        try:
            result = body(fid)
        except BaseException:
            self.clunk_quietly(fid)
            raise
        self.stage = "clunk"
        self.c.clunk(fid)
        return result

    # -- operations -------------------------------------------------------
    def op_version(self, op):
        return {"version": self.c.version_string, "msize": self.c.msize}

    def op_walk(self, op):
        self.stage = "walk"
        names = split_path(op.get("path", ""))
        fid = self.fid()
        qids = self.c.walk(ROOT, fid, names)
        complete = len(qids) == len(names)
        if complete:
            self.stage = "clunk"
            self.c.clunk(fid)
        return {"qids": [qid_json(q) for q in qids], "complete": complete}

    def read_all(self, fid: int, iounit: int, offset: int = 0) -> bytes:
        self.stage = "read"
        count = min(iounit or self.iosize, self.iosize)
        chunks = []
        while True:
            data = self.c.read(fid, count=count, offset=offset)
            if not data:
                return b"".join(chunks)
            chunks.append(data)
            offset += len(data)

    def op_read(self, op):
        def body(fid):
            self.stage = "open"
            qid, iounit = self.c.open(fid, int(op.get("mode", 0)))
            offset = int(op.get("offset", 0))
            if "count" in op:
                self.stage = "read"
                data = self.c.read(fid, count=int(op["count"]), offset=offset)
            else:
                data = self.read_all(fid, iounit, offset)
            return {**data_json(data), "qid": qid_json(qid), "iounit": iounit}

        return self.with_fid(split_path(op["path"]), body)

    def write_all(self, fid: int, iounit: int, data: bytes, offset: int) -> int:
        self.stage = "write"
        size = min(iounit or self.iosize, self.iosize)
        total = 0
        while True:
            chunk = data[total : total + size]
            n = self.c.write(fid, chunk, offset=offset + total)
            total += n
            if n == 0 or total >= len(data):
                return total

    def op_write(self, op):
        def body(fid):
            self.stage = "open"
            mode = int(op.get("mode", 1)) | (16 if op.get("trunc") else 0)
            _qid, iounit = self.c.open(fid, mode)
            return {"count": self.write_all(fid, iounit, op_data(op), int(op.get("offset", 0)))}

        return self.with_fid(split_path(op["path"]), body)

    def op_ls(self, op):
        def body(fid):
            self.stage = "open"
            _qid, iounit = self.c.open(fid, 0)
            buf = self.read_all(fid, iounit)
            self.stage = "decode"
            entries = []
            i = 0
            while i < len(buf):
                n = int.from_bytes(buf[i : i + 2], "little")
                entries.append(dir_json(py9p.decode_dir(buf[i : i + 2 + n])))
                i += 2 + n
            return {"entries": entries}

        return self.with_fid(split_path(op.get("path", "")), body)

    def op_stat(self, op):
        def body(fid):
            self.stage = "stat"
            return {"stat": dir_json(self.c.stat(fid))}

        return self.with_fid(split_path(op.get("path", "")), body)

    def op_create(self, op):
        names = split_path(op["path"])
        if not names:
            raise ValueError("create needs a non-empty path")

        def body(fid):
            self.stage = "create"
            qid, iounit = self.c.create(
                fid, names[-1], int(op.get("perm", 0o644)), int(op.get("mode", 1))
            )
            res = {"qid": qid_json(qid), "iounit": iounit}
            if "data" in op or "data_hex" in op:
                res["count"] = self.write_all(fid, iounit, op_data(op), 0)
            return res

        return self.with_fid(names[:-1], body)

    def op_remove(self, op):
        fid = self.walk_to(split_path(op["path"]))
        self.stage = "remove"
        self.c.remove(fid)  # Tremove clunks the fid whatever the outcome
        return {}

    def run(self, op: dict) -> dict:
        name = op.get("op") if isinstance(op, dict) else None
        res: dict = {"op": name}
        self.stage = "dispatch"
        self.stepwise = bool(op.get("stepwise")) if isinstance(op, dict) else False
        try:
            fn = getattr(self, f"op_{name}", None)
            if fn is None:
                raise ValueError(f"unknown op {name!r}")
            res.update(fn(op))
            res["ok"] = True
        except RemoteError as exc:
            res.update(ok=False, stage=self.stage, error=str(exc), remote=True)
        except Exception as exc:
            res.update(ok=False, stage=self.stage, error=f"{type(exc).__name__}: {exc}", remote=False)
        return res


def iter_ops(stream):
    """Yield JSON values from ``stream`` as soon as each one is complete."""
    buf = ""
    for line in stream:
        buf += line
        if not buf.strip():
            buf = ""
            continue
        try:
            value = json.loads(buf)
        except json.JSONDecodeError:
            continue
        buf = ""
        if isinstance(value, list):
            yield from value
        else:
            yield value
    if buf.strip():
        yield {"op": None, "_bad_json": buf}


def connect(args) -> Client:
    if args.unix:
        client = Client.connect_unix(args.unix, msize=args.msize)
        client.transport.settimeout(args.timeout)
    else:
        host, _, port = args.tcp.rpartition(":")
        client = Client.connect_tcp(host, int(port), timeout=args.timeout, msize=args.msize)
    return client


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--unix", help="path of the server's UNIX socket")
    where.add_argument("--tcp", help="HOST:PORT")
    p.add_argument("--uname", default=None, help="Tattach uname (default: current user)")
    p.add_argument("--aname", default="")
    p.add_argument("--msize", type=int, default=8192)
    p.add_argument("--timeout", type=float, default=10.0, help="socket timeout, seconds")
    args = p.parse_args(argv)

    out = sys.stdout
    sys.stdout = sys.stderr  # anything the library prints must not corrupt results

    def emit(obj):
        out.write(json.dumps(obj) + "\n")
        out.flush()

    stage = "connect"
    try:
        client = connect(args)
        stage = "version"
        client.negotiate()
        if client.version_string != "9P2000":
            raise RuntimeError(f"server answered version {client.version_string!r}")
        stage = "attach"
        client.attach(ROOT, uname=args.uname or getpass.getuser(), aname=args.aname)
    except RemoteError as exc:
        emit({"op": "connect", "ok": False, "fatal": True, "stage": stage, "error": str(exc), "remote": True})
        return 2
    except Exception as exc:
        emit({"op": "connect", "ok": False, "fatal": True, "stage": stage,
              "error": f"{type(exc).__name__}: {exc}", "remote": False})
        return 2

    drv = Driver(client)
    try:
        for op in iter_ops(sys.stdin):
            emit(drv.run(op))
    finally:
        try:
            client.clunk(ROOT)
        except Exception:
            pass
        client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

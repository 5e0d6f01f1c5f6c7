"""Drive a 9P server with p9fs's ``py9p.py9p.Client`` (9P2000, 9P2000.u, 9P2000.L).

Run with the python of the p9fs venv (tests/harness/venvs.py)::

    python -I p9fs_driver.py --unix /path/to/sock --dialect 9P2000.L < ops
    python -I p9fs_driver.py --tcp 127.0.0.1:5640 --dialect 9P2000 < ops

One file, past the project's 400 lines on purpose: ``-I`` keeps the script's own directory off
sys.path, so in p9fs's venv nothing beside it could be imported.

p9fs's Client takes any connected socket, so UNIX sockets work (only the
fsspec layer, ``p9fs.P9FileSystem``, dials TCP itself; fsspec_write runs it on
the driver's connection instead).
Constructing the Client logs in: Tversion; for 9P2000/9P2000.u a Tauth (afid
10) whose Rerror makes it go on without auth; Tattach fid 11; Twalk 11->12.

Operations, results and error reporting are the same as in py9p_driver.py
(``mode`` is a 9P open mode: 0 OREAD, 1 OWRITE, 2 ORDWR, |16 OTRUNC):
version, walk, read, write, ls, stat, create, remove (each that walks takes
``"stepwise": true``), and fsspec_write
(p9fs's own ``P9FileSystem.open(path, "wb")`` on the same connection),
fsspec_cat (``cat_file``), fsspec_read (``open(path, "rb").read()``) and
fsspec_info (``info``: size and type).  The 9P2000.L dialect
uses Tlopen (mode mapped to O_RDONLY/O_WRONLY/O_RDWR|O_TRUNC), Treaddir +
Tgetattr for ls, Tgetattr for stat, Tlcreate / Tmkdir for create.  Entries
and stats always carry "mode" as a 9P mode (DMDIR = 0x80000000) and "dir";
under 9P2000.L the Linux st_mode is in "unix_mode" too.

Errors: ``{"ok": false, "stage": ..., "remote": true, "error": ENAME}`` for an
Rerror, with ``"errno": N`` too in 9P2000.u (p9fs's Client drops it; the
driver takes it from the reply, see rpc_error), and
``{"ok": false, "stage": ..., "remote": true, "errno": N, "error": strerror}``
for an Rlerror (9P2000.L).
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import socket
import sys

from py9p import py9p

Version = py9p.Version
DMDIR = 0x80000000
FIRST_FID = 100  # the library itself uses fids 10..13


class Incomplete(Exception):
    pass


def s(b) -> str:
    return b.decode("utf-8", "replace") if isinstance(b, (bytes, bytearray)) else str(b)


def qid_json(q) -> list[int]:
    # p9fs decodes qid.type with a *signed* byte: QTDIR comes back as -128.
    return [q.type & 0xFF, q.vers, q.path]


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


def dir_json(d, dotu: bool) -> dict:
    res = {
        "name": s(d.name),
        "mode": d.mode,
        "dir": bool(d.mode & DMDIR),
        "qid": qid_json(d.qid),
        "length": d.length,
        "type": d.type,
        "dev": d.dev,
        "atime": d.atime,
        "mtime": d.mtime,
        "uid": s(d.uid),
        "gid": s(d.gid),
        "muid": s(d.muid),
    }
    if dotu:
        res.update(extension=s(d.extension), uidnum=d.uidnum, gidnum=d.gidnum, muidnum=d.muidnum)
    return res


def lopen_flags(mode: int) -> int:
    flags = (os.O_RDONLY, os.O_WRONLY, os.O_RDWR, os.O_RDONLY)[mode & 3]
    if mode & 16:
        flags |= os.O_TRUNC
    return flags


class Driver:
    def __init__(self, client, version: Version):
        self.c = client
        self.ver = version
        self.dotL = version == Version.v9P2000L
        self.dotu = version == Version.v9P2000u
        self.next_fid = FIRST_FID
        self.stage = ""
        self.stepwise = False

    def fid(self) -> int:
        f = self.next_fid
        self.next_fid += 1
        return f

    @property
    def iosize(self) -> int:
        return self.c.msize - py9p.IOHDRSZ

    def walk_to(self, names: list[str]) -> int:
        """Walk a new fid from the root; with ``stepwise``, one name per Twalk (see py9p_driver.py)."""
        self.stage = "walk"
        fid = self.fid()
        if not self.stepwise:
            r = self.c._walk(self.c.ROOT, fid, names)
            if len(r.wqid) != len(names):
                raise Incomplete(f"walk incomplete: {len(r.wqid)} of {len(names)} elements")
            return fid
        self.c._walk(self.c.ROOT, fid, [])
        try:
            for name in names:
                self.c._walk(fid, fid, [name])
        except BaseException:
            self.clunk_quietly(fid)
            raise
        return fid

    def clunk_quietly(self, fid: int) -> None:
        try:
            self.c._clunk(fid)
        except Exception:
            pass

    def with_fid(self, names, body):
        fid = self.walk_to(names)
        try:
            result = body(fid)
        except BaseException:
            self.clunk_quietly(fid)
            raise
        self.stage = "clunk"
        self.c._clunk(fid)
        return result

    def open(self, fid: int, mode: int):
        self.stage = "open"
        if self.dotL:
            return self.c._lopen(fid, lopen_flags(mode))
        return self.c._open(fid, mode)

    # -- operations -------------------------------------------------------
    def op_version(self, op):
        return {"version": self.ver.value, "msize": self.c.msize}

    def op_walk(self, op):
        self.stage = "walk"
        names = split_path(op.get("path", ""))
        fid = self.fid()
        r = self.c._walk(self.c.ROOT, fid, names)
        complete = len(r.wqid) == len(names)
        if complete:
            self.stage = "clunk"
            self.c._clunk(fid)
        return {"qids": [qid_json(q) for q in r.wqid], "complete": complete}

    def read_all(self, fid: int, iounit: int, offset: int = 0) -> bytes:
        self.stage = "read"
        count = min(iounit or self.iosize, self.iosize)
        chunks = []
        while True:
            data = self.c._read(fid, offset, count).data
            if not data:
                return b"".join(chunks)
            chunks.append(data)
            offset += len(data)

    def op_read(self, op):
        def body(fid):
            r = self.open(fid, int(op.get("mode", 0)))
            offset = int(op.get("offset", 0))
            if "count" in op:
                self.stage = "read"
                data = self.c._read(fid, offset, int(op["count"])).data
            else:
                data = self.read_all(fid, r.iounit, offset)
            return {**data_json(data), "qid": qid_json(r.qid), "iounit": r.iounit}

        return self.with_fid(split_path(op["path"]), body)

    def write_all(self, fid: int, iounit: int, data: bytes, offset: int) -> int:
        self.stage = "write"
        size = min(iounit or self.iosize, self.iosize)
        total = 0
        while True:
            chunk = data[total : total + size]
            n = self.c._write(fid, offset + total, chunk).count
            total += n
            if n == 0 or total >= len(data):
                return total

    def op_write(self, op):
        def body(fid):
            mode = int(op.get("mode", 1)) | (16 if op.get("trunc") else 0)
            r = self.open(fid, mode)
            return {"count": self.write_all(fid, r.iounit, op_data(op), int(op.get("offset", 0)))}

        return self.with_fid(split_path(op["path"]), body)

    def getattr_json(self, fid: int) -> dict:
        self.stage = "getattr"
        r = self.c._getattr(fid)
        st = r.stat[0]
        return {
            "qid": qid_json(r.qid),
            "mode": py9p.mode2plan(st.mode),
            "dir": bool(r.qid.type & py9p.QTDIR),
            "unix_mode": st.mode,
            "uid": st.uid,
            "gid": st.gid,
            "length": st.length,
            "atime": list(st.atime),
            "mtime": list(st.mtime),
            "ctime": list(st.ctime),
        }

    def op_ls(self, op):
        names = split_path(op.get("path", ""))

        def body(fid):
            r = self.open(fid, 0)
            entries = []
            if self.dotL:
                self.stage = "readdir"
                offset = 0
                raw = []
                while True:
                    rr = self.c._readdir(fid, offset, self.iosize)
                    if rr.count == 0 or not rr.stat:
                        break
                    raw.extend(rr.stat)
                    offset = rr.stat[-1].offset
                for e in raw:
                    if e.name in (".", ".."):
                        continue
                    ent = {"name": e.name, "qid": qid_json(e.qid), "dtype": e.type & 0xFF}
                    ent.update({k: v for k, v in self.stat_path(names + [e.name]).items() if k != "qid"})
                    entries.append(ent)
            else:
                buf = self.read_all(fid, r.iounit)
                self.stage = "decode"
                m = py9p.Marshal9P(dotu=self.dotu)
                m.setBuffer(buf)
                m.buf.seek(0)
                stats = []
                m.decstat(stats, 0)
                entries = [dir_json(d, self.dotu) for d in stats]
            return {"entries": entries}

        return self.with_fid(names, body)

    def stat_path(self, names) -> dict:
        def body(fid):
            return self.getattr_json(fid)

        return self.with_fid(names, body)

    def op_stat(self, op):
        def body(fid):
            if self.dotL:
                return {"stat": self.getattr_json(fid)}
            self.stage = "stat"
            stats = self.c._stat(fid).stat
            if len(stats) != 1:
                raise ValueError(f"Rstat carried {len(stats)} stat entries")
            return {"stat": dir_json(stats[0], self.dotu)}

        return self.with_fid(split_path(op.get("path", "")), body)

    def op_create(self, op):
        names = split_path(op["path"])
        if not names:
            raise ValueError("create needs a non-empty path")
        perm = int(op.get("perm", 0o644))
        mode = int(op.get("mode", 1))

        def body(fid):
            self.stage = "create"
            if self.dotL:
                if perm & DMDIR:
                    r = self.c._mkdir(fid, names[-1], perm & 0o777)
                    return {"qid": qid_json(r.qid), "iounit": 0}
                r = self.c._lcreate(fid, names[-1], os.O_CREAT | lopen_flags(mode), perm & 0o777, 0)
            else:
                r = self.c._create(fid, names[-1], perm, mode)
            res = {"qid": qid_json(r.qid), "iounit": r.iounit}
            if "data" in op or "data_hex" in op:
                res["count"] = self.write_all(fid, r.iounit, op_data(op), 0)
            return res

        return self.with_fid(names[:-1], body)

    def op_fsspec_write(self, op):
        """p9fs's own file layer: ``fs.open(path, "wb")``, write, close.

        p9fs creates the name first (Tcreate with OREAD in 9P2000(.u), Tlcreate
        in 9P2000.L), clunks, then opens it for writing with truncation.
        """
        self.stage = "fsspec"
        data = op_data(op)
        with fsspec_on(self.c, self.ver).open(op["path"], "wb") as f:
            f.write(data)
        return {"count": len(data)}

    def op_fsspec_cat(self, op):
        """p9fs's own reading, ``fs.cat_file(path)``: as many bytes as ``fs.info(path)`` says the file has."""
        self.stage = "fsspec"
        return data_json(fsspec_on(self.c, self.ver).cat_file(op["path"]))

    def op_fsspec_read(self, op):
        """``fs.open(path, "rb").read()``: the same through fsspec's file object (its size from a stat too)."""
        self.stage = "fsspec"
        with fsspec_on(self.c, self.ver).open(op["path"], "rb") as f:
            return data_json(f.read())

    def op_fsspec_info(self, op):
        self.stage = "fsspec"
        info = fsspec_on(self.c, self.ver).info(op["path"])
        return {"size": info["size"], "type": info["type"]}

    def op_remove(self, op):
        fid = self.walk_to(split_path(op["path"]))
        self.stage = "remove"
        self.c._remove(fid)  # Tremove clunks the fid whatever the outcome
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
        except py9p.RpcError as exc:
            res.update(ok=False, stage=self.stage, remote=True, **rpc_error(exc, self.c.fd if self.dotu else None))
        except Exception as exc:
            res.update(ok=False, stage=self.stage, error=f"{type(exc).__name__}: {exc}", remote=False)
        return res


def fsspec_on(client, version):
    """A p9fs.P9FileSystem on the driver's connection (its own _connect dials TCP only)."""
    from p9fs import P9FileSystem

    class OnThisClient(P9FileSystem):
        def _connect(self):
            self.client = client

    return OnThisClient(host="", port=0, username="", version=version, skip_instance_cache=True)


def rpc_error(exc: Exception, sock=None) -> dict:
    """p9fs raises RpcError(ename bytes) for Rerror, RpcError(errno int) for Rlerror.

    A 9P2000.u Rerror's errno is decoded by p9fs (Marshal9P.dec) but dropped
    by its Client._rpc, which raises RpcError(ename) alone: it is taken back
    from the reply that ``keep_last_rerror`` kept.
    """
    arg = exc.args[0] if exc.args else ""
    if isinstance(arg, int):
        return {"errno": arg, "error": os.strerror(arg)}
    reply = getattr(sock, "last_rerror", None)
    if reply is not None and reply.ename == arg:  # the Rerror of this op, not an earlier one
        return {"error": s(arg), "errno": reply.errno}
    return {"error": s(arg)}


def keep_last_rerror(sock) -> None:
    """Make p9fs's socket keep the last Rerror it decoded, as ``sock.last_rerror``."""
    recv = sock.recv

    def remembering():
        reply = recv()
        if reply.type == py9p.Rerror:
            sock.last_rerror = reply
        return reply

    sock.last_rerror = None
    sock.recv = remembering


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


def connect_socket(args) -> socket.socket:
    if args.unix:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(args.timeout)
        sock.connect(args.unix)
    else:
        host, _, port = args.tcp.rpartition(":")
        sock = socket.create_connection((host, int(port)), timeout=args.timeout)
    return sock


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--unix", help="path of the server's UNIX socket")
    where.add_argument("--tcp", help="HOST:PORT")
    p.add_argument("--dialect", default="9P2000", choices=[v.value for v in Version])
    p.add_argument("--uname", default=None, help="Tattach uname (default: current user)")
    p.add_argument("--aname", default="", help="Tattach aname (diod wants the export path)")
    p.add_argument("--msize", type=int, default=8192)
    p.add_argument("--timeout", type=float, default=10.0, help="socket timeout, seconds")
    p.add_argument("--chatty", action="store_true", help="p9fs wire trace, on stderr")
    args = p.parse_args(argv)

    out = sys.stdout
    sys.stdout = sys.stderr  # p9fs prints (chatty, tracebacks): keep stdout for results

    def emit(obj):
        out.write(json.dumps(obj) + "\n")
        out.flush()

    version = Version.from_str(args.dialect)
    stage = "connect"
    try:
        sock = connect_socket(args)
        stage = "login"
        client = py9p.Client(
            sock,
            py9p.Credentials(user=args.uname or getpass.getuser()),
            chatty=int(args.chatty),
            ver=version,
            msize=args.msize,
            aname=args.aname,
        )
    except py9p.RpcError as exc:
        emit({"op": "connect", "ok": False, "fatal": True, "stage": stage, "remote": True, **rpc_error(exc)})
        return 2
    except Exception as exc:
        emit({"op": "connect", "ok": False, "fatal": True, "stage": stage,
              "error": f"{type(exc).__name__}: {exc}", "remote": False})
        return 2

    keep_last_rerror(client.fd)
    drv = Driver(client, version)
    try:
        for op in iter_ops(sys.stdin):
            emit(drv.run(op))
    finally:
        for fid in (client.CWD, client.ROOT):
            try:
                client._clunk(fid)
            except Exception:
                pass
        try:
            client.fd.close()
        except Exception:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())

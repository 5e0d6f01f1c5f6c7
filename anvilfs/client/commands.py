"""The client commands, as plan9port's 9p has them: read, write, ls, stat, rdwr, rm.

Each takes a connected Client, the path on the server and the parsed
arguments, writes its output to standard output and returns the exit status.
"""

from __future__ import annotations

import sys
import time

from ..ninep import consts as c
from .address import resolve
from .client import Client
from .errors import ServerError


class CommandError(Exception):
    """A request the command will not carry out as asked; the text says what to do instead."""


def read(client: Client, path: str, args) -> int:
    fid, qid = client.open_with_qid(path, c.OREAD)
    try:
        if qid.type & c.QTDIR:  # its data is binary stat records, of no use on a terminal
            raise CommandError(f"{args.name} is a directory: use `anvilfs ls {args.name}`")
        for data in client.read_chunks(fid):
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()  # a blocking file (events, stream) is followed line by line
    finally:
        client.clunk(fid)
    return 0


def pieces(data: bytes, unit: int, lines: bool) -> list[bytes]:
    """Split input for writing: whole lines per write where they fit (ctl files act per write)."""
    if lines:
        return data.splitlines(keepends=True)
    out = []
    while data:
        piece = data[:unit]
        if len(data) > unit and b"\n" in piece:
            piece = piece[:piece.rindex(b"\n") + 1]
        out.append(piece)
        data = data[len(piece):]
    return out


def write(client: Client, path: str, args) -> int:
    data = (" ".join(args.text) + "\n").encode() if args.text else sys.stdin.buffer.read()
    fid = client.open(path, c.OWRITE)
    try:
        offset = 0
        for piece in pieces(data, client.msize - c.IOHDRSZ, args.lines):
            offset += client.write_chunk(fid, offset, piece)
    except ServerError as exc:
        raise ServerError(with_usage(client, path, str(exc))) from None
    finally:
        client.clunk(fid)
    return 0


SEE_USAGE = "see errors for the usage"


def with_usage(client: Client, path: str, text: str) -> str:
    """A refused ctl line's error, and on the next line its usage, in place of "see errors for the usage".

    The server's error fits plan9port's 127 bytes and keeps the usage for
    `errors`; a person at a shell wants it at once, so it is looked up there
    (the last entry for this file with this text) and put in."""
    if SEE_USAGE not in text:
        return text
    for line in _recorded_errors(client):
        _, found, detail = line.partition(f" {path}: {text}; ")
        if found:
            return text.replace(SEE_USAGE, "").rstrip(" ,") + "\n" + detail  # the usage on a line of its own
    return text


def _recorded_errors(client: Client) -> list[str]:
    """The lines of `errors`, newest first; none when it cannot be read (the error as it came is the answer)."""
    try:
        return client.read_file("errors").decode(errors="replace").splitlines()[::-1]
    except (ServerError, OSError):
        return []


def whole(client: Client, path: str, text: str) -> str:
    """An error cut to plan9port's 127 bytes ("…" at its end), whole, from `errors`: the last line for this
    file whose text, worded for 9P2000 as the server words it (for some errno), is the one that came."""
    from ..errors import KINDS  # noqa: PLC0415 - only for an error cut short: not on every client's start
    from ..ninep.errstr import ELLIPSIS, word_for_9p2000  # noqa: PLC0415

    if not text.endswith(ELLIPSIS):
        return text
    for line in _recorded_errors(client):
        _, found, full = line.partition(f" {path}: ")
        if found and any(word_for_9p2000(full, kind.phrase) == text for kind in KINDS.values()):
            return full
    return text


def _mode_string(mode: int) -> str:
    kind = "d" if mode & c.DMDIR else "-"
    bits = "".join(ch if mode & (1 << (8 - i)) else "-" for i, ch in enumerate("rwxrwxrwx"))
    return kind + bits


def _stat_line(stat) -> str:
    when = time.strftime("%b %e %H:%M", time.localtime(stat.mtime))
    return f"{_mode_string(stat.mode)} {stat.uid} {stat.gid} {stat.length} {when} {stat.name}"


def ls(client: Client, path: str, args) -> int:
    stat = client.stat(path)
    entries = client.list_dir(path) if stat.mode & c.DMDIR and not args.itself else [stat]
    for entry in entries:
        print(_stat_line(entry) if args.long else entry.name)
    return 0


def stat(client: Client, path: str, args) -> int:
    s = client.stat(path)
    print(f"'{s.name}' '{s.uid}' '{s.gid}' '{s.muid}' q ({s.qid.path:016x} {s.qid.version} {s.qid.type:02x}) "
          f"m {s.mode:#o} at {s.atime} mt {s.mtime} l {s.length} t {s.type} d {s.dev}")
    return 0


def rm(client: Client, path: str, args) -> int:
    """As 9p rm: remove each file named (acknowledge a message, remove a session); stop at the first refusal."""
    targets = [resolve(name, args.address) for name in args.names]  # the first is the server connected to
    for name, target in zip(args.names, targets):
        if target.address != targets[0].address:
            raise CommandError(f"{name}: not on the server of {args.name}; one rm per server")
    for name, target in zip(args.names, targets):
        args.name = name  # the name an error is reported for
        client.remove(target.path)
    return 0


def rdwr(client: Client, path: str, args) -> int:
    """As 9p rdwr: print what a read gives, then write a line of input; repeat until input ends."""
    fid = client.open(path, c.ORDWR)
    try:
        while True:
            sys.stdout.buffer.write(client.read_chunk(fid, 0))
            sys.stdout.buffer.flush()
            line = sys.stdin.buffer.readline()
            if not line:
                return 0
            client.write_chunk(fid, 0, line)
    finally:
        client.clunk(fid)


COMMANDS = {"read": read, "write": write, "ls": ls, "stat": stat, "rdwr": rdwr, "rm": rm}

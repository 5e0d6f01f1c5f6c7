"""The `anvilfs` command: `serve`, and a client that behaves like plan9port's 9p.

    anvilfs serve [--namespace DIR] [--state DIR] [--listen tcp!HOST!PORT] [--allow-remote] [--trace]
    anvilfs [-a ADDRESS] read NAME
    anvilfs [-a ADDRESS] write [-l] NAME [TEXT ...]   (TEXT, or else standard input)
    anvilfs [-a ADDRESS] ls [-l] [-d] NAME
    anvilfs [-a ADDRESS] stat NAME
    anvilfs [-a ADDRESS] rdwr NAME
    anvilfs [-a ADDRESS] notify|inbox|approve|reject|mail ...   (anvilfs/client/mailcmds.py)

Without -a, NAME is service/path: `agent/list` is /list on the server at
unix!$NAMESPACE/agent. With -a (unix!/path or tcp!host!port), NAME is the
path on that server.
"""

from __future__ import annotations

import argparse
import getpass
import logging
import os
import sys
import time

from .client import AddressError, Client, ServerError, dial, mailcmds, resolve
from .ninep import consts as c
from .ninep.dialect import MIN_MSIZE
from .server import Limits, ServerOptions, default_namespace, run_server


def default_state_dir() -> str:
    base = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")
    return os.path.join(base, "anvilfs")


def _parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="anvilfs", description="9P file server for LLM coding-agent sessions")
    top.add_argument("-a", dest="address", help="server address: unix!/path or tcp!host!port")
    sub = top.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the file server")
    serve.add_argument("--namespace", default=None, help="directory for the `agent` socket (default $NAMESPACE or /tmp/ns.$USER.$DISPLAY)")
    serve.add_argument("--state", default=None, help="directory for persistent state (default $XDG_STATE_HOME/anvilfs)")
    serve.add_argument("--listen", action="append", default=[], help="also listen on tcp!HOST!PORT (loopback unless --allow-remote)")
    serve.add_argument("--allow-remote", action="store_true", help="allow a non-loopback --listen address (there is no authentication)")
    serve.add_argument("--no-token", action="store_true", help="TCP attaches need no token (every local user can then drive your agents)")
    serve.add_argument("--config", default=None, help="configuration file (default $XDG_CONFIG_HOME/anvilfs/config.toml)")
    serve.add_argument("--tmux-socket", default=None, help="run tmux agents on this tmux server (tmux -L NAME)")
    serve.add_argument("--trace", action="store_true", help="print every 9P message to standard error")
    serve.add_argument("--msize", type=int, default=Limits().max_msize, help="largest message size offered")
    serve.add_argument("--max-connections", type=int, default=256)

    for name in ("read", "stat", "rdwr"):
        p = sub.add_parser(name)
        p.add_argument("-a", dest="sub_address")
        p.add_argument("name")
    write = sub.add_parser("write")
    write.add_argument("-a", dest="sub_address")
    write.add_argument("-l", dest="lines", action="store_true", help="write each line of input with its own write")
    write.add_argument("name")
    write.add_argument("text", nargs="*", help="text to write (a newline is added); standard input if none")
    ls = sub.add_parser("ls")
    ls.add_argument("-a", dest="sub_address")
    ls.add_argument("-l", dest="long", action="store_true")
    ls.add_argument("-d", dest="itself", action="store_true", help="the directory itself, not its entries")
    ls.add_argument("name")
    mailcmds.add_parsers(sub)
    return top


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "serve":
        if args.msize < MIN_MSIZE:
            parser.error(f"--msize {args.msize} is too small: at least {MIN_MSIZE}")
        logging.basicConfig(level=logging.INFO, format="anvilfs: %(message)s")
        options = ServerOptions(
            namespace=args.namespace or default_namespace(),
            state_dir=args.state or default_state_dir(),
            listen=tuple(args.listen), allow_remote=args.allow_remote, trace=args.trace,
            config_path=args.config, tmux_socket=args.tmux_socket, token=not args.no_token,
            max_connections=args.max_connections, limits=Limits(max_msize=args.msize),
        )
        return run_server(options)
    address = getattr(args, "sub_address", None) or args.address
    try:
        target = resolve(args.name, address)
        with Client(dial(target), uname=_user()) as client:
            return _COMMANDS[args.command](client, target.path, args)
    except (AddressError, ServerError) as exc:
        print(f"anvilfs: {args.name}: {exc}", file=sys.stderr)
        return 1
    except (ConnectionError, EOFError):
        print(f"anvilfs: {args.name}: the server closed the connection", file=sys.stderr)
        return 1


def _user() -> str:
    return getpass.getuser()


def _read(client: Client, path: str, args) -> int:
    fid = client.open(path, c.OREAD)
    try:
        for data in client.read_chunks(fid):
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
    finally:
        client.clunk(fid)
    return 0


def _pieces(data: bytes, unit: int, lines: bool) -> list[bytes]:
    """Split input for writing: whole lines per write where they fit (ctl files act per write)."""
    if lines:
        return [line for line in data.splitlines(keepends=True)]
    pieces = []
    while data:
        piece = data[:unit]
        if len(data) > unit and b"\n" in piece:
            piece = piece[:piece.rindex(b"\n") + 1]
        pieces.append(piece)
        data = data[len(piece):]
    return pieces


def _write(client: Client, path: str, args) -> int:
    data = (" ".join(args.text) + "\n").encode() if args.text else sys.stdin.buffer.read()
    fid = client.open(path, c.OWRITE)
    try:
        offset = 0
        for piece in _pieces(data, client.msize - c.IOHDRSZ, args.lines):
            offset += client.write_chunk(fid, offset, piece)
    finally:
        client.clunk(fid)
    return 0


def _mode_string(mode: int) -> str:
    kind = "d" if mode & c.DMDIR else "-"
    bits = "".join(ch if mode & (1 << (8 - i)) else "-" for i, ch in enumerate("rwxrwxrwx"))
    return kind + bits


def _stat_line(stat) -> str:
    when = time.strftime("%b %e %H:%M", time.localtime(stat.mtime))
    return f"{_mode_string(stat.mode)} {stat.uid} {stat.gid} {stat.length} {when} {stat.name}"


def _ls(client: Client, path: str, args) -> int:
    stat = client.stat(path)
    entries = client.list_dir(path) if stat.mode & c.DMDIR and not args.itself else [stat]
    for entry in entries:
        print(_stat_line(entry) if args.long else entry.name)
    return 0


def _stat(client: Client, path: str, args) -> int:
    s = client.stat(path)
    print(f"'{s.name}' '{s.uid}' '{s.gid}' '{s.muid}' q ({s.qid.path:016x} {s.qid.version} {s.qid.type:02x}) "
          f"m {s.mode:#o} at {s.atime} mt {s.mtime} l {s.length} t {s.type} d {s.dev}")
    return 0


def _rdwr(client: Client, path: str, args) -> int:
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


_COMMANDS = {"read": _read, "write": _write, "ls": _ls, "stat": _stat, "rdwr": _rdwr, **mailcmds.COMMANDS}

if __name__ == "__main__":
    sys.exit(main())

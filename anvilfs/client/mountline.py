"""`anvilfs mountline`: the commands that mount a server's tree, with its real socket path.

The namespace directory is plan9port's (places.default_namespace: the login
name from the password database, not $USER), so a line written by hand,
`/tmp/ns.$USER.:0`, is wrong wherever USER is unset or DISPLAY is set; this
prints the right one. No server is needed: it only names the socket.
"""

from __future__ import annotations

import os
import shlex
import sys

from ..places import mount_commands
from .address import AddressError, resolve


def _args(p) -> None:
    p.add_argument("where", nargs="?", default="/mnt/agent", metavar="DIR", help="the mount point (default /mnt/agent)")


PARSERS = {
    "mountline": ("print the commands that mount the server's tree (kernel 9p, or 9pfuse)",
                  "The server's real socket path, from $NAMESPACE or the login name and $DISPLAY as the server "
                  "finds it, or -a unix!PATH. No server is needed.",
                  ["anvilfs mountline", "anvilfs mountline ~/agent", "anvilfs -a unix!/tmp/ns.test/agent mountline"],
                  _args),
}


def mountline(args) -> int:
    if args.address is not None and not args.address.startswith("unix!") and "!" in args.address:
        raise AddressError(f"mountline names a unix socket: for {args.address} see docs/using.md, "
                           "\"Security\" (a TCP mount presents the token as its aname)")
    target = resolve("agent/", args.address)
    kernel, fuse = mount_commands(target.address, args.where)
    print(f"sudo mkdir -p {shlex.quote(args.where)}\n{kernel}\n"
          "# where the kernel has no 9p (no 9p module; macOS): plan9port's 9pfuse, as you\n"
          f"{fuse}")
    if not os.path.exists(target.address):
        print(f"anvilfs: no server at {target.address} yet: start one with `anvilfs serve`", file=sys.stderr)
    return 0

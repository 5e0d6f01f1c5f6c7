"""Who the client says it is when it attaches: uname and aname.

uname is $ANVILFS_SESSION when set (an agent calling back: the server takes
it as the caller's session), else the login name. aname is what the server's
TCP listener checks, its token; the unix socket needs none (its 0600 mode
is the check), so there the aname is '' unless given explicitly.
"""

from __future__ import annotations

import os

from ..places import default_token_path, is_loopback, login_name
from .address import AddressError, Target, describe_os_error


def attach_uname() -> str:
    return os.environ.get("ANVILFS_SESSION") or login_name()


def attach_aname(target: Target, *, aname: str | None = None, token_file: str | None = None) -> str:
    """-A ANAME as given; for TCP, else --token-file, $ANVILFS_TOKEN, the default token file (loopback only), ''."""
    if aname is not None:
        return aname
    if not target.is_tcp:
        return ""
    if token_file is not None:
        return _read_token(token_file, required=True)
    if os.environ.get("ANVILFS_TOKEN"):
        return os.environ["ANVILFS_TOKEN"]
    # The token file of this machine's own server goes only to this machine: sent to another host,
    # or to whoever listens on a port the server left, it would hand them your agents.
    return _read_token(default_token_path(), required=False) if is_loopback(target.address[0]) else ""



def _read_token(path: str, *, required: bool) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip()
    except (OSError, UnicodeDecodeError) as exc:
        if not required:
            return ""  # the server's refusal then says where its token is
        reason = describe_os_error(exc) if isinstance(exc, OSError) else "not UTF-8 text"
        raise AddressError(f"cannot read token file {path}: {reason}; "
                           "give the file the server wrote (STATE/token) or set $ANVILFS_TOKEN") from None

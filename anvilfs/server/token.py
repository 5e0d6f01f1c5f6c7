"""The secret a TCP attach must present as its aname (SPEC §2).

9P has no authentication of its own, and every local user can reach a
loopback port, so the TCP listener admits only attaches whose aname is the
token. The server makes it once in the state directory, file `token`:
64 hex characters and a newline, mode 0600, owned by the server's user.
The `anvilfs` client reads the same file (or $ANVILFS_TOKEN) by itself.
The unix socket needs none: its 0600 mode already keeps others out.
"""

from __future__ import annotations

import errno
import hmac
import os
import re
import secrets
import stat
from dataclasses import dataclass

TOKEN_FILE = "token"
PLAIN_ANAMES = ("", "/", "agent")  # what an attach without the token may name: the one tree
_TOKEN = re.compile(r"[0-9a-f]{64}")
_REMAKE = "remove it and the server makes a new one"


class TokenError(Exception):
    """The token file cannot be trusted or read; the text says how to fix it."""


@dataclass(frozen=True, slots=True)
class Token:
    secret: str
    path: str  # where a refused client is told to look

    def admits(self, aname: str) -> bool:
        return hmac.compare_digest(aname.encode(), self.secret.encode())


def load_or_create(state_dir: str) -> Token:
    """The state directory's token: the one there, if it is sound, else a new one."""
    path = os.path.join(state_dir, TOKEN_FILE)
    try:
        return Token(_create(path), path)
    except FileExistsError:
        return Token(_read(path), path)
    except OSError as exc:
        raise TokenError(f"cannot make the token file {path}: {exc.strerror}") from None


def _create(path: str) -> str:
    secret = secrets.token_hex(32)
    # O_EXCL|O_NOFOLLOW: a file or link planted there is never written through
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.fchmod(fd, 0o600)  # whatever the umask
        os.write(fd, f"{secret}\n".encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    return secret


def _read(path: str) -> str:
    try:
        # O_NONBLOCK: a FIFO planted there must not hang the server
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # O_NOFOLLOW met a link
            raise TokenError(f"token file {path} is a symbolic link: {_REMAKE}") from None
        raise TokenError(f"cannot read the token file {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        problem = _untrusted(os.fstat(fd), path)
        if problem:
            raise TokenError(problem)
        text = f.read(1024).decode("ascii", errors="replace").strip()
    if not _TOKEN.fullmatch(text):
        raise TokenError(f"token file {path} does not hold a token (64 hex digits): {_REMAKE}")
    return text


def _untrusted(info: os.stat_result, path: str) -> str:
    """Why a token file must not be used, or ''."""
    if not stat.S_ISREG(info.st_mode):
        return f"token file {path} is not a regular file: {_REMAKE}"
    if info.st_uid != os.getuid():
        return f"token file {path} belongs to uid {info.st_uid}, not to you: {_REMAKE}"
    mode = stat.S_IMODE(info.st_mode)
    if mode != 0o600:
        # others may have read it already: a new token is the safe fix
        return f"token file {path} has mode {mode:04o}, not 0600: {_REMAKE} (or chmod 600 it)"
    return ""

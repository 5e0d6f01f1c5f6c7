"""How the dispatcher refuses a request: the reply in the dialect's way (SPEC §2) and the line in `errors`.

A mixin of Dispatcher (dispatch.py): it needs the dialect, msize, the fid table and on_error, which the
dispatcher has.
"""

from __future__ import annotations

import errno
import logging
from collections.abc import Callable

from ..errors import AnvilError, kind_of
from ..ninep import Dialect, RequestError
from ..ninep import consts as c
from ..ninep import messages as m
from ..ninep.errstr import fit, word_for_9p2000
from ..ninep.fids import FidTable
from .state import Blocked, Fid

log = logging.getLogger("anvilfs.server")

_ERROR_TEXT_MAX = 1000  # bytes of an error's text kept (for 9P2000.u and agent/errors)

# Refusals every client provokes as a matter of course (Linux asks for
# security.capability xattrs on each write; p9fs tries Tauth): answered, but
# not recorded, so they do not push real errors out of `agent/errors`.
_ROUTINE_REFUSALS = (m.Tauth, m.Txattrwalk)


class Refusals:
    __slots__ = ()
    dialect: Dialect | None
    msize: int
    fids: FidTable
    on_error: Callable[[str, str], None]

    def refusal(self, kind: type[m.Message], fields: tuple, exc: Exception) -> m.Message:
        """The reply to the request of `kind` with `fields` whose handling raised `exc`."""
        if isinstance(exc, AnvilError):
            return self.error(kind, fields, exc.message, exc.errno, detail=exc.detail)
        if isinstance(exc, RequestError):
            return self.error(kind, fields, exc.message, exc.errno)
        # a bug behind one file must not take the connection down
        log.error("%s failed", kind.__name__, exc_info=exc)
        return self.error(kind, fields, f"internal error: {type(exc).__name__}: {exc}", errno.EIO)

    def error(self, kind: type[m.Message], fields: tuple, text: str, code: int, *, detail: str = "",
              record: bool = True) -> m.Message:
        """The reply that refuses the request of `kind` with `fields` (the tag first), in the dialect's way
        (SPEC §2); recorded in `errors` unless `record` is off.

        `text` says what to do and what was wrong; `detail` (a usage) goes only to `errors`.
        """
        record = record and kind not in _ROUTINE_REFUSALS
        where = self._where(kind, fields) if record else ""
        return self.error_for(fields[0], where, text, code, detail=detail, record=record)

    def error_for(self, tag: int, where: str, text: str, code: int, *, detail: str = "",
                  record: bool = True) -> m.Message:
        """The refusal of the request of `tag` about `where` (a path, or what the request was), as error() says.

        For what has no request message to refuse: a frame that did not decode, a blocked read that failed."""
        if record:
            full = f"{text}; {detail}" if detail else text
            self.on_error(where, fit(full, _ERROR_TEXT_MAX))  # errors quote what the client sent
        if self.dialect is Dialect.P2000L:
            return m.Rlerror(tag=tag, ecode=code)
        if self.dialect is Dialect.P2000U:  # the errno travels: the text need not carry it
            ename = fit(text, min(_ERROR_TEXT_MAX, self.msize - c.HEADER_SIZE - 2 - 4))
        else:  # only the text travels: worded for 9pfuse's keywords, within plan9port's ERRMAX
            ename = word_for_9p2000(text, kind_of(code).phrase)
        return m.Rerror(tag=tag, ename=ename, errno=code)

    def blocked_read_failed(self, blocked: Blocked, text: str, code: int, detail: str = "") -> m.Message:
        """The refusal of a read that waited and then failed, recorded under its file's path."""
        return self.error_for(blocked.tag, _path_of(blocked.fid), text, code, detail=detail)

    def _where(self, kind: type[m.Message], fields: tuple) -> str:
        if "fid" in kind.FIELDS:
            fid = self.fids.by_number.get(fields[kind.FIELDS.index("fid")])
            if fid is not None:
                return _path_of(fid)
        return kind.__name__


def _path_of(fid: Fid) -> str:
    """The path a fid names, as `errors` records it."""
    return "/".join(n.name for n in fid.trail[1:]) or "/"

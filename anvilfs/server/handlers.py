"""What answers each request, by wire type: the dispatcher's handlers, and refusals for the rest.

A handler is named here by the dispatcher's method (dispatch.py), or is a
function that refuses a change the tree never makes (attr_requests.py). A
connection looks each frame's handler up in the table ``handler_table``
makes for its dialect, and hands it the frame's fields.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import InvalidRequest, NotSupported
from ..ninep import Dialect
from ..ninep import messages as m
from ..ninep.codec import message_classes
from .attr_requests import refuse_change

_HANDLERS: dict[type, str | Callable] = {
    m.Tversion: "version",
    m.Tauth: "auth",
    m.Tattach: "attach",
    m.Twalk: "walk",
    m.Topen: "open",
    m.Tlopen: "lopen",
    m.Tread: "read",
    m.Treaddir: "readdir",
    m.Twrite: "write",
    m.Tclunk: "clunk",
    m.Tremove: "remove",
    m.Tstat: "stat",
    m.Twstat: "wstat",
    m.Tgetattr: "getattr",
    m.Tsetattr: "setattr",
    m.Tstatfs: "statfs",
    m.Tfsync: "fsync",
    m.Tlock: "lock",
    m.Tgetlock: "getlock",
    m.Txattrwalk: "xattrwalk",
    m.Treadlink: "readlink",
    m.Tcreate: "create",
    m.Tlcreate: "lcreate",
    m.Tunlinkat: "unlinkat",
    **{cls: refuse_change(cls.__name__[1:])
       for cls in (m.Tmkdir, m.Tsymlink, m.Tmknod, m.Tlink, m.Trename, m.Trenameat, m.Txattrcreate)},
}


def handler_table(dispatcher: object, dialect: Dialect | None) -> dict[int, Callable]:
    """Wire type -> the handler of that request, bound to `dispatcher`, taking its fields, in `dialect` (before
    a version, None: every request but Tversion refused); a type not there is not a request of the dialect."""
    table = {}
    for cls in message_classes(dialect or Dialect.P2000):
        handler = _HANDLERS.get(cls)
        if cls.TYPE & 1:
            handler = _refuser(InvalidRequest(f"{cls.__name__} is a reply, not a request"))
        elif handler is None:
            handler = _refuser(NotSupported(f"{cls.__name__} is not a request this server answers"))
        elif dialect is None and cls is not m.Tversion:
            handler = _refuser(InvalidRequest("no version negotiated: send Tversion first"))
        table[cls.TYPE] = getattr(dispatcher, handler) if type(handler) is str else handler.__get__(dispatcher)
    return table


def _refuser(exc: Exception) -> Callable:
    """A handler that refuses every request of its type with `exc`."""
    def refuse(self, tag: int, *fields) -> m.Message:
        raise exc
    return refuse

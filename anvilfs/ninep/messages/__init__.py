"""Every message of 9P2000, 9P2000.u and 9P2000.L as a frozen dataclass.

A class's annotated fields, in order, are its wire layout after the
size[4] type[1] tag[2] header (see ../fields.py). Fields marked for a
dialect are absent from the wire in the others and keep their default there.
"""

from ..fields import Qid, Stat
from .base import MESSAGE_TYPES, Message
from .dotl import *  # noqa: F403
from .p2000 import *  # noqa: F403

# Messages that exist only in 9P2000.L; the rest belong to every dialect
# (9P2000.L servers still speak Tversion, Tattach, Twalk, Tread, ...).
DOTL_ONLY = frozenset(t for t in MESSAGE_TYPES if t < 100)

__all__ = ["DOTL_ONLY", "MESSAGE_TYPES", "Message", "Qid", "Stat"] + sorted(
    cls.__name__ for cls in MESSAGE_TYPES.values()
)

"""Every message of 9P2000, 9P2000.u and 9P2000.L as a frozen dataclass.

A class's annotated fields, in order, are its wire layout after the
size[4] type[1] tag[2] header (see ../fields.py). Fields marked for a
dialect are absent from the wire in the others and keep their default there.

The 39 classes only 9P2000.L has (dotl.py) are made on first use of any of
them: making a dataclass costs a noticeable part of a client's start, and a client
process that speaks 9P2000 (`anvilfs read`) never needs them. Asking this
module for one of their names, for MESSAGE_TYPES, DOTL_ONLY or __all__,
loads them first, so from outside they look always loaded; the codec loads
them when it meets a 9P2000.L message type it does not know yet.
"""

import importlib

from ..fields import Qid, Stat  # noqa: F401 - re-exported: messages.Qid, messages.Stat
from .base import DOTL_LIMIT, Message, message  # noqa: F401 - Message and message re-exported
from .p2000 import *  # noqa: F403


def load_dotl() -> None:
    """Make the 9P2000.L classes and this module's names that list every message."""
    names = globals()
    if "DOTL_ONLY" in names:
        return
    # import_module, not `from . import dotl`: that would ask this module for
    # the attribute first, and so call __getattr__ again
    dotl = importlib.import_module(f"{__name__}.dotl")
    base = importlib.import_module(f"{__name__}.base")
    names.update((k, v) for k, v in vars(dotl).items() if not k.startswith("_"))
    names["MESSAGE_TYPES"] = base.MESSAGE_TYPES
    # Messages that exist only in 9P2000.L; the rest belong to every dialect
    # (9P2000.L servers still speak Tversion, Tattach, Twalk, Tread, ...).
    names["DOTL_ONLY"] = frozenset(t for t in base.MESSAGE_TYPES if t < DOTL_LIMIT)
    names["__all__"] = ["DOTL_ONLY", "MESSAGE_TYPES", "Message", "Qid", "Stat"] + sorted(
        cls.__name__ for cls in base.MESSAGE_TYPES.values())


def __getattr__(name: str):
    if name.startswith("__") and name != "__all__":  # introspection (__wrapped__, ...) needs no messages
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    load_dotl()
    try:
        return globals()[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None

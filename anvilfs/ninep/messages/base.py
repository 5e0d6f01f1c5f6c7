"""The base of every message, and the registry of message classes by wire type."""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass

from ..fields import U16

MESSAGE_TYPES: dict[int, type[Message]] = {}  # complete once messages.load_dotl() has run
DOTL_LIMIT = 100  # 9P2000.L numbers the messages it adds below 100; 9P2000's start at 100

# Making a dataclass compiles each method it writes, which is most of what
# importing the messages costs (every `anvilfs read` pays it). __repr__,
# __eq__ and __hash__ are written once here instead, and behave as the
# generated ones would: the class name and every field, in order.
_RECORD = {"frozen": True, "slots": True, "repr": False, "eq": False}


@dataclass(**_RECORD)
class Message:
    """Base of all messages; TYPE is the wire type number."""

    TYPE: typing.ClassVar[int] = -1
    FIELDS: typing.ClassVar[tuple[str, ...]] = ("tag",)
    tag: U16

    @property
    def is_request(self) -> bool:
        return self.TYPE % 2 == 0

    def _values(self) -> tuple:
        return tuple(getattr(self, name) for name in self.FIELDS)

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.FIELDS)
        return f"{type(self).__qualname__}({fields})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._values() == other._values()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._values())


def message(type_id: int):
    """Register a message class under its wire type number."""

    def register(cls):
        if cls.__doc__ is None:  # else dataclass() renders inspect.signature(cls) as one, slowly
            cls.__doc__ = f"9P message {cls.__name__} (type {type_id})"
        cls = dataclass(**_RECORD)(cls)
        cls.TYPE = type_id
        cls.FIELDS = tuple(f.name for f in dataclasses.fields(cls))
        MESSAGE_TYPES[type_id] = cls
        return cls

    return register

"""The base of every message, and the registry of message classes by wire type."""

from __future__ import annotations

import typing
from dataclasses import dataclass

from ..fields import U16

MESSAGE_TYPES: dict[int, type[Message]] = {}  # complete once messages.load_dotl() has run
DOTL_LIMIT = 100  # 9P2000.L numbers the messages it adds below 100; 9P2000's start at 100


@dataclass(frozen=True, slots=True)
class Message:
    """Base of all messages; TYPE is the wire type number."""

    TYPE: typing.ClassVar[int] = -1
    tag: U16

    @property
    def is_request(self) -> bool:
        return self.TYPE % 2 == 0


def message(type_id: int):
    """Register a message class under its wire type number."""

    def register(cls):
        if cls.__doc__ is None:  # else dataclass() renders inspect.signature(cls) as one, slowly
            cls.__doc__ = f"9P message {cls.__name__} (type {type_id})"
        cls = dataclass(frozen=True, slots=True)(cls)
        cls.TYPE = type_id
        MESSAGE_TYPES[type_id] = cls
        return cls

    return register

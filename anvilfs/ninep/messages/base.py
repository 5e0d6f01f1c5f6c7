"""The base of every message, and the registry of message classes by wire type."""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass

from ..fields import U16

MESSAGE_TYPES: dict[int, type[Message]] = {}  # complete once messages.load_dotl() has run
DOTL_LIMIT = 100  # 9P2000.L numbers the messages it adds below 100; 9P2000's start at 100

# Making a dataclass compiles each method it writes, which is most of what
# importing the messages costs (every `anvilfs read` pays it), far more for a
# class frozen with its __init__ than without. So dataclass() writes
# none here. __repr__, __eq__, __hash__ and the frozen __setattr__ are
# written once in Message; each class's __init__ is compiled on its first
# construction (most processes build a dozen of the 67 kinds), the same
# function dataclass() would have written. A test holds all of it to
# dataclass()'s own (tests/unit/test_message_records.py). Two differences
# remain, which nothing here depends on: dataclass() does not know them
# as frozen (a frozen dataclass cannot subclass one), and a class's
# signature reads (*args, **kwargs) until its first construction.
_RECORD = {"init": False, "slots": True, "repr": False, "eq": False}


@dataclass(**_RECORD)
class Message:
    """Base of all messages; TYPE is the wire type number."""

    TYPE: typing.ClassVar[int] = -1
    FIELDS: typing.ClassVar[tuple[str, ...]] = ("tag",)
    tag: U16

    def __init__(self, *args, **kwargs) -> None:
        _first_init(self, *args, **kwargs)

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

    # Frozen, as dataclass(frozen=True) makes a class: the same errors, and the same state for copy and pickle.
    def __setattr__(self, name: str, value: object) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")

    def __getstate__(self) -> list:
        return [getattr(self, name) for name in self.FIELDS]

    def __setstate__(self, state: list) -> None:
        for name, value in zip(self.FIELDS, state):
            object.__setattr__(self, name, value)


def _first_init(self: Message, *args, **kwargs) -> None:
    """A class's __init__ until its first construction: compile its own, put it on the class, run it.
    Every registered class has this in its own __dict__, so replacing it there changes no other class."""
    cls = type(self)
    init = _compile_init(cls)
    if cls.__dict__.get("__init__") is _first_init:
        cls.__init__ = init
    init(self, *args, **kwargs)


def _compile_init(cls: type[Message]):
    """The __init__ dataclass(frozen=True) writes for cls: its fields in order, with their defaults."""
    fields = dataclasses.fields(cls)
    env = {"set": object.__setattr__}
    params = []
    for f in fields:
        if f.default is dataclasses.MISSING:
            params.append(f.name)
        else:
            env[f"_d_{f.name}"] = f.default
            params.append(f"{f.name}=_d_{f.name}")
    body = "".join(f"    set(self, {f.name!r}, {f.name})\n" for f in fields)
    exec(f"def __init__(self, {', '.join(params)}):\n{body}", env)  # noqa: S102 - built from the class's fields
    init = env["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def message(type_id: int):
    """Register a message class under its wire type number."""

    def register(cls):
        if cls.__doc__ is None:  # else dataclass() renders inspect.signature(cls) as one, slowly
            cls.__doc__ = f"9P message {cls.__name__} (type {type_id})"
        cls = dataclass(**_RECORD)(cls)
        cls.__init__ = _first_init
        cls.TYPE = type_id
        cls.FIELDS = tuple(f.name for f in dataclasses.fields(cls))
        MESSAGE_TYPES[type_id] = cls
        return cls

    return register

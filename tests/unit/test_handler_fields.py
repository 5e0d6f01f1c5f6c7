"""Each request's handler takes the request's fields by position (handler(*read(frame)), server/connection.py),
so its parameters must be named and ordered as its message class's fields: a field added to or moved in a
message class, and not in its handler, must fail here rather than hand a handler the wrong value.

A handler may call a fid's number `number` (its `fid` is then the Fid it finds), and may gather the fields it
does not use in one *rest parameter, after the ones it names.
"""

from __future__ import annotations

import inspect

import pytest

from anvilfs.ninep import Dialect
from anvilfs.ninep.messages.base import MESSAGE_TYPES
from anvilfs.server import Dispatcher, Limits
from anvilfs.tree import Directory

ALIASES = {"number": "fid"}


def _handlers(dialect: Dialect):
    dispatcher = Dispatcher(Directory("/", "/", []), Limits())
    dispatcher.dialect = dialect
    return [(MESSAGE_TYPES[t], h) for t, h in dispatcher.handlers().items() if not MESSAGE_TYPES[t].TYPE & 1]


@pytest.mark.parametrize("dialect", list(Dialect), ids=lambda d: d.value)
def test_every_handler_names_its_requests_fields_in_order(dialect: Dialect) -> None:
    wrong = []
    for cls, handler in _handlers(dialect):
        params = inspect.signature(handler).parameters.values()
        named = [ALIASES.get(p.name, p.name) for p in params if p.kind is p.POSITIONAL_OR_KEYWORD]
        rest = any(p.kind is p.VAR_POSITIONAL for p in params)
        fields = list(cls.FIELDS)
        if named != fields[:len(named)] or (len(named) < len(fields) and not rest):
            wrong.append(f"{cls.__name__}: handler takes {named}{' *rest' if rest else ''}, the message has {fields}")
    assert not wrong, "\n".join(wrong)


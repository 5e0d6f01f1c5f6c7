"""Messages write __repr__, __eq__ and __hash__ once in their base (for import speed):
they must behave exactly as the methods dataclass() would have generated."""

from __future__ import annotations

import dataclasses
import copy
import functools
import inspect
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anvilfs.ninep import messages as m
from strategies import CASES, STRATEGIES


@functools.cache
def generated_twin(cls: type) -> type:
    """A dataclass with cls's name and fields whose methods dataclass() wrote itself."""
    body = {"__annotations__": {f.name: f.type for f in dataclasses.fields(cls)}, "__qualname__": cls.__qualname__,
            **{f.name: f.default for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING}}
    return dataclasses.dataclass(frozen=True, slots=True)(type(cls.__name__, (), body))


def twin_of(msg: m.Message):
    return generated_twin(type(msg))(**{f.name: getattr(msg, f.name) for f in dataclasses.fields(msg)})


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0].__name__}-{c[1].value}")
@settings(max_examples=15)  # x 120 cases; the codec's round-trip tests draw many more messages
@given(data=st.data())
def test_repr_eq_and_hash_are_the_generated_ones(case, data) -> None:
    a, b = data.draw(STRATEGIES[case]), data.draw(STRATEGIES[case])
    assert repr(a) == repr(twin_of(a))
    assert (a == b) == (twin_of(a) == twin_of(b))
    assert a == dataclasses.replace(a) and hash(a) == hash(dataclasses.replace(a)) == hash(twin_of(a))


def test_messages_of_different_types_are_never_equal() -> None:
    assert m.Tclunk(tag=1, fid=2) != m.Tremove(tag=1, fid=2)  # same fields, same values
    assert m.Tclunk(tag=1, fid=2).__eq__((1, 2)) is NotImplemented
    assert m.Tclunk(tag=1, fid=2) != m.Tclunk(tag=1, fid=3)


def test_messages_stay_frozen_with_slots() -> None:
    msg = m.Tclunk(tag=1, fid=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        msg.fid = 3  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del msg.fid
    assert not hasattr(msg, "__dict__")
    walk = m.Twalk(tag=1, fid=2, newfid=3, wnames=("a", "b"))
    assert copy.deepcopy(walk) == walk == pickle.loads(pickle.dumps(walk))  # state set past the frozen __setattr__
    assert m.Tclunk.FIELDS == ("tag", "fid") == m.Tclunk.__match_args__


@pytest.mark.parametrize("cls", sorted(m.MESSAGE_TYPES.values(), key=lambda c: c.TYPE), ids=lambda c: c.__name__)
def test_init_is_the_generated_one(cls) -> None:
    """Each class's __init__, compiled on its first construction, has dataclass()'s signature, and
    builds what the generated twin builds from the same arguments, given by position or by name."""
    twin = generated_twin(cls)
    required = {f.name: f"v{i}" for i, f in enumerate(dataclasses.fields(cls)) if f.default is dataclasses.MISSING}
    by_name = cls(**required)
    assert _parameters(cls.__init__) == _parameters(twin.__init__)
    assert cls.__init__ is not m.Message.__init__ and "__init__" in cls.__dict__
    assert twin_of(by_name) == twin(**required)
    assert cls(*required.values()) == by_name
    too_many = (0,) * (len(cls.FIELDS) + 1)
    for args, kwargs in (((), {}), (too_many, {}), ((), {**required, "nope": 1})):
        with pytest.raises(TypeError) as ours:
            cls(*args, **kwargs)
        with pytest.raises(TypeError) as theirs:
            twin(*args, **kwargs)
        assert str(ours.value).split("()", 1)[1] == str(theirs.value).split("()", 1)[1]


def _parameters(init) -> list[tuple]:
    """A signature as the caller sees it: names, kinds and defaults (our __init__ carries no annotations)."""
    return [(p.name, p.kind, p.default) for p in inspect.signature(init).parameters.values()]

"""Hypothesis strategies for every 9P message, built from the classes' own annotations.

Each message class annotates its wire fields with ``Annotated[type, Kind, (Only)]``.
The strategies here read those annotations (not the codec's compiled layouts) so
they check the codec against the declarations rather than against itself:

* ``metadata[0]`` is the field's Kind and picks the value strategy;
* a second metadata item (an ``Only``) marks a dialect-only field; in a dialect
  that lacks it the field is left at its dataclass default, because it is not
  on the wire there and cannot survive a round trip.

``CASES`` lists every (message class, dialect) pair that exists: all classes in
9P2000.L, and in 9P2000 / 9P2000.u every class except the 9P2000.L-only ones.
"""

from __future__ import annotations

import dataclasses
import typing

from hypothesis import strategies as st

from anvilfs.ninep import messages
from anvilfs.ninep.consts import MAXWELEM, Dialect
from anvilfs.ninep.fields import Kind, Only, Qid, Stat

DIALECTS = tuple(Dialect)

_INT_BOUNDS = {Kind.U8: 0xFF, Kind.U16: 0xFFFF, Kind.U32: 0xFFFFFFFF, Kind.U64: 0xFFFFFFFFFFFFFFFF}


def present(only: Only | None, dialect: Dialect) -> bool:
    """Whether a field marked ``only`` is on the wire in ``dialect`` (written from the specs)."""
    if only is None:
        return True
    if only is Only.DOTU:
        return dialect is Dialect.P2000U
    if only is Only.DOTU_OR_L:
        return dialect in (Dialect.P2000U, Dialect.P2000L)
    raise AssertionError(f"a new Only marker {only!r}: teach the tests about it")


@dataclasses.dataclass(frozen=True)
class Field:
    name: str
    kind: Kind
    only: Only | None
    default: typing.Any


def wire_fields(cls: type) -> list[Field]:
    """The annotated fields of a message (tag included) or of Stat, in order."""
    defaults = {f.name: f.default for f in dataclasses.fields(cls)}
    out = []
    for name, hint in typing.get_type_hints(cls, include_extras=True).items():
        meta = getattr(hint, "__metadata__", None)
        if not meta:
            continue
        only = meta[1] if len(meta) > 1 else None
        out.append(Field(name, meta[0], only, defaults.get(name, dataclasses.MISSING)))
    return out


def ints(kind: Kind) -> st.SearchStrategy[int]:
    top = _INT_BOUNDS[kind]
    # the edges matter most for a fixed-width codec
    return st.one_of(st.sampled_from([0, 1, top - 1, top]), st.integers(0, top))


# Any Unicode string that has a UTF-8 form (no lone surrogates), NUL included.
strings = st.text(alphabet=st.characters(codec="utf-8"), max_size=24)
qids = st.builds(Qid, ints(Kind.U8), ints(Kind.U32), ints(Kind.U64))


def _stats(dialect: Dialect) -> st.SearchStrategy[Stat]:
    return _record(Stat, dialect)


def value_strategy(kind: Kind, dialect: Dialect) -> st.SearchStrategy:
    if kind in _INT_BOUNDS:
        return ints(kind)
    if kind is Kind.STR:
        return strings
    if kind is Kind.DATA:
        return st.binary(max_size=64)
    if kind is Kind.QID:
        return qids
    if kind is Kind.QIDS:
        return st.lists(qids, max_size=MAXWELEM).map(tuple)
    if kind is Kind.NAMES:
        return st.lists(strings, max_size=MAXWELEM).map(tuple)
    if kind is Kind.STAT:
        return _stats(dialect)
    raise AssertionError(f"a new field kind {kind!r}: give it a strategy")


def _record(cls: type, dialect: Dialect) -> st.SearchStrategy:
    """Instances of cls with every field present in dialect drawn, the rest at default."""
    values = {
        f.name: value_strategy(f.kind, dialect)
        for f in wire_fields(cls)
        if present(f.only, dialect)
    }
    return st.fixed_dictionaries(values).map(lambda kw: cls(**kw))


def exists_in(cls: type, dialect: Dialect) -> bool:
    return dialect is Dialect.P2000L or cls.TYPE not in messages.DOTL_ONLY


def message_strategy(cls: type, dialect: Dialect) -> st.SearchStrategy:
    return _record(cls, dialect)


CASES: list[tuple[type, Dialect]] = [
    (cls, dialect)
    for cls in messages.MESSAGE_TYPES.values()
    for dialect in DIALECTS
    if exists_in(cls, dialect)
]

STRATEGIES: dict[tuple[type, Dialect], st.SearchStrategy] = {
    case: message_strategy(*case) for case in CASES
}


def any_message(dialect: Dialect) -> st.SearchStrategy:
    """Any message that exists in dialect."""
    return st.one_of([s for (cls, d), s in STRATEGIES.items() if d is dialect])


def dialect_and_message() -> st.SearchStrategy[tuple[Dialect, messages.Message]]:
    return st.sampled_from(DIALECTS).flatmap(lambda d: st.tuples(st.just(d), any_message(d)))


def case_id(case: tuple[type, Dialect]) -> str:
    cls, dialect = case
    return f"{cls.__name__}-{dialect.value}"

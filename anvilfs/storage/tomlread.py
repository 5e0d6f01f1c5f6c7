"""Read the TOML files the server writes, quickly; anything else goes to tomllib.

A restart reads every bead and convoy file, and tomllib (pure Python) is
slow enough per file to be felt: 10,000 beads parse in 0.80 s with it,
0.33 s here (of a restart's 0.9 s; measured 2026-12-06).
What tomlwrite.py writes is a small subset of TOML in which every value is
also JSON (its strings are JSON strings, its lists JSON arrays, true/false
and numbers alike), so those lines are read with the json module, in C.

The fast path only ever accepts a line it understands fully: a comment, a
`[table]`, an `[[array of tables]]`, or `bare_key = JSON value` where the
value is one TOML would read the same way. A line it does not (an inline
table, a date, a comment after a value, a quoted key, a duplicate: what
people write when they edit a file) sends the whole text to tomllib, which
decides, and whose errors are the ones callers see.
"""

from __future__ import annotations

import json
import json.scanner
import math
import re
import tomllib

_KEY_VALUE = re.compile(r"([A-Za-z0-9_-]+) = (.+)\Z")
_TABLE = re.compile(r"\[([A-Za-z0-9_-]+)\]\Z")
_ARRAY_TABLE = re.compile(r"\[\[([A-Za-z0-9_-]+)\]\]\Z")
# What tomlwrite never writes and where JSON and TOML part ways: a carriage return, a control
# character (raw, even in a comment; tab aside), a surrogate escape (JSON joins a pair into one
# character, TOML refuses each). Text with any of them goes to tomllib whole.
_UNSURE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]|\\u[dD][89a-fA-F]")


class _NotOurs(Exception):
    """A line outside the subset tomlwrite writes: tomllib reads the text."""


def loads(text: str) -> dict:
    """The document, as tomllib.loads gives it; raises tomllib.TOMLDecodeError for text that is not TOML."""
    if _UNSURE.search(text) is None:
        try:
            return _loads_written(text)
        except _NotOurs:
            pass
    return tomllib.loads(text)


def _loads_written(text: str) -> dict:
    document: dict = {}
    made: set[int] = set()  # the arrays of tables this reader made (not `a = []` from a value line)
    table = document
    for line in text.split("\n"):
        if not line or line[0] == "#":
            continue
        if line[0] == "[":
            table = _open_table(document, line, made)
            continue
        found = _KEY_VALUE.match(line)
        if found is None or found[1] in table:
            raise _NotOurs
        table[found[1]] = _value(found[2])
    return document


def _open_table(document: dict, line: str, made: set[int]) -> dict:
    if (found := _ARRAY_TABLE.match(line)) is not None:
        tables = document.get(found[1])
        if tables is None:
            tables = document[found[1]] = []
            made.add(id(tables))
        elif id(tables) not in made:  # a key's value, which TOML does not let a table header extend
            raise _NotOurs
        tables.append({})
        return tables[-1]
    found = _TABLE.match(line)
    if found is None or found[1] in document:
        raise _NotOurs
    document[found[1]] = {}
    return document[found[1]]


def _value(raw: str):
    if raw[0] == "{" or "\\/" in raw:  # inline tables are not JSON; \/ is a JSON escape TOML lacks
        raise _NotOurs
    try:
        value, end = _SCAN(raw, 0)  # the json module's own C scanner, without json.loads' wrapping per call
    except (StopIteration, ValueError):
        raise _NotOurs from None
    if end != len(raw):  # more after the value: a comment, a second value
        raise _NotOurs
    if not _is_toml(value):
        raise _NotOurs
    return value


def _refuse(_: str):
    raise _NotOurs  # NaN and Infinity are JSON extensions; TOML spells them otherwise


_SCAN = json.scanner.make_scanner(json.JSONDecoder(parse_constant=_refuse))


def _is_toml(value) -> bool:
    """JSON's null and objects have no place in this subset; nor have non-finite floats."""
    if isinstance(value, list):
        return all(_is_toml(item) for item in value)
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, str | int)  # bool is an int

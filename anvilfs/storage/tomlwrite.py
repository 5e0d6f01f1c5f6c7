"""A small, fast TOML writer for the files the server rewrites on every change (beads, convoys).

tomlkit keeps comments and layout, which matters for files people edit;
it is slow for a file saved at every change, which matters here. While a
bead's file is exactly what this writer made (objects.py checks), this plain
writer does: tables of scalars, lists and inline tables, and arrays of
tables. The standard library's tomllib reads them back.
"""

from __future__ import annotations

import functools
import math
import re
from json.encoder import encode_basestring

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+\Z")


@functools.lru_cache(maxsize=1024)  # the same few keys in every file; the regex costs more than the lookup
def _key(key: str) -> str:
    return key if _BARE_KEY.match(key) else _string(key)


def _string(text: str) -> str:
    # JSON string escapes are TOML basic-string escapes, but for DEL, which TOML wants escaped.
    # encode_basestring is what json.dumps(text, ensure_ascii=False) runs, without its setup per call.
    return encode_basestring(text).replace("\x7f", "\\u007f")


def value(v) -> str:
    """One TOML value, on one line."""
    if type(v) is str:  # the most common value: no isinstance chain for it
        return _string(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError(f"TOML has no {v!r} worth keeping here")
        return repr(v)
    if isinstance(v, str):
        return _string(v)
    if isinstance(v, list | tuple):
        return "[" + ", ".join(value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_key(k)} = {value(x)}" for k, x in v.items()) + "}"
    raise TypeError(f"cannot write {type(v).__name__} as TOML")


def _lines(table: dict) -> list[str]:
    return [f"{_key(k)} = {value(x)}" for k, x in table.items()]


def dumps(document: dict, *, comment: str = "") -> str:
    """Top-level dicts become [tables], lists of dicts [[arrays of tables]]; the rest key = value."""
    head = [f"# {comment}"] if comment else []
    scalars, sections = [], []
    for name, v in document.items():
        if isinstance(v, dict):
            sections.append(f"\n[{_key(name)}]")
            sections.extend(_lines(v))
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            for table in v:
                sections.append(f"\n[[{_key(name)}]]")
                sections.extend(_lines(table))
        else:
            scalars.append(f"{_key(name)} = {value(v)}")
    return "\n".join(head + scalars + sections) + "\n"

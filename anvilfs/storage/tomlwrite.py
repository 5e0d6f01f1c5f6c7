"""A small, fast TOML writer for the files the server rewrites on every change.

tomlkit keeps comments and layout, which matters for files people edit
(the configuration); it costs ~3 ms per session save, which matters here.
Session files are written by the server alone, so this plain writer does:
tables of scalars, lists and inline tables, and arrays of tables. Reading
them back is tomlread.py's job (the standard library's tomllib for what a
person has edited).
"""

from __future__ import annotations

import json
import math
import re

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+\Z")


def _key(key: str) -> str:
    return key if _BARE_KEY.match(key) else _string(key)


def _string(text: str) -> str:
    # JSON string escapes are TOML basic-string escapes, but for DEL, which TOML wants escaped
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def value(v) -> str:
    """One TOML value, on one line."""
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


def dumps(document: dict, *, comment: str = "") -> str:
    """Top-level dicts become [tables], lists of dicts [[arrays of tables]]; the rest key = value."""
    head = [f"# {comment}"] if comment else []
    scalars, sections = [], []
    for name, v in document.items():
        if isinstance(v, dict):
            sections.append(f"\n[{_key(name)}]")
            sections.extend(f"{_key(k)} = {value(x)}" for k, x in v.items())
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            for table in v:
                sections.append(f"\n[[{_key(name)}]]")
                sections.extend(f"{_key(k)} = {value(x)}" for k, x in table.items())
        else:
            scalars.append(f"{_key(name)} = {value(v)}")
    return "\n".join(head + scalars + sections) + "\n"

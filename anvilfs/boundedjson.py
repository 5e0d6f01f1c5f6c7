"""JSON that a client sent, parsed with a bound on how deep it nests.

json.loads recurses once per level of nesting, so a document nested a few
thousand deep raises RecursionError, which no caller expects: the server
answered it EIO "internal error" and the web a 500. And a document nested
just under Python's limit parses, but then fails whatever walks it
recursively (pydantic's messages, repr, json.dumps). No JSON that anvilfs
takes from a client nests deeper than a few levels (a message is one flat
object), so anything deeper than MAX_DEPTH is refused as the client's
mistake. Neither layer may depend on the other, so this stands alone: the
server's mail and the web's answers both use it.
"""

from __future__ import annotations

import json

MAX_DEPTH = 32  # levels of arrays and objects; a message or a web answer uses 1


class TooDeep(ValueError):
    """The document nests deeper than MAX_DEPTH; the text says how deep and the bound."""


def loads(data: bytes | str, most: int | None = MAX_DEPTH) -> object:
    """The document, as json.loads gives it, or TooDeep; json.JSONDecodeError for text that is not JSON.

    most=None refuses only what json.loads cannot parse, for a reader that walks no deeper than it looks
    (the hook, in a transcript whose tool calls may nest deep)."""
    try:
        doc = json.loads(data)
    except RecursionError:
        raise TooDeep(f"JSON nests arrays and objects far deeper than {most or MAX_DEPTH} levels; "
                      f"at most {most or MAX_DEPTH}") from None
    if most is not None and (depth := nesting(doc)) > most:
        raise TooDeep(f"JSON nests arrays and objects {depth} levels deep; at most {most}")
    return doc


def nesting(doc: object) -> int:
    """How deep lists and dicts nest in doc (0 for a scalar), counted without recursion."""
    deepest, todo = 0, [(doc, 1)]
    while todo:
        value, level = todo.pop()
        if isinstance(value, dict):
            value = list(value.values())
        if isinstance(value, list):
            deepest = max(deepest, level)
            todo.extend((item, level + 1) for item in value if isinstance(item, (list, dict)))
    return deepest

"""Where in a TOML file a value is: a key path (as pydantic's error `loc`) -> its line number.

tomllib and tomlkit give values without positions, so this reads the source
the way TOML does: table headers (`[a.b]`, `[[steps]]`, `[[steps.steps]]`, whose
array elements are counted), then `key = value` lines inside the current
table. Multi-line strings and arrays are skipped over (their key's line is
the answer for anything inside them). A path not found falls back to its
longest prefix that was: an error in an inline table names the line of its key.
"""

from __future__ import annotations

import re

Path = tuple[str | int, ...]

_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"""^\s*((?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*'))*)\s*=\s*(.*)$""")


def _split_key(text: str) -> list[str]:
    parts = re.findall(r"""[A-Za-z0-9_-]+|"[^"]*"|'[^']*'""", text)
    return [p[1:-1] if p[:1] in "\"'" else p for p in parts]


class Locator:
    def __init__(self, source: str):
        self.lines: dict[Path, int] = {}
        self._arrays: dict[Path, int] = {}  # array-of-tables path -> index of its last element
        self._scan(source)

    def line_of(self, loc: Path) -> int | None:
        for end in range(len(loc), -1, -1):
            if (line := self.lines.get(tuple(loc[:end]))) is not None:
                return line
        return None

    def _resolve(self, keys: list[str]) -> Path:
        """A dotted header's path, with the index of each array of tables on the way."""
        path: Path = ()
        for key in keys:
            path += (key,)
            if path in self._arrays:
                path += (self._arrays[path],)
        return path

    def _scan(self, source: str) -> None:
        table: Path = ()
        closing: str | None = None  # inside a multi-line string: its closing quotes
        depth = 0  # inside a multi-line array
        for number, line in enumerate(source.splitlines(), start=1):
            if closing is not None:
                if line.count(closing) % 2 == 1:
                    closing = None
                continue
            if depth > 0:
                depth += _bracket_balance(line)
                continue
            if header := _HEADER.match(line):
                keys = _split_key(header.group(2))
                if header.group(1) == "[[":
                    parent = self._resolve(keys[:-1]) + (keys[-1],)
                    self._arrays[parent] = self._arrays.get(parent, -1) + 1
                table = self._resolve(keys)
                self.lines.setdefault(table, number)
                continue
            if key := _KEY.match(line):
                self.lines.setdefault(table + tuple(_split_key(key.group(1))), number)
                value = key.group(2)
                for quotes in ('"""', "'''"):
                    if value.startswith(quotes) and value.count(quotes) == 1:
                        closing = quotes
                if closing is None and value.startswith("["):
                    depth = _bracket_balance(value)


def _bracket_balance(text: str) -> int:
    """Opening minus closing brackets outside strings and comments (good enough for arrays of values)."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"|\'[^\']*\'', "", text).split("#", 1)[0]
    return text.count("[") - text.count("]")

"""Split a ctl line into words.

Plan 9 quoting (rc, tokenize(2)): 'single quotes', where '' inside stands for
one quote. Also "double quotes" with backslash escapes, as the idea notes
write (`new "Research auth" researcher "Analyze the code"`), so lines typed
for a POSIX shell mean the same here.
"""

from __future__ import annotations

from ..errors import InvalidRequest

_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"'}


def split_words(line: str) -> list[str]:
    """The words of one line; raises InvalidRequest on an unclosed quote."""
    words: list[str] = []
    i, n = 0, len(line)
    while i < n:
        if line[i] in " \t":
            i += 1
            continue
        word: list[str] = []
        while i < n and line[i] not in " \t":
            ch = line[i]
            if ch == "'":
                i = _single(line, i + 1, word)
            elif ch == '"':
                i = _double(line, i + 1, word)
            else:
                word.append(ch)
                i += 1
        words.append("".join(word))
    return words


def _single(line: str, i: int, word: list[str]) -> int:
    while True:
        end = line.find("'", i)
        if end < 0:
            raise InvalidRequest(f"close the quote ' (write '' for one inside): it is open in {line!r}")
        word.append(line[i:end])
        if line.startswith("''", end):
            word.append("'")
            i = end + 2
            continue
        return end + 1


def _double(line: str, i: int, word: list[str]) -> int:
    n = len(line)
    while i < n:
        ch = line[i]
        if ch == '"':
            return i + 1
        if ch == "\\" and i + 1 < n:
            word.append(_ESCAPES.get(line[i + 1], "\\" + line[i + 1]))
            i += 2
            continue
        word.append(ch)
        i += 1
    raise InvalidRequest(f'close the quote " (write \\" for one inside): it is open in {line!r}')


def quote_word(word: str) -> str:
    """Quote a word Plan 9 style when it needs it, so split_words gives it back."""
    if word and not any(c in word for c in " \t'\"\n"):
        return word
    return "'" + word.replace("'", "''") + "'"

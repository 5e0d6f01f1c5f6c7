"""Words of a ctl line made from a user's text, so that the server's splitting gives them back whole.

    ctl_line("reject", reason)     ->  'reject "it\\'s wrong\\nsee x"\\n'

The server splits a ctl line Plan 9 style, with "double quotes" taking
backslash escapes (tree/quoting.py); a text with a quote, a space or a line
break, pasted unquoted, would become other words or a second command. Every
client that puts a person's or a model's text into a ctl line goes through
here (the client imports nothing of the server, hence a copy of the rule).
"""

from __future__ import annotations

_ESCAPED = str.maketrans({"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t"})


def quote(word: str) -> str:
    """WORD as one ctl word: bare when it is plain, else in double quotes with escapes."""
    if word and not any(ch in word for ch in " \t\n\r'\"\\"):
        return word
    return '"' + word.translate(_ESCAPED) + '"'


def ctl_line(verb: str, *words: str) -> str:
    """One ctl command, ending in a newline: the verb as it is, every word quoted."""
    return " ".join([verb, *(quote(word) for word in words)]) + "\n"

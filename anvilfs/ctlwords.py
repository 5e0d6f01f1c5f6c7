"""Writing ctl lines: each word quoted Plan 9 style, so the server's split_words gives it back.

The server splits ctl lines (tree/quoting.py) and clients make them (`anvilfs
reject`, `anvilfs web`), without the client importing the server: so the
quoting lives here, on its own, as places.py does for addresses.
"""

from __future__ import annotations



def quote_word(word: str) -> str:
    """Quote a word Plan 9 style when it needs it, so split_words gives it back."""
    if word and not any(c in word for c in " \t'\"\n"):
        return word
    return "'" + word.replace("'", "''") + "'"


def ctl_line(*words: str) -> str:
    """One ctl command with each word quoted, ending in a newline; ValueError for a word with a newline.

    Only a newline ends a command in a ctl write, and no quoting carries one: a word holding it would
    end the command there and start another (`reject 'looks wrong` then `unclaim'`)."""
    for word in words:
        if "\n" in word:
            raise ValueError(f"{word!r} holds a line break, which would end the ctl command there and start "
                             "another: write it on one line")
    return " ".join(map(quote_word, words)) + "\n"

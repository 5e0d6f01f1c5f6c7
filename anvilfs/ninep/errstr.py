"""How a plain 9P2000 client turns error text into an errno, and wording that survives it.

9P2000's Rerror carries only text. plan9port's 9pfuse (src/cmd/9pfuse/errstr.c)
gives the kernel the errno of the first keyword of its table that the text
contains, case-insensitively, and ERANGE when none does; plan9port keeps at
most ERRMAX-1 (127) bytes of the text. A text meant for one errno must
therefore not contain a keyword that comes earlier in the table for another
errno: "interrupt" anywhere turns a refusal into EINTR, which callers retry
for ever.
"""

from __future__ import annotations

import errno as _errno
import re

ERRMAX = 128  # plan9port's buffer for an error string, its NUL included

# errstr.c's errortab, in its order (the order decides).
NINEPFUSE_TABLE: tuple[tuple[str, int], ...] = (
    ("permitted", _errno.EPERM),
    ("permission", _errno.EACCES),
    ("access", _errno.EACCES),
    ("exists", _errno.EEXIST),
    ("exist", _errno.ENOENT),
    ("no such", _errno.ENOENT),
    ("not found", _errno.ENOENT),
    ("not implemented", _errno.ENOSYS),
    ("input/output", _errno.EIO),
    ("timeout", _errno.ETIMEDOUT),
    ("timed out", _errno.ETIMEDOUT),
    ("i/o", _errno.EIO),
    ("too long", _errno.E2BIG),
    ("interrupt", _errno.EINTR),
    ("no such", _errno.ENODEV),
    ("bad file", _errno.EBADF),
    (" fid ", _errno.EBADF),
    ("temporar", _errno.EAGAIN),
    ("memory", _errno.ENOMEM),
    ("is a directory", _errno.EISDIR),
    ("directory", _errno.ENOTDIR),
    ("argument", _errno.EINVAL),
    ("pipe", _errno.EPIPE),
    ("in use", _errno.EBUSY),
    ("busy", _errno.EBUSY),
    ("illegal", _errno.EINVAL),
    ("invalid", _errno.EINVAL),
    ("read-only", _errno.EROFS),
    ("read only", _errno.EROFS),
    ("stale ", _errno.ESTALE),
    ("proto", _errno.EPROTO),
    ("entry", _errno.ENOENT),
)
NO_KEYWORD = _errno.ERANGE  # 9pfuse: "who knows - be blatantly wrong"

# Words to say instead of a keyword that would win for the wrong errno.
# Longer phrases first, so "does not exist" is replaced whole, not as "exist".
_INSTEAD = (
    ("does not exist", "is not there"),
    ("existing", "present"),
    ("exists", "is there"),
    ("exist", "be there"),
    ("permitted", "allowed"),
    ("permission", "right"),
    ("access", "reach"),
    ("no such", "no"),
    ("not found", "missing"),
    ("not implemented", "not supported"),
    ("input/output", "I-O"),
    ("timeout", "time limit"),
    ("timed out", "ran out of time"),
    ("i/o", "I-O"),
    ("too long", "too large"),
    ("interrupt", "intr"),
    ("bad file", "unusable file"),
    (" fid ", " file id "),
    ("temporarily", "for now"),
    ("temporar", "short-lived"),
    ("memory", "RAM"),
    ("is a directory", "is a dir"),
    ("directory", "dir"),
    ("argument", "word"),
    ("pipe", "channel"),
    ("in use", "taken"),
    ("busy", "occupied"),
    ("illegal", "not allowed"),
    ("invalid", "not valid"),
    ("read-only", "only for reading"),
    ("read only", "only for reading"),
    ("stale ", "old "),
    ("proto", "9P rules"),
    ("entry", "item"),
)


def ninepfuse_errno(text: str) -> int:
    """The errno 9pfuse gives a process for an Rerror with this text."""
    text = text.encode()[:ERRMAX - 1].decode(errors="ignore").lower()
    for keyword, code in NINEPFUSE_TABLE:
        if keyword in text:
            return code
    return NO_KEYWORD


ELLIPSIS = "\u2026"  # "…", 3 bytes: marks a text that was cut


def fit(text: str, limit: int) -> str:
    """At most `limit` bytes of UTF-8, cut after a whole word where one is near, marked "…" when cut.

    A word cut in half reads as another word ("invalid, see errors for the us"),
    so the cut goes back to the last space, unless that would lose more than
    half the room (one long word: then at a character)."""
    raw = text.encode()
    if len(raw) <= limit:
        return text
    head = raw[:max(limit - len(ELLIPSIS.encode()), 0)].decode(errors="ignore")
    if not text[len(head):len(head) + 1].isspace():  # the cut is inside a word
        space = head.rfind(" ")
        if space > len(head) // 2:
            head = head[:space]
    return head.rstrip(" ,;:") + ELLIPSIS


def word_for_9p2000(text: str, phrase: str, limit: int = ERRMAX - 1) -> str:
    """`text` reworded so 9pfuse maps it as it maps `phrase`, in at most `limit` bytes.

    Keywords that would win for another errno are replaced by plain words;
    if the text still does not carry the right keyword, `phrase` goes first.
    """
    wanted = ninepfuse_errno(phrase)
    for candidate in (text, _avoid(text, wanted)):
        candidate = fit(candidate, limit)
        if ninepfuse_errno(candidate) == wanted:
            return candidate
    candidate = fit(f"{phrase}: {_avoid(text, wanted)}", limit)
    return candidate if ninepfuse_errno(candidate) == wanted else fit(phrase, limit)


def _avoid(text: str, wanted: int) -> str:
    """Replace the keywords that come before `wanted`'s first one in the table and mean another errno."""
    earlier = set()
    for keyword, code in NINEPFUSE_TABLE:
        if code == wanted:
            break
        earlier.add(keyword)
    for keyword, instead in _INSTEAD:
        if keyword in earlier or any(k in keyword for k in earlier):
            text = re.sub(re.escape(keyword), instead, text, flags=re.IGNORECASE)
    return text

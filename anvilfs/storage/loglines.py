"""The line format of the write-ahead logs (AppendLog, RedoLog): CRC32 (8 hex digits) SP record LF.

A crash in the middle of a write leaves a torn last line, and a damaged disk a
line whose CRC does not match; either way the reader leaves that record out.
"""

from __future__ import annotations

import zlib


def crc_line(record: bytes) -> bytes:
    """A record (no LF in it) as a line of a log."""
    return b"%08x %s\n" % (zlib.crc32(record), record)


def checked_line(line: bytes) -> bytes | None:
    """The record of a line (without its LF), or None if its CRC does not match (torn or damaged)."""
    crc, _, record = line.partition(b" ")
    try:
        return record if len(crc) == 8 and int(crc, 16) == zlib.crc32(record) else None
    except ValueError:
        return None

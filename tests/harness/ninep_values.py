"""9P numbers the client-harness tests write by hand from intro(5), not taken from anvilfs: the
reference encoder they check the python-9p oracle against must share nothing with the code under test."""

from __future__ import annotations

DMDIR = 0x80000000
QTDIR = 0x80
NOTAG = 0xFFFF
NOFID = 0xFFFFFFFF
U64 = (1 << 64) - 1
I64 = (1 << 63) - 1

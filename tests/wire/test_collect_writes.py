"""Prompts collected from many writes: appended in order, each byte checked once."""

from __future__ import annotations

import pytest

from anvilfs.errors import InvalidRequest
from anvilfs.tree import Caller, CollectFile

GLENDA = Caller("glenda")


def collector():
    submitted: list[bytes] = []
    sizes: list[int] = []
    file = CollectFile(
        "in", "in", check=lambda size, caller: sizes.append(size),
        submit=lambda data, caller: submitted.append(data), abandoned=lambda data, caller: None,
    )
    return file.open(GLENDA), submitted, sizes


def write_in_pieces(handle, data: bytes, piece: int) -> None:
    for offset in range(0, len(data), piece):
        assert handle.write(offset, data[offset:offset + piece]) == len(data[offset:offset + piece])


def test_a_megabyte_in_4500_small_writes_is_checked_once_per_byte():
    text = ("naïve café € " * 80_000).encode()[: 1 << 20]
    text = text[: len(text.decode(errors="ignore").encode())]  # end on a whole character
    handle, submitted, sizes = collector()
    write_in_pieces(handle, text, 231)  # 231 splits many of the 2- and 3-byte characters
    handle.clunk()
    assert submitted == [text]
    # every byte went through the UTF-8 check once: linear, not once per write
    assert handle._utf8.checked == len(text)
    assert sizes[-1] == len(text)


def test_a_retried_write_is_collected_once():
    handle, submitted, _ = collector()
    handle.write(0, b"hello ")
    assert handle.write(0, b"hello ") == 6  # the same bytes again: a retry
    handle.write(3, b"lo world")  # repeats "lo " and adds "world"
    handle.clunk()
    assert submitted == [b"hello world"]


def test_a_write_that_changes_written_bytes_is_refused_and_changes_nothing():
    handle, submitted, _ = collector()
    handle.write(0, b"hello world")
    with pytest.raises(InvalidRequest, match=r"in: write at offset 6 would change bytes already written \(it has 11\); "
                                              r"write each part once, in order"):
        handle.write(6, b"there")
    handle.write(11, b"!")
    handle.clunk()
    assert submitted == [b"hello world!"]


def test_a_gap_is_refused():
    handle, _, _ = collector()
    handle.write(0, b"abc")
    with pytest.raises(InvalidRequest, match="write at offset 5 leaves a gap after 3 bytes; write in order"):
        handle.write(5, b"x")


def test_bad_utf8_after_a_carried_character_names_its_byte_and_keeps_the_state():
    handle, submitted, _ = collector()
    handle.write(0, b"ab\xe2\x82")  # the first two bytes of a euro sign
    with pytest.raises(InvalidRequest, match="in: not valid UTF-8 at byte 2; write text"):
        handle.write(4, b"x")  # not the third byte the euro sign needs
    handle.write(4, b"\xac!")  # the refused write changed nothing: this finishes it
    handle.clunk()
    assert submitted == ["ab€!".encode()]


def test_a_close_after_writes_of_nothing_is_reported_but_an_open_and_close_is_not():
    ignored: list[str] = []
    file = CollectFile(
        "in", "in", check=lambda size, caller: None, submit=lambda data, caller: ignored.append("submitted"),
        abandoned=lambda data, caller: None, ignored=lambda caller: ignored.append(caller.uname),
    )
    file.open(GLENDA).clunk()  # SPEC §4: an open and close that wrote nothing is not a prompt
    assert ignored == []
    handle = file.open(GLENDA)
    assert handle.write(0, b"") == 0  # `printf '' | 9p write` sends this
    handle.clunk()
    assert ignored == ["glenda"]


def test_the_first_write_of_an_open_may_come_at_any_offset_as_a_shells_append_does():
    """`echo a > in; echo b >> in` on a mount: the append's write comes at the size the kernel remembers."""
    handle, got, _ = collector()
    handle.write(6, b"second ")
    handle.write(13, b"prompt\n")
    with pytest.raises(InvalidRequest, match="leaves a gap"):
        handle.write(100, b"x")
    with pytest.raises(InvalidRequest, match="comes before the first write of this open"):
        handle.write(2, b"x")
    handle.clunk()
    assert got == [b"second prompt\n"]


def test_a_refused_first_write_does_not_fix_where_the_open_begins():
    handle, got, _ = collector()
    with pytest.raises(InvalidRequest, match="not valid UTF-8"):
        handle.write(100, b"\xff")
    handle.write(0, b"fine\n")
    handle.clunk()
    assert got == [b"fine\n"]

"""The sans-IO server core (anvilfs/ninep/serving.py) alone: tags in flight, flush order, the version reset.

No trio and no connection: a pending request's `scope` is anything with
cancel(), here one that records that it was cancelled. Each test is a row
of the table in serving.py's docstring.
"""

from __future__ import annotations

from anvilfs.ninep.consts import NOTAG
from anvilfs.ninep.serving import Pending, ServerProtocol


class Scope:
    def __init__(self) -> None:
        self.cancelled = 0

    def cancel(self) -> None:
        self.cancelled += 1


def pending(fid: int = -1, flushable: bool = True) -> Pending:
    return Pending(scope=Scope(), fid_number=fid, flushable=flushable)


def test_nothing_in_flight_leaves_both_tables_empty() -> None:
    core = ServerProtocol()
    assert not core.tags and not core.flushing  # the connection's per-frame test
    assert not core.in_flight(1)


def test_a_pending_request_holds_its_tag_until_it_ends() -> None:
    core, read = ServerProtocol(), pending(fid=4)
    core.begin(7, read)
    assert core.in_flight(7) and not core.in_flight(8)
    core.end(7, read)
    assert not core.in_flight(7) and not core.tags
    assert core.flushes_after(read) == []  # nobody flushed it: no Rflush to send


def test_a_flush_of_a_free_tag_is_answered_at_once() -> None:
    core = ServerProtocol()
    assert core.flush(tag=2, oldtag=9) is True
    assert core.flush(tag=3, oldtag=NOTAG) is True
    assert not core.flushing


def test_a_flush_cancels_the_pending_request_and_is_answered_after_it_in_order() -> None:
    core, read = ServerProtocol(), pending(fid=4)
    core.begin(7, read)
    assert core.flush(tag=2, oldtag=7) is False
    assert core.flush(tag=3, oldtag=7) is False  # a second flush of it waits too
    assert read.scope.cancelled == 2 and read.outcome == "flush"
    assert core.in_flight(2) and core.in_flight(3)  # a waiting Tflush's tag is itself in flight
    core.end(7, read)
    assert core.flushes_after(read) == [2, 3]  # Rflushes in the order the flushes came
    assert not core.flushing and not core.in_flight(2)


def test_a_flush_of_a_waiting_flush_is_answered_after_it() -> None:
    core, read = ServerProtocol(), pending()
    core.begin(7, read)
    core.flush(tag=2, oldtag=7)
    assert core.flush(tag=5, oldtag=2) is False  # flush of the pending Tflush 2
    core.end(7, read)
    assert core.flushes_after(read) == [2, 5]


def test_a_deferred_reply_is_not_cancelled_by_a_flush_which_waits_for_it() -> None:
    core, clunk = ServerProtocol(), pending(flushable=False)  # a clunk whose prompt is on its way to disk
    core.begin(7, clunk)
    assert core.flush(tag=2, oldtag=7) is False
    assert clunk.scope.cancelled == 0 and clunk.outcome == ""
    core.end(7, clunk)
    assert core.flushes_after(clunk) == [2]


def test_a_clunk_ends_the_reads_of_its_fid_only() -> None:
    core, mine, other = ServerProtocol(), pending(fid=4), pending(fid=5)
    core.begin(7, mine)
    core.begin(8, other)
    core.ends_with_fid(4)
    assert mine.scope.cancelled == 1 and mine.outcome == "clunk"
    assert other.scope.cancelled == 0 and other.outcome == ""


def test_the_first_reason_to_cancel_is_the_one_kept() -> None:
    core, read = ServerProtocol(), pending(fid=4)
    core.begin(7, read)
    core.flush(tag=2, oldtag=7)
    core.ends_with_fid(4)
    assert read.outcome == "flush"


def test_a_version_cancels_everything_unanswered_and_frees_every_tag() -> None:
    core, read, clunk = ServerProtocol(), pending(fid=4), pending(flushable=False)
    core.begin(7, read)
    core.begin(8, clunk)
    core.flush(tag=2, oldtag=7)
    tags, flushing = core.tags, core.flushing
    core.reset()
    assert read.scope.cancelled == 2 and clunk.scope.cancelled == 1  # the flush's cancel, then the reset's
    assert read.outcome == clunk.outcome == "reset"
    assert not core.tags and not core.flushing and not core.in_flight(2)
    assert core.tags is tags and core.flushing is flushing  # emptied in place: the connection holds them


def test_a_request_ending_after_a_reset_frees_no_other_request_of_its_tag() -> None:
    core, old, new = ServerProtocol(), pending(), pending()
    core.begin(7, old)
    core.reset()
    core.begin(7, new)  # the tag taken again after the Tversion
    core.end(7, old)  # the cancelled one's task finishes late
    assert core.in_flight(7) and core.tags.get(7) is new

"""The sans-IO client core (anvilfs/client/protocol.py) over bytes alone: tags, flush(5), version, bad replies."""

from __future__ import annotations

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from anvilfs.client import ClientProtocol, Flushed, Reply, ServerError
from anvilfs.client.protocol import check, directory_entries, made_fid
from anvilfs.ninep import Dialect, FramingError, LocalProtocolError, Qid, RemoteProtocolError, Stat, decode, encode, encode_stat
from anvilfs.ninep import consts as c
from anvilfs.ninep import messages as m

D = Dialect.P2000
QID = Qid(0, 0, 1)


def frame(msg: m.Message) -> bytes:
    return encode(msg, D)


def versioned(msize: int = 8192) -> ClientProtocol:
    proto = ClientProtocol(D, msize)
    sent = decode(proto.version_request(), D)
    assert sent == m.Tversion(tag=c.NOTAG, msize=msize, version="9P2000")
    assert proto.receive_data(frame(m.Rversion(tag=c.NOTAG, msize=msize, version="9P2000"))) == [
        Reply(c.NOTAG, m.Rversion(tag=c.NOTAG, msize=msize, version="9P2000"))]
    return proto


def clunk(proto: ClientProtocol, fid: int = 1) -> int:
    tag, data = proto.request(m.Tclunk(tag=0, fid=fid))
    assert decode(data, D) == m.Tclunk(tag=tag, fid=fid)
    return tag


def flush_tag(data: bytes, oldtag: int) -> int:
    sent = decode(data, D)
    assert isinstance(sent, m.Tflush) and sent.oldtag == oldtag
    return sent.tag


# ------------------------------------------------------------ version

def test_the_rversion_sets_the_smaller_msize_and_the_iounit():
    proto = ClientProtocol(D, 65560)
    proto.version_request()
    proto.receive_data(frame(m.Rversion(tag=c.NOTAG, msize=8192, version="9P2000")))
    assert (proto.versioned, proto.msize, proto.iounit) == (True, 8192, 8192 - c.IOHDRSZ)


def test_a_request_before_the_version_is_refused_with_what_to_do():
    with pytest.raises(LocalProtocolError, match="version_request"):
        ClientProtocol(D).request(m.Tclunk(tag=0, fid=1))


def test_a_server_that_does_not_speak_the_dialect_is_a_server_error():
    proto = ClientProtocol(D)
    proto.version_request()
    with pytest.raises(ServerError, match=r"does not speak 9P2000 \(answered unknown\)"):
        proto.receive_data(frame(m.Rversion(tag=c.NOTAG, msize=8192, version="unknown")))
    assert not proto.versioned


def test_an_msize_above_the_offer_breaks_the_protocol():
    proto = ClientProtocol(D, 8192)
    proto.version_request()
    with pytest.raises(RemoteProtocolError, match="msize 9000 is outside"):
        proto.receive_data(frame(m.Rversion(tag=c.NOTAG, msize=9000, version="9P2000")))


def test_tversion_and_tflush_have_their_own_methods():
    proto = versioned()
    for msg in (m.Tversion(tag=0, msize=8192, version="9P2000"), m.Tflush(tag=0, oldtag=1), m.Rclunk(tag=0)):
        with pytest.raises(LocalProtocolError, match="cannot go through request"):
            proto.request(msg)
    with pytest.raises(LocalProtocolError, match="once"):
        proto.version_request()


# ------------------------------------------------------------ tags

def test_tags_are_distinct_while_in_flight_never_notag_and_all_of_them_can_be_used():
    proto = versioned()
    tags = [clunk(proto) for _ in range(c.NOTAG)]
    assert len(set(tags)) == c.NOTAG and c.NOTAG not in tags
    with pytest.raises(LocalProtocolError, match="no free tag"):
        clunk(proto)
    proto.receive_data(frame(m.Rclunk(tag=tags[100])))
    assert clunk(proto) == tags[100]  # the only free one


def test_a_freed_tag_is_not_reused_at_once():
    proto = versioned()
    first = clunk(proto)
    proto.receive_data(frame(m.Rclunk(tag=first)))
    assert clunk(proto) != first


def test_a_flushed_tag_stays_reserved_until_its_rflush_even_after_its_reply():
    proto = versioned()
    tags = [clunk(proto) for _ in range(c.NOTAG)]
    old, spare1, spare2 = tags[7], tags[5], tags[6]
    proto.receive_data(frame(m.Rclunk(tag=spare1)) + frame(m.Rclunk(tag=spare2)))
    ftag = flush_tag(proto.flush(old), old)
    assert ftag in (spare1, spare2)
    assert proto.receive_data(frame(m.Rclunk(tag=old))) == [Reply(old, m.Rclunk(tag=old))]  # raced: delivered
    last = clunk(proto)
    assert last not in (old, ftag)
    with pytest.raises(LocalProtocolError, match="no free tag"):
        clunk(proto)  # `old` is answered but its Rflush has not come: still taken
    assert proto.receive_data(frame(m.Rflush(tag=ftag))) == [Flushed(old, replied=True)]
    assert {clunk(proto), clunk(proto)} == {old, ftag}


def test_rflush_without_the_reply_means_never_sent_and_a_late_reply_is_an_error():
    proto = versioned()
    old = clunk(proto)
    ftag = flush_tag(proto.flush(old), old)
    assert proto.busy_tags() == {old, ftag}
    assert proto.receive_data(frame(m.Rflush(tag=ftag))) == [Flushed(old, replied=False)]
    assert proto.busy_tags() == frozenset()
    with pytest.raises(RemoteProtocolError, match=f"tag {old}, which has no request waiting"):
        proto.receive_data(frame(m.Rclunk(tag=old)))


def test_reply_then_rflush_in_one_piece_of_data_come_out_in_order():
    proto = versioned()
    old = clunk(proto)
    ftag = flush_tag(proto.flush(old), old)
    events = proto.receive_data(frame(m.Rerror(tag=old, ename="no")) + frame(m.Rflush(tag=ftag)))
    assert events == [Reply(old, m.Rerror(tag=old, ename="no")), Flushed(old, replied=True)]


def test_flush_misuse_is_a_local_error():
    proto = versioned()
    with pytest.raises(LocalProtocolError, match="nothing to flush"):
        proto.flush(3)
    old = clunk(proto)
    ftag = flush_tag(proto.flush(old), old)
    with pytest.raises(LocalProtocolError, match="being flushed already"):
        proto.flush(old)
    with pytest.raises(LocalProtocolError, match="nothing to flush"):
        proto.flush(ftag)  # a flush of a flush: not something this client does


# ------------------------------------------------------------ what the server may not send

def test_a_reply_to_a_tag_not_in_flight_is_a_remote_protocol_error():
    proto = versioned()
    with pytest.raises(RemoteProtocolError, match="Rclunk for tag 9, which has no request waiting"):
        proto.receive_data(frame(m.Rclunk(tag=9)))


@pytest.mark.parametrize("reply, why", [
    (m.Rread(tag=0, data=b"x"), "with Rread: the request wants Rclunk or an error"),
    (m.Tclunk(tag=0, fid=1), "sent a request, Tclunk .tag 1.: a 9P server only replies"),
])
def test_a_reply_of_the_wrong_kind_is_a_remote_protocol_error(reply, why):
    proto = versioned()
    tag = clunk(proto)
    with pytest.raises(RemoteProtocolError, match=why):
        proto.receive_data(frame(type(reply)(**{**{f: getattr(reply, f) for f in reply.FIELDS}, "tag": tag})))


def test_an_rerror_for_a_tflush_is_refused_as_flush5_says_it_cannot_fail():
    proto = versioned()
    old = clunk(proto)
    ftag = flush_tag(proto.flush(old), old)
    with pytest.raises(RemoteProtocolError, match="wants Rflush"):
        proto.receive_data(frame(m.Rerror(tag=ftag, ename="no")))


def test_a_broken_frame_is_a_framing_error():
    proto = versioned()
    with pytest.raises(FramingError, match="smaller than a 7-byte header"):
        proto.receive_data(b"\x03\x00\x00\x00")
    with pytest.raises(FramingError, match="larger than msize 8192"):
        versioned().receive_data((9000).to_bytes(4, "little"))


def test_a_reply_in_pieces_of_one_byte_comes_out_once_whole():
    proto = versioned()
    tag, _ = proto.request(m.Tread(tag=0, fid=1, offset=0, count=10))
    data = frame(m.Rread(tag=tag, data=b"hello"))
    assert [e for byte in range(len(data)) for e in proto.receive_data(data[byte:byte + 1])] == [
        Reply(tag, m.Rread(tag=tag, data=b"hello"))]


# ------------------------------------------------------------ helpers

def test_check_raises_the_servers_text():
    with pytest.raises(ServerError, match="^'x' does not exist$"):
        check(m.Rerror(tag=1, ename="'x' does not exist"))
    assert check(m.Rclunk(tag=1)) == m.Rclunk(tag=1)


def test_made_fid_is_the_new_fid_of_a_whole_walk_only():
    walk = m.Twalk(tag=1, fid=0, newfid=5, wnames=("a", "b"))
    assert made_fid(walk, m.Rwalk(tag=1, wqids=(QID, QID))) == 5
    assert made_fid(walk, m.Rwalk(tag=1, wqids=(QID,))) is None  # partial: no fid
    assert made_fid(walk, m.Rerror(tag=1, ename="no")) is None
    assert made_fid(m.Twalk(tag=1, fid=5, newfid=5, wnames=("a",)), m.Rwalk(tag=1, wqids=(QID,))) is None
    assert made_fid(m.Topen(tag=1, fid=5, mode=0), m.Ropen(tag=1, qid=QID)) is None


def test_directory_entries_decode_back_to_back_stats():
    stats = [Stat(type=0, dev=0, qid=QID, mode=0o400, atime=0, mtime=0, length=0, name=name, uid="u", gid="g", muid="")
             for name in ("list", "events")]
    assert [s.name for s in directory_entries(b"".join(encode_stat(s, D) for s in stats), D)] == ["list", "events"]


# ------------------------------------------------------------ any interleaving

class Interleavings(RuleBasedStateMachine):
    """Requests, flushes and a server that answers in any order flush(5) allows, checked against a model."""

    @initialize()
    def start(self):
        self.proto = versioned()
        self.waiting: set[int] = set()  # sent, no reply yet, not flushed
        self.flushes: dict[int, tuple[int, bool]] = {}  # Tflush tag -> (old tag, old tag answered yet)
        self.events: list = []

    def busy(self) -> set[int]:
        return self.waiting | set(self.flushes) | {old for old, _ in self.flushes.values()}

    @rule()
    def request(self):
        tag = clunk(self.proto)
        assert tag not in self.busy(), f"tag {tag} handed out while in flight or flushing"
        assert tag != c.NOTAG
        self.waiting.add(tag)

    @precondition(lambda self: self.waiting)
    @rule(data=st.data())
    def flush(self, data):
        old = data.draw(st.sampled_from(sorted(self.waiting)))
        ftag = flush_tag(self.proto.flush(old), old)
        assert ftag not in self.busy()
        self.waiting.remove(old)
        self.flushes[ftag] = (old, False)

    @precondition(lambda self: self.waiting)
    @rule(data=st.data(), error=st.booleans())
    def reply(self, data, error):
        tag = data.draw(st.sampled_from(sorted(self.waiting)))
        msg = m.Rerror(tag=tag, ename="no") if error else m.Rclunk(tag=tag)
        assert self.proto.receive_data(frame(msg)) == [Reply(tag, msg)]
        self.waiting.remove(tag)

    @precondition(lambda self: any(not answered for _, answered in self.flushes.values()))
    @rule(data=st.data())
    def reply_racing_a_flush(self, data):
        ftag = data.draw(st.sampled_from(sorted(f for f, (_, answered) in self.flushes.items() if not answered)))
        old, _ = self.flushes[ftag]
        assert self.proto.receive_data(frame(m.Rclunk(tag=old))) == [Reply(old, m.Rclunk(tag=old))]
        self.flushes[ftag] = (old, True)

    @precondition(lambda self: self.flushes)
    @rule(data=st.data())
    def rflush(self, data):
        ftag = data.draw(st.sampled_from(sorted(self.flushes)))
        old, answered = self.flushes.pop(ftag)
        assert self.proto.receive_data(frame(m.Rflush(tag=ftag))) == [Flushed(old, replied=answered)]

    @rule(tag=st.integers(0, c.NOTAG))
    def stray_reply(self, tag):
        """An Rclunk for anything but a request whose reply may come: a free tag, a Tflush's, an answered one."""
        if tag in self.waiting or tag in {old for old, answered in self.flushes.values() if not answered}:
            return
        with pytest.raises(RemoteProtocolError):
            self.proto.receive_data(frame(m.Rclunk(tag=tag)))
        self.start()  # the connection is over: begin a new one

    @invariant()
    def busy_tags_match_the_model(self):
        assert self.proto.busy_tags() == self.busy()


Interleavings.TestCase.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)
test_interleavings = Interleavings.TestCase

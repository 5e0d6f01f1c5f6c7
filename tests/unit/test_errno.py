"""The error table (anvilfs/errors.py KINDS) and how each dialect carries it (SPEC §2).

9P2000.L gets the errno in Rlerror, 9P2000.u in Rerror's errno field, plain
9P2000 only text, worded so plan9port's 9pfuse (its keyword table, ported in
anvilfs/ninep/errstr.py and checked here against the C source) maps it to
the kind's errno, within plan9port's 127 bytes.
"""

from __future__ import annotations

import errno
import re
import tarfile

import pytest
from hypothesis import given
from hypothesis import strategies as st

import anvilfs.errors as errors_module
from anvilfs.errors import KINDS, AnvilError, kind_of
from anvilfs.ninep import consts as c
from anvilfs.ninep import messages as m
from anvilfs.ninep.errstr import ERRMAX, NINEPFUSE_TABLE, fit, ninepfuse_errno, word_for_9p2000
from anvilfs.server import Dispatcher
from anvilfs.sessions import SessionLimits
from harness.prerequisites import missing
from harness import plan9port
from harness.dispatching import handle
from harness.error_cases import CASES, IDS, PROMPT_LIMIT, SETUP, Case

RETRIED_FOR_EVER = {errno.EINTR, errno.EAGAIN}  # dash and Python retry these writes


def test_the_port_is_plan9ports_table_in_its_order():
    if not plan9port.TARBALL.is_file():
        missing(f"no {plan9port.TARBALL}: check out shared/ beside the repository")
    with tarfile.open(plan9port.TARBALL) as tar:
        member = next(n for n in tar.getnames() if n.endswith("src/cmd/9pfuse/errstr.c"))
        source = tar.extractfile(member).read().decode()
    table = source[source.index("errortab[]"):source.index("};", source.index("errortab[]"))]
    table = re.sub(r"#ifdef EPROTO\s*(.*?)#else.*?#endif", r"\1", table, flags=re.S)  # Linux has EPROTO
    rows = [(text, getattr(errno, name)) for text, name in re.findall(r'\{\s*"([^"]*)",\s*(E[A-Z0-9]+)\s*\}', table)]
    assert rows == list(NINEPFUSE_TABLE)


@pytest.mark.parametrize("code", sorted(KINDS), ids=[errno.errorcode[k] for k in sorted(KINDS)])
def test_each_kinds_phrase_maps_to_its_errno_on_9pfuse(code):
    kind = KINDS[code]
    assert ninepfuse_errno(kind.phrase) == kind.ninepfuse_errno
    assert kind.ninepfuse_errno not in RETRIED_FOR_EVER


def test_the_spec_errnos_and_every_error_class_are_in_the_table():
    spec = {errno.EINVAL, errno.EACCES, errno.EPERM, errno.ENOENT, errno.EEXIST, errno.EBUSY,
            errno.E2BIG, errno.EFBIG, errno.ENOSPC, errno.EMFILE, errno.EUSERS}
    assert spec <= set(KINDS)
    classes = [v for v in vars(errors_module).values() if isinstance(v, type) and issubclass(v, AnvilError)]
    assert len(classes) >= 9
    for cls in classes:
        assert cls.errno in KINDS, cls.__name__
    assert kind_of(errno.ERANGE) is KINDS[errno.EIO]


# Texts that would go wrong as they are: every keyword of the table, the old
# session ctl usage, and text far past ERRMAX.
HOSTILE = [
    "commands: stop; kill; restart; interrupt; clear",
    "interrupt: session bot1 is idle: there is no turn to interrupt",
    "cwd '/x' is not an existing directory given by its absolute path",
    "fid 3 already in use",
    " ".join(k for k, _ in NINEPFUSE_TABLE),
    "x" * 500 + " invalid",
    "é" * 300,
]
keyword_soup = st.lists(st.sampled_from([k for k, _ in NINEPFUSE_TABLE] + ["a", " ", "'bot1'", ":", "é"]), max_size=40)


@pytest.mark.parametrize("code", sorted(KINDS), ids=[errno.errorcode[k] for k in sorted(KINDS)])
@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_texts_are_reworded_for_their_kind(code, text):
    worded = word_for_9p2000(text, KINDS[code].phrase)
    assert ninepfuse_errno(worded) == KINDS[code].ninepfuse_errno, worded
    assert len(worded.encode()) < ERRMAX


@given(words=keyword_soup, code=st.sampled_from(sorted(KINDS)))
def test_any_text_is_worded_for_its_kind(words, code):
    worded = word_for_9p2000("".join(words), KINDS[code].phrase)
    assert ninepfuse_errno(worded) == KINDS[code].ninepfuse_errno, worded
    assert len(worded.encode()) < ERRMAX


def test_a_cut_text_ends_after_a_whole_word_with_an_ellipsis():
    text = "invalid: unknown command 'frobnicate', see errors for the usage of the session's ctl file"
    assert fit(text, 200) == text  # fits: untouched
    assert fit(text, 58) == "invalid: unknown command 'frobnicate', see errors for\u2026"
    assert fit(text, 60) == "invalid: unknown command 'frobnicate', see errors for the\u2026"
    assert fit("x" * 300, 20) == "x" * 17 + "\u2026"  # one long word: cut at a character
    cut = fit("word " * 40, 127)
    assert cut.endswith("word\u2026") and len(cut.encode()) <= 127


@given(st.text(), st.integers(min_value=3, max_value=300))
def test_fit_never_passes_its_limit(text, limit):
    cut = fit(text, limit)
    assert len(cut.encode()) <= limit
    assert cut == text or cut.endswith("\u2026")


def test_a_text_that_maps_already_is_kept():
    text = "unknown command 'fly': invalid, see errors for the usage"
    assert word_for_9p2000(text, KINDS[errno.EINVAL].phrase) == text


# ------------------------------------------------------------ through the dispatcher, per dialect

def _session(dispatcher: Dispatcher, dialect: str) -> None:
    assert isinstance(handle(dispatcher, m.Tversion(tag=c.NOTAG, msize=8192, version=dialect)), m.Rversion)
    reply = handle(dispatcher, m.Tattach(tag=1, fid=0, afid=c.NOFID, uname="glenda", aname="", n_uname=c.NONUNAME))
    assert isinstance(reply, m.Rattach), reply


def _refused(dispatcher: Dispatcher, case: Case, dotl: bool) -> m.Message:
    """Run `case`; the first error reply (no reply may be anything else but success)."""
    *parent, name = case.path.split("/")  # walked one name at a time, as clients do to learn why
    assert isinstance(handle(dispatcher, m.Twalk(tag=2, fid=0, newfid=9, wnames=tuple(parent))), m.Rwalk)
    replies = [handle(dispatcher, m.Twalk(tag=2, fid=9, newfid=1, wnames=(name,)))]
    handle(dispatcher, m.Tclunk(tag=2, fid=9))
    if case.op == "remove":
        replies.append(handle(dispatcher, m.Tremove(tag=3, fid=1)))
    else:
        write = case.op == "write"
        mode = 1 if dotl and write else c.OWRITE if write else c.OREAD
        opened = m.Tlopen(tag=3, fid=1, flags=mode) if dotl else m.Topen(tag=3, fid=1, mode=mode)
        replies.append(handle(dispatcher, opened))
        if write:
            replies.append(handle(dispatcher, m.Twrite(tag=4, fid=1, offset=0, data=case.data.encode())))
        else:
            replies.append(handle(dispatcher, m.Tread(tag=4, fid=1, offset=0, count=100)))
    handle(dispatcher, m.Tclunk(tag=5, fid=1))
    errors = [r for r in replies if isinstance(r, (m.Rerror, m.Rlerror))]
    assert errors, replies
    return errors[0]


@pytest.fixture
async def prepared(running):
    app = await running(limits=SessionLimits(max_prompt_bytes=PROMPT_LIMIT))
    for path, line in SETUP:
        session, _, _ = path.rpartition("/")
        if session:
            app.sessions.stop(session)
        else:
            words = line.split()
            app.sessions.new(words[1], words[2], name=words[3].removeprefix("name="))
    return app


@pytest.mark.parametrize("dialect", ["9P2000", "9P2000.u", "9P2000.L"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_each_error_kind_in_each_dialect(prepared, case, dialect):
    dispatcher = Dispatcher(prepared.root, on_error=prepared.record_error)
    _session(dispatcher, dialect)
    reply = _refused(dispatcher, case, dotl=dialect == "9P2000.L")
    if dialect == "9P2000.L":
        assert reply == m.Rlerror(tag=reply.tag, ecode=case.errno)
    elif dialect == "9P2000.u":
        assert reply.errno == case.errno, reply
    else:
        assert ninepfuse_errno(reply.ename) == case.kind.ninepfuse_errno, reply.ename
        assert len(reply.ename.encode()) < ERRMAX, reply.ename
    ename = getattr(reply, "ename", "")
    assert "usage:" not in ename and "commands:" not in ename, ename  # the usage goes to errors only


async def test_the_full_text_with_the_usage_is_in_errors(prepared):
    dispatcher = Dispatcher(prepared.root, on_error=prepared.record_error)
    _session(dispatcher, "9P2000")
    reply = _refused(dispatcher, CASES[0], dotl=False)
    assert "interrupt" not in reply.ename
    assert "unknown command 'fly'" in prepared.errors.text()
    assert "commands: stop; kill; restart; interrupt; clear" in prepared.errors.text()


@pytest.mark.parametrize("where", ["", "bot1", "list"])
@pytest.mark.parametrize("name", [".status.swp", ".python-version"])
async def test_a_walk_to_a_missing_name_is_answered_but_not_recorded(prepared, where, name):
    dispatcher = Dispatcher(prepared.root, on_error=prepared.record_error)
    _session(dispatcher, "9P2000.L")
    assert isinstance(handle(dispatcher, m.Twalk(tag=2, fid=0, newfid=1, wnames=tuple(filter(None, [where])))), m.Rwalk)
    before = prepared.events.next_seq
    reply = handle(dispatcher, m.Twalk(tag=3, fid=1, newfid=2, wnames=(name,)))
    expected = errno.ENOTDIR if where == "list" else errno.ENOENT
    assert reply == m.Rlerror(tag=3, ecode=expected)
    assert prepared.errors.text() == ""
    assert prepared.events.since(before)[0] == []

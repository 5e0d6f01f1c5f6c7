"""Answer 9P requests from the synthetic tree (synchronous; no trio here).

Every generic check happens here, before a file's handle is touched: the
fid exists or is free, the file is open (or not) in the right mode, the walk
has at most 16 names, counts are clamped to msize. A request ends in exactly
one reply: a message, or, for the replies every read of a file makes
(Rwalk, Ropen, Rlopen, Rread, Rclunk, Rgetattr), its frame, encoded already
by the compiled frame makers (the same bytes in every dialect). The one
exception is a read that would block, which comes back as ``Blocked`` for
the connection to finish in a task it can cancel, and a clunk that
submitted a prompt, whose reply comes back ``Deferred`` until the prompt is
on disk.

A handler takes the request's fields, in the order of its message class,
the tag first: the connection's compiled decoders hand them over straight
from the frame (``Codec.fields``), so the requests of every file read
build no message. ``handle`` takes a message instead, for tests and tools;
it calls the same handlers. ``handlers`` is the table the connection
dispatches on, by wire type (handlers.py).
"""

from __future__ import annotations

import errno
import logging
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import AnvilError, InvalidRequest, NotPermitted, NotSupported, PermissionDenied
from ..ninep import Dialect, LocalProtocolError, RequestError, frame_maker, negotiate
from ..ninep import consts as c
from ..ninep import messages as m
from ..ninep.dialect import MIN_MSIZE, UNKNOWN
from ..ninep.fids import FidTable
from ..waitable import collecting, on_disk
from ..tree import Caller, Directory, Handle, Node, SnapshotBudget, SnapshotReads
from .attrs import packed_qid, qid_of
from .listings import listing_entries, listing_records, pack_records
from .attr_requests import AttributeRequests
from .refusals import Refusals
from .handlers import handler_table
from .opening import linux_access, open_existing, open_fid, plan9_access
from .state import Blocked, CollectBudget, Deferred, Fid, Limits
from .token import PLAIN_ANAMES, Token

if TYPE_CHECKING:
    from ..waitable import Later


log = logging.getLogger("anvilfs.server")


@dataclass(slots=True)
class Dispatcher(AttributeRequests, Refusals):
    root: Directory
    limits: Limits = field(default_factory=Limits)
    on_error: Callable[[str, str], None] = lambda where, text: None
    token: Token | None = None  # what an attach must give as aname (TCP listeners), or None
    dialect: Dialect | None = None
    msize: int = 0
    iounit: int = 0  # msize less a read's or write's header: what one Rread carries at most (set with msize)
    fids: FidTable = None  # type: ignore[assignment]
    _fids: dict = None  # type: ignore[assignment]  # fids.by_number: the hot handlers look a fid up in it inline
    snapshots: SnapshotBudget = None  # type: ignore[assignment]  # what this connection's open files hold
    collected: CollectBudget = None  # type: ignore[assignment]  # bytes written to its open files, until clunk

    def __post_init__(self) -> None:
        self.fids = FidTable(self.limits.max_fids)
        self._fids = self.fids.by_number
        self.snapshots = SnapshotBudget(self.limits.max_snapshot_bytes)
        self.collected = CollectBudget(self.limits.max_collected_bytes, self.limits.max_collected_bytes_server)
        self._set_msize(self.limits.max_msize)

    # ------------------------------------------------------------ entry point

    def handle(self, msg: m.Message) -> m.Message | bytes | Blocked | Deferred:
        """The reply to a request given as a message (tests, tools): what the connection's path answers."""
        fields = msg._values()
        try:
            handler = self.handlers().get(msg.TYPE)
            if handler is None:  # a class of another dialect: what the connection's decoder would refuse
                raise (InvalidRequest("no version negotiated: send Tversion first") if self.dialect is None else
                       NotSupported(f"{type(msg).__name__} is not a request of {self.dialect.value}"))
            return handler(*fields)
        except Exception as exc:
            return self.refusal(type(msg), fields, exc)

    def handlers(self) -> dict[int, Callable]:
        """Wire type -> the handler of that request, taking its fields, in the negotiated dialect (before
        a version: every request but Tversion refused); a type not there is not a request of the dialect."""
        return handler_table(self, self.dialect)

    def reset(self) -> None:
        """Forget every fid (Tversion or hang-up); what was written on open files is abandoned."""
        fids = [fid for fid in self.fids.clear() if fid.handle is not None]
        for fid in fids:
            self.collected.release(fid)  # all of them first: an abandon that fails must not leak the rest
        for fid in fids:
            try:
                fid.handle.abandon()
            except Exception:  # a bug behind one file must not keep the others from being abandoned
                log.exception("abandoning an open file failed")

    def _set_msize(self, msize: int) -> None:
        self.msize, self.iounit = msize, msize - c.IOHDRSZ  # an attribute, not a property: three reads a file read

    # ------------------------------------------------------------ session setup

    def version(self, tag: int, msize: int, version: str) -> m.Message:
        self.reset()
        if msize < MIN_MSIZE:
            self.dialect = None  # the fids are gone with the old session: none goes on without a new Tversion
            raise InvalidRequest(f"msize {msize} is too small: at least {MIN_MSIZE}")
        self._set_msize(min(msize, self.limits.max_msize))
        dialect = negotiate(version)
        self.dialect = dialect
        if dialect is None:
            self.dialect = None
            return m.Rversion(tag=tag, msize=self.msize, version=UNKNOWN)
        return m.Rversion(tag=tag, msize=self.msize, version=dialect.value)

    def auth(self, tag: int, afid: int, *names) -> m.Message:
        # ENOENT is what diod's clients and the kernel read as "no authentication needed"
        raise RequestError("auth not required", errno.ENOENT)

    def attach(self, tag: int, fid: int, afid: int, uname: str, aname: str, n_uname: int) -> m.Message:
        if afid != c.NOFID:
            raise RequestError("authentication not required: use afid NOFID", errno.EINVAL)
        if self.token is not None:
            if not self.token.admits(aname):  # its text must not quote the aname: a near-miss token
                raise PermissionDenied(f"attach over TCP needs the server's token as aname: it is in {self.token.path}")
        elif aname not in PLAIN_ANAMES:
            raise RequestError(f"no tree {aname!r} to attach: use aname '' or 'agent'", errno.ENOENT)
        uname = uname or (str(n_uname) if n_uname != c.NONUNAME else "none")
        self.fids.add(fid, Fid(trail=(self.root,), caller=Caller(uname)))
        return m.Rattach(tag=tag, qid=qid_of(self.root))

    # ------------------------------------------------------------ walking

    def walk(self, tag: int, fid: int, newfid: int, wnames: tuple[str, ...]) -> m.Message | bytes:
        if (old := self._fids.get(fid)) is None:
            old = self.fids.get(fid)  # which raises what says it is unknown (so in every handler)
        if old.handle is not None:
            raise RequestError("cannot walk a fid that is open: clone it first", errno.EBADF)
        if newfid != fid and (newfid in self._fids or newfid == c.NOFID or len(self._fids) >= self.fids.limit):
            self.fids.check_free(newfid)  # which refuses it: before the walk, so a walk that fails changes nothing
        if len(wnames) > c.MAXWELEM:
            raise RequestError(f"walk of {len(wnames)} names: at most {c.MAXWELEM} per Twalk", errno.E2BIG)
        trail, qids, walked = old.trail, b"", 0
        for name in wnames:
            node = trail[-1]  # a name in a directory is looked up here; the rest is _step's
            if name in _NOT_NAMES or not isinstance(node, Directory) or (child := node.lookup(name)) is None:
                step = _step(trail, name)
                if type(step) is not tuple:
                    if not walked:  # a lookup's answer ("no such name"), not an error worth recording
                        return self.error(m.Twalk, (tag, fid), step.message, step.errno, record=False)
                    break
                trail = step
            else:
                trail += (child,)
            try:
                qids += packed_qid(trail[-1])
            except struct.error as exc:  # a bug of the tree's (a qid out of range): say which reply it spoils
                raise LocalProtocolError(f"Rwalk.wqids cannot be encoded: {exc}") from None
            walked += 1
        reply = _RWALK(tag, qids)  # the qids given packed (compiled.py)
        if walked == len(wnames) and type(reply) is bytes:  # a reply that cannot be sent binds nothing
            self._fids[newfid] = Fid(trail, old.caller)  # checked free above, or the walked fid itself
        return reply

    def _fid(self, number: int) -> Fid:
        """The fid `number` names (a dict lookup: the hot handlers make it inline)."""
        fid = self._fids.get(number)
        return fid if fid is not None else self.fids.get(number)  # which raises what says it is unknown

    # ------------------------------------------------------------ opening

    def open(self, tag: int, fid: int, mode: int) -> m.Message | bytes:
        fid = self._fid(fid)
        if mode & c.ORCLOSE:
            raise NotPermitted(f"{fid.node.name}: remove-on-close is not possible on a synthetic file")
        open_fid(fid, *plan9_access(mode), trunc=bool(mode & c.OTRUNC))
        return _ROPEN(tag, qid_of(fid.node), self.iounit)

    def lopen(self, tag: int, number: int, flags: int) -> m.Message | bytes:
        if (fid := self._fids.get(number)) is None:
            fid = self.fids.get(number)
        read, write = _LINUX_ACCESS[flags & c.L_O_ACCMODE]  # linux_access, looked up
        open_fid(fid, read, write, trunc=bool(flags & c.L_O_TRUNC) and write)
        return _RLOPEN(tag, qid_of(fid.node), self.iounit)

    def create(self, tag: int, fid: int, name: str, perm: int, mode: int, extension: str = "") -> m.Message:
        opened = self._fid(fid)
        if mode & c.ORCLOSE:
            raise NotPermitted(f"{name}: remove-on-close is not possible on a synthetic file")
        # a directory's create is a mkdir, which never opens what is there
        opened = open_existing(opened, name, *plan9_access(mode), exclusive=bool(perm & c.DMDIR))
        self.fids.replace(fid, opened)
        return m.Rcreate(tag=tag, qid=qid_of(opened.node), iounit=self.iounit)

    def lcreate(self, tag: int, fid: int, name: str, flags: int, mode: int, gid: int) -> m.Message:
        opened = open_existing(self._fid(fid), name, *linux_access(flags), exclusive=bool(flags & c.L_O_EXCL))
        self.fids.replace(fid, opened)
        return m.Rlcreate(tag=tag, qid=qid_of(opened.node), iounit=self.iounit)

    # ------------------------------------------------------------ reading and writing

    def read(self, tag: int, number: int, offset: int, count: int) -> m.Message | bytes | Blocked:
        if (fid := self._fids.get(number)) is None:
            fid = self.fids.get(number)
        if not fid.can_read:
            raise RequestError("fid is not open for reading", errno.EBADF)
        if count > self.iounit:
            count = self.iounit
        if fid.listing is not None:
            return m.Rread(tag=tag, data=self._read_dir(fid, offset, count))
        handle = fid.handle
        if handle.blocking and not handle.ready(offset):
            return Blocked(fid, number, tag, offset, count)
        if not fid.can_write and not handle.blocking:
            return _RREAD(tag, self.take(handle, offset, count))
        try:
            # a read can change state: submit what was written (mail's read-back), or take a prompt from
            # `next` and begin its turn (a stream's read): answered once that is saved
            with collecting() as saving:
                data = self.take(handle, offset, count)
        finally:  # nothing else is held
            if fid.can_write:
                self.collected.recount(fid)
        return _once_saved(saving, "what was written", _RREAD(tag, data),
                           lambda: m.Tread(tag=tag, fid=number, offset=offset, count=count))

    def take(self, handle: Handle, offset: int, count: int) -> bytes:
        """What a read of an open file that need not wait gives; a snapshot it takes is this connection's to hold."""
        if isinstance(handle, SnapshotReads):
            return handle.read(offset, count, self.snapshots)
        return handle.read(offset, count)

    def finish_read(self, blocked: Blocked) -> tuple[m.Message, Later | None]:
        """Answer a blocked read once its handle is ready (no checkpoint in between), and what the reply must
        wait for: what the read changed (`next` begins a turn) on its way to disk, if anything."""
        try:
            with collecting() as saving:
                data = blocked.fid.handle.read(blocked.offset, blocked.count)
        except AnvilError as exc:
            return self.blocked_read_failed(blocked, exc.message, exc.errno, exc.detail), None
        return m.Rread(tag=blocked.tag, data=data), on_disk(saving, "what the read changed") if saving else None

    def _read_dir(self, fid: Fid, offset: int, count: int) -> bytes:
        assert isinstance(fid.node, Directory)
        if offset == 0:
            listing, index = fid.node.children(), 0
            records = listing_records(fid.node, listing, self.dialect)
        elif offset == fid.list_offset:
            listing, records, index = fid.listing, fid.records, fid.list_index
        else:
            raise RequestError(f"directory read at offset {offset}: continue at {fid.list_offset} or restart at 0", errno.EINVAL)
        data, next_index = pack_records(records, index, count)  # may refuse: the fid is unchanged
        fid.listing, fid.records, fid.list_index, fid.list_offset = listing, records, next_index, offset + len(data)
        return data

    def readdir(self, tag: int, fid: int, offset: int, count: int) -> m.Message:
        fid = self._fid(fid)
        if fid.listing is None:
            raise RequestError("Treaddir needs a directory fid opened with Tlopen", errno.ENOTDIR if fid.handle else errno.EBADF)
        if offset == 0 or fid.entries is None:
            listing = fid.node.children() if offset == 0 else fid.listing
            entries = listing_entries(fid.node, listing)
        else:
            listing, entries = fid.listing, fid.entries
        data, _ = pack_records(entries, offset, min(count, self.iounit))  # may refuse: nothing kept yet
        fid.listing, fid.entries = listing, entries
        return m.Rreaddir(tag=tag, data=data)

    def write(self, tag: int, fid: int, offset: int, data: bytes) -> m.Message | Deferred:
        number, fid = fid, self._fid(fid)
        if not fid.can_write:
            raise RequestError("fid is not open for writing", errno.EBADF)
        self.collected.check(fid.handle.adds(offset, data))  # ctl writes add nothing: never refused here
        try:
            with collecting() as saving:  # what the write changed goes to disk before it is answered
                count = fid.handle.write(offset, data)
        finally:
            self.collected.recount(fid)
        reply = m.Rwrite(tag=tag, count=count)
        return _once_saved(saving, "the write", reply, lambda: m.Twrite(tag=tag, fid=number, offset=offset, data=data))

    def clunk(self, tag: int, fid: int) -> m.Message | bytes | Deferred:
        closed = self._fids.pop(fid, None)
        if closed is None:
            closed = self.fids.pop(fid)  # which raises what says it is unknown
        if closed.handle is None:
            return _RCLUNK(tag)
        with collecting() as saving:
            later = self.close(closed)
        if later is not None:  # a prompt: answered once it is on disk, with its own error if it is not
            saving.insert(0, later)
        return _once_saved(saving, "what was written", _RCLUNK(tag), lambda: m.Tclunk(tag=tag, fid=fid))

    def close(self, fid: Fid) -> Later | None:
        """Close what a fid taken out of the table has open: its written bytes are no longer held, and
        its handle submits them; the submission's Later, if it has one."""
        if fid.handle is None:
            return None
        self.collected.release(fid)  # before the submit, which may fail: the bytes go either way
        return fid.handle.clunk()

    def remove(self, tag: int, fid: int) -> m.Message | Deferred:
        number, fid = fid, self.fids.pop(fid)  # remove(5): the fid is clunked even if the remove fails
        with collecting() as saving:
            self.close(fid)
            if len(fid.trail) < 2:
                raise NotPermitted("the root cannot be removed")
            fid.trail[-2].remove_entry(fid.node, fid.caller)
        reply = m.Rremove(tag=tag)
        return _once_saved(saving, "the removal", reply, lambda: m.Tremove(tag=tag, fid=number))

    def unlinkat(self, tag: int, dirfid: int, name: str, flags: int) -> m.Message:
        """Linux's rm and rmdir: the entry `name` of the directory `dirfid` (AT_REMOVEDIR needs a directory)."""
        fid = self._fid(dirfid)
        step = _step(fid.trail, name)
        if isinstance(step, Exception):
            raise step
        node = step[-1]
        if name in (".", "..") or node is fid.node:
            raise InvalidRequest(f"unlinkat of {name!r}: name an entry of the directory")
        if bool(flags & _AT_REMOVEDIR) != node.is_dir:
            raise RequestError(f"{node.name} is {'a' if node.is_dir else 'not a'} directory",
                               errno.EISDIR if node.is_dir else errno.ENOTDIR)
        with collecting() as saving:
            fid.node.remove_entry(node, fid.caller)
        reply = m.Runlinkat(tag=tag)
        return _once_saved(saving, "the removal", reply,
                           lambda: m.Tunlinkat(tag=tag, dirfid=dirfid, name=name, flags=flags))


# The replies of the requests every read of a file makes, encoded straight from their values (no
# message is built, nor an encoder looked up per reply); the connection sends the bytes as they are.
_RWALK, _ROPEN, _RLOPEN, _RREAD, _RCLUNK = map(frame_maker, (m.Rwalk, m.Ropen, m.Rlopen, m.Rread, m.Rclunk))
_LINUX_ACCESS = tuple(linux_access(mode) for mode in range(c.L_O_ACCMODE + 1))
_NOT_NAMES = frozenset(("..", ".", ""))  # walked by _step: up, stay, and the empty name it refuses
_AT_REMOVEDIR = 0x200  # Linux's flag in Tunlinkat: rmdir, not unlink


def _once_saved(saving: list, what: str, reply: m.Message | bytes, request: Callable[[], m.Message]):
    """`reply` now, or, when handling the request queued changes (`saving`), a Deferred that sends it once they
    are on disk (the request message, made only then, answers an error)."""
    return Deferred(on_disk(saving, what), request(), reply) if saving else reply


def _step(trail: tuple[Node, ...], name: str) -> tuple[Node, ...] | RequestError:
    """One walk step, or why the walk stops there."""
    node = trail[-1]
    if not isinstance(node, Directory):
        return RequestError(f"walk past {node.name}: not a directory", errno.ENOTDIR)
    if name == "..":
        return trail[:-1] or trail
    if name == ".":
        return trail
    child = node.lookup(name)
    if child is None:
        return RequestError(f"{name!r} does not exist in {node.name}", errno.ENOENT)
    return trail + (child,)

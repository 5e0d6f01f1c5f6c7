"""A directory read too small for the next entry is an error, not an empty (end-of-directory) answer."""

from __future__ import annotations

from anvilfs.ninep import Dialect, decode_stat
from anvilfs.ninep import messages as m
from harness.transcript import served

_DOTL_ROOT_OPENED = """
> Tversion tag 65535 msize 8192 version 9P2000.L
< Rversion tag 65535 msize 8192 version 9P2000.L
> Tattach tag 1 fid 0 afid 4294967295 uname glenda aname "" n_uname 1000
< Rattach tag 1 *
> Twalk tag 2 fid 0 newfid 1 wnames []
< Rwalk tag 2 wqids []
> Tlopen tag 3 fid 1 flags 0
< Rlopen tag 3 *"""  # a 9P2000.L session, fid 1 the root opened with Tlopen


async def test_9p2000u_stat_read_too_small_is_einval_and_changes_nothing():
    async with served() as (app, [peer]):
        await peer.play("""
> Tversion tag 65535 msize 8192 version 9P2000.u
< Rversion tag 65535 msize 8192 version 9P2000.u
> Tattach tag 1 fid 0 afid 4294967295 uname glenda aname "" n_uname 1000
< Rattach tag 1 *
> Twalk tag 2 fid 0 newfid 1 wnames []
< Rwalk tag 2 wqids []
> Topen tag 3 fid 1 mode 0
< Ropen tag 3 *
""")
        await peer.send("Tread tag 4 fid 1 offset 0 count 8168")
        whole = (await peer.receive()).data
        first_size = int.from_bytes(whole[:2], "little") + 2
        await peer.send(f"Tread tag 5 fid 1 offset 0 count {first_size}")
        first = await peer.receive()
        assert first.data == whole[:first_size]
        await peer.send(f"Tread tag 6 fid 1 offset {first_size} count 10")
        refused = await peer.receive()
        assert isinstance(refused, m.Rerror) and refused.errno == 22, refused
        assert refused.ename.startswith("directory read of 10 bytes is too small for the next entry: read at least ")
        # the refused read moved nothing: the listing continues where it was
        await peer.send(f"Tread tag 7 fid 1 offset {first_size} count 8168")
        rest = await peer.receive()
        # the same entries (their stats are taken as they are read: the refusal lengthened `errors`)
        assert _names(rest.data) == _names(whole[first_size:])
        assert decode_stat(whole[:first_size], Dialect.P2000U).name == "ctl"


def _names(records: bytes) -> list[str]:
    """The names of the stat records a 9P2000.u directory read gave."""
    names = []
    while records:
        size = int.from_bytes(records[:2], "little") + 2
        names.append(decode_stat(records[:size], Dialect.P2000U).name)
        records = records[size:]
    return names


async def test_9p2000l_readdir_too_small_is_einval():
    async with served() as (app, [peer]):
        await peer.play(_DOTL_ROOT_OPENED + """
> Treaddir tag 4 fid 1 offset 0 count 10
< Rlerror tag 4 ecode 22
> Treaddir tag 5 fid 1 offset 0 count 8000
< Rreaddir tag 5 *
""")
        assert "too small for the next entry" in app.errors.text()


async def test_a_read_past_the_last_entry_is_still_end_of_directory():
    async with served() as (app, [peer]):
        await peer.play(_DOTL_ROOT_OPENED + """
> Treaddir tag 4 fid 1 offset 6 count 10
< Rreaddir tag 4 data ""
""")


async def test_a_readdir_after_a_tread_of_the_same_fid_sends_treaddir_entries():
    """A fid keeps its listing's encoded entries (server/listings.py): a 9P2000.L Tread of a directory keeps
    stat records, and a Treaddir going on from it must send Treaddir entries, not those records."""
    async with served() as (app, [peer]):
        await peer.play(_DOTL_ROOT_OPENED + """
> Twalk tag 4 fid 0 newfid 2 wnames []
< Rwalk tag 4 wqids []
> Tlopen tag 5 fid 2 flags 0
< Rlopen tag 5 *
""")
        await peer.send("Treaddir tag 6 fid 2 offset 0 count 8000")
        whole = (await peer.receive()).data
        first = 13 + 8 + 1 + 2 + int.from_bytes(whole[22:24], "little")  # qid offset type name[s]
        await peer.send("Tread tag 7 fid 1 offset 0 count 8000")
        assert isinstance(await peer.receive(), m.Rread)
        await peer.send("Treaddir tag 8 fid 1 offset 1 count 8000")
        rest = await peer.receive()
        assert isinstance(rest, m.Rreaddir) and rest.data == whole[first:], rest


async def test_a_tread_going_on_after_a_treaddir_of_the_same_fid_sends_stat_records():
    """The other way round: a Tread that goes on where the fid's last Tread stopped, after a Treaddir."""
    async with served() as (app, [peer]):
        await peer.play(_DOTL_ROOT_OPENED)
        await peer.send("Tread tag 4 fid 1 offset 0 count 8000")
        whole = (await peer.receive()).data
        first = int.from_bytes(whole[:2], "little") + 2
        await peer.send(f"Tread tag 5 fid 1 offset 0 count {first}")
        assert (await peer.receive()).data == whole[:first]
        await peer.send("Treaddir tag 6 fid 1 offset 0 count 8000")
        assert isinstance(await peer.receive(), m.Rreaddir)
        await peer.send(f"Tread tag 7 fid 1 offset {first} count 8000")
        rest = await peer.receive()
        assert isinstance(rest, m.Rread) and rest.data == whole[first:], rest

"""The TCP token (SPEC §2): the file the server makes and trusts, and the attach that must present it."""

from __future__ import annotations

import os
import re
import stat

import pytest

from anvilfs.server.token import TokenError, load_or_create
from harness.transcript import served


def test_a_new_token_is_64_hex_digits_in_a_private_file(tmp_path):
    token = load_or_create(str(tmp_path))
    path = tmp_path / "token"
    assert token.path == str(path)
    assert re.fullmatch(r"[0-9a-f]{64}\n", path.read_text()), path.read_text()
    assert path.read_text().strip() == token.secret
    info = os.lstat(path)
    assert stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o600 and info.st_uid == os.getuid()


def test_a_sound_token_is_kept(tmp_path):
    first = load_or_create(str(tmp_path))
    assert load_or_create(str(tmp_path)).secret == first.secret


def test_two_state_directories_get_different_tokens(tmp_path):
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    assert load_or_create(str(tmp_path / "a")).secret != load_or_create(str(tmp_path / "b")).secret


def _refused(tmp_path, match: str) -> None:
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(TokenError, match=match) as info:
        load_or_create(str(tmp_path))
    assert str(tmp_path / "token") in str(info.value)
    assert sorted(os.listdir(tmp_path)) == before  # nothing made or removed


def test_a_token_readable_by_others_is_refused(tmp_path):
    load_or_create(str(tmp_path))
    os.chmod(tmp_path / "token", 0o644)
    _refused(tmp_path, r"mode 0644, not 0600: remove it and the server makes a new one")


def test_a_symbolic_link_is_not_followed(tmp_path):
    target = tmp_path / "elsewhere"
    target.write_text("a" * 64 + "\n")
    os.chmod(target, 0o600)
    (tmp_path / "token").symlink_to(target)
    _refused(tmp_path, "is a symbolic link: remove it")
    assert target.read_text() == "a" * 64 + "\n"


def test_a_fifo_is_refused_without_hanging(tmp_path):
    os.mkfifo(tmp_path / "token", 0o600)
    _refused(tmp_path, "not a regular file")


def test_a_token_of_another_user_is_refused(tmp_path):
    if os.getuid() != 0:
        pytest.skip("needs root to give the file to another uid")
    load_or_create(str(tmp_path))
    os.chown(tmp_path / "token", 65534, -1)
    _refused(tmp_path, "belongs to uid 65534, not to you")


def test_a_file_that_holds_no_token_is_refused(tmp_path):
    fd = os.open(tmp_path / "token", os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, b"")
    os.close(fd)
    _refused(tmp_path, r"does not hold a token \(64 hex digits\)")


async def test_an_attach_with_the_token_gets_in_and_others_are_refused(tmp_path):
    token = load_or_create(str(tmp_path))
    near_miss = token.secret[:-1] + ("1" if token.secret[-1] == "0" else "0")
    async with served(token=token, clients=3) as (app, [right, wrong, missing]):
        await right.play(f"""
> Tversion tag 65535 msize 8192 version 9P2000.L
< Rversion *
> Tattach tag 1 fid 0 afid 4294967295 uname glenda aname {token.secret} n_uname 0
< Rattach tag 1 *
""")
        await wrong.play(f"""
> Tversion tag 65535 msize 8192 version 9P2000.u
< Rversion *
> Tattach tag 1 fid 0 afid 4294967295 uname glenda aname {near_miss} n_uname 0
< Rerror tag 1 ename "attach over TCP needs the server's token as aname: it is in {token.path}" errno 13
# nothing was attached: the fid is not there
> Twalk tag 2 fid 0 newfid 1 wnames [list]
< Rerror tag 2 *
""")
        await missing.play("""
> Tversion tag 65535 msize 8192 version 9P2000.L
< Rversion *
> Tattach tag 1 fid 0 afid 4294967295 uname glenda aname agent n_uname 0
< Rlerror tag 1 ecode 13
""")
        assert token.secret[:8] not in app.errors.text()  # a near-miss token is never logged

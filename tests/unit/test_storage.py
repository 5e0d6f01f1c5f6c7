"""The storage module: private directories, atomic writes that never follow a link (the database: test_database.py)."""

from __future__ import annotations

import os
import stat

import pytest

from anvilfs.storage import PrivateDir, StorageError, ensure_private_dir
from anvilfs.storage import private


def _mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_a_new_state_directory_and_its_files_are_private(tmp_path):
    d = PrivateDir(tmp_path / "state" / "deep")
    d.write_atomic("a.toml", b"x = 1\n")
    assert _mode(tmp_path / "state" / "deep") == 0o700
    assert _mode(tmp_path / "state" / "deep" / "a.toml") == 0o600
    assert d.read("a.toml") == b"x = 1\n" and d.read("missing") is None


@pytest.mark.parametrize("mode", [0o777, 0o750, 0o701])
def test_an_existing_directory_open_to_others_is_refused_with_the_fix(tmp_path, mode):
    path = tmp_path / "st"
    path.mkdir()
    os.chmod(path, mode)
    with pytest.raises(StorageError, match=rf"has mode {mode:04o}.*chmod 700 {path}"):
        ensure_private_dir(path)
    assert _mode(path) == mode  # refused, not changed behind the user's back


def test_a_directory_of_another_user_is_refused(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to make a directory owned by someone else")
    path = tmp_path / "theirs"
    path.mkdir(mode=0o700)
    os.chown(path, 65534, 65534)
    with pytest.raises(StorageError, match="belongs to uid 65534, not to you"):
        ensure_private_dir(path)


def test_a_state_directory_that_is_a_symbolic_link_is_refused(tmp_path):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(real)
    with pytest.raises(StorageError, match="is a symbolic link"):
        ensure_private_dir(tmp_path / "link")


def test_a_planted_link_is_never_written_through(tmp_path):
    d = PrivateDir(tmp_path / "st")
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    os.symlink(victim, tmp_path / "st" / "bot1.db")
    with pytest.raises(StorageError, match="bot1.db is a symbolic link"):
        private.checked_file(d, "bot1.db", create=True)
    with pytest.raises(StorageError, match="symbolic link"):
        d.read("bot1.db")
    os.symlink(victim, tmp_path / "st" / "bot1.toml")
    d.write_atomic("bot1.toml", b"new\n")  # the rename replaces the link itself
    assert victim.read_text() == "precious\n"
    assert not os.path.islink(tmp_path / "st" / "bot1.toml") and d.read("bot1.toml") == b"new\n"


def test_a_planted_temporary_file_makes_the_write_fail_not_follow(tmp_path, monkeypatch):
    d = PrivateDir(tmp_path / "st")
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    monkeypatch.setattr(private.secrets, "token_hex", lambda n: "guessed")
    os.symlink(victim, tmp_path / "st" / ".a.toml.guessed.tmp")
    with pytest.raises(FileExistsError):
        d.write_atomic("a.toml", b"x\n")
    assert victim.read_text() == "precious\n" and d.read("a.toml") is None


def test_files_written_by_older_versions_become_private(tmp_path):
    path = tmp_path / "st"
    path.mkdir(mode=0o700)
    (path / "old.db").write_text("before\n")
    os.chmod(path / "old.db", 0o644)
    private.checked_file(PrivateDir(path), "old.db", create=False)
    assert _mode(path / "old.db") == 0o600 and (path / "old.db").read_text() == "before\n"


def test_temporary_files_left_by_a_crash_are_removed_and_never_listed(tmp_path):
    path = tmp_path / "st"
    path.mkdir(mode=0o700)
    (path / ".a.toml.0123456789ab.tmp").write_text("half written")
    (path / "a.toml").write_text("whole")
    d = PrivateDir(path)
    assert os.listdir(path) == ["a.toml"] and d.names(".toml") == ["a.toml"]


def test_bad_names_are_refused(tmp_path):
    d = PrivateDir(tmp_path / "st")
    for name in ["", "..", "a/b", "x\0"]:
        with pytest.raises(ValueError):
            d.write_atomic(name, b"")


def test_a_refused_write_leaves_the_old_file_whole_and_no_fragment(tmp_path, monkeypatch):
    d = PrivateDir(tmp_path / "st")
    d.write_atomic("a.toml", b"first\n")
    real_write = os.write

    def short_then_full(fd, data):  # writes part, then the disk is full
        real_write(fd, bytes(data[:3]))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(private.os, "write", short_then_full)
    with pytest.raises(OSError):
        d.write_atomic("a.toml", b"second\n")
    monkeypatch.setattr(private.os, "write", real_write)
    assert (tmp_path / "st" / "a.toml").read_bytes() == b"first\n" and os.listdir(tmp_path / "st") == ["a.toml"]

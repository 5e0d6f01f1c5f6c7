"""A private directory: made 0700, checked when it exists, used without following links.

Everything is opened relative to the directory's own file descriptor with
O_NOFOLLOW, so a symbolic link planted inside (``NAME.log`` pointing at
``~/.bashrc``) is refused instead of written through, and temporary files
are created with O_EXCL under names nobody can guess ahead of time.

Durability (a power cut, not just a killed process): a replaced file is
written to a temporary file, fsynced, renamed over the old one, and the
directory is fsynced so the rename itself is on disk; an append is fsynced
before it returns.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Callable

from ..journal import timestamp

_FILE_MODE = 0o600
_DIR_MODE = 0o700
_TMP_SUFFIX = ".tmp"
_OPEN = os.O_CLOEXEC | os.O_NOFOLLOW


class StorageError(OSError):
    """A state directory or file that cannot or must not be used; the text says how to fix it."""

    def __str__(self) -> str:
        return self.strerror


def ensure_private_dir(path: str | os.PathLike) -> str:
    """Make `path` (and missing parents) 0700, or check that an existing one is ours alone."""
    path = os.path.abspath(os.fspath(path))
    try:
        os.makedirs(path, mode=_DIR_MODE)
    except FileExistsError:
        pass
    except OSError as exc:
        raise StorageError(exc.errno, f"cannot make state directory {path}: {exc.strerror}") from None
    _check_private(path, os.lstat(path))
    return path


def _check_private(path: str, info: os.stat_result) -> None:
    if stat.S_ISLNK(info.st_mode):
        raise StorageError(0, f"state directory {path} is a symbolic link; give the real directory (--state)")
    if not stat.S_ISDIR(info.st_mode):
        raise StorageError(0, f"{path} is not a directory; move it away or choose another --state")
    if info.st_uid != os.geteuid():
        raise StorageError(0, f"state directory {path} belongs to uid {info.st_uid}, not to you (uid {os.geteuid()}); "
                              "use a directory of your own (--state)")
    if stat.S_IMODE(info.st_mode) & 0o077:
        raise StorageError(0, f"state directory {path} has mode {stat.S_IMODE(info.st_mode):04o}: other users could "
                              f"read it or plant files in it; run `chmod 700 {path}` (and check what is inside)")


def checked_file(directory: PrivateDir, name: str, *, create: bool) -> None:
    """Check `name` in `directory` for a library that opens it by path (SQLite, which follows links): absent
    or a regular 0600 file of ours; made (empty, 0600) first if `create`."""
    _check_name(name)
    flags = os.O_RDONLY | os.O_NONBLOCK | (os.O_CREAT if create else 0)  # a planted FIFO must not block the open
    try:
        fd = directory._open(name, flags)
    except FileNotFoundError:
        return
    try:
        _own_file(fd, directory.path, name)
    finally:
        os.close(fd)


class PrivateDir:
    """One private directory, held open by its file descriptor."""

    def __init__(self, path: str | os.PathLike):
        self.path = ensure_private_dir(path)
        self._fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | _OPEN)
        self._subdirs: list[PrivateDir] = []  # closed with this one
        self._remove_temporaries()

    def close(self) -> None:
        """Let go of the directory and of every subdir() made from it (an App in a test run is one of many)."""
        for child in self._subdirs:
            child.close()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def subdir(self, name: str) -> PrivateDir:
        _check_name(name)
        child = PrivateDir(os.path.join(self.path, name))
        self._subdirs.append(child)
        return child

    def subpath(self, path: str) -> PrivateDir:
        """subdir() for each part of `path` ("a/b"): each checked private, made if missing; closed with this one."""
        found = self
        for part in path.split("/"):
            found = found.subdir(part)
        return found

    def __repr__(self) -> str:
        return f"<PrivateDir {self.path}>"

    # ------------------------------------------------------------ writing

    def write_atomic(self, name: str, data: bytes) -> None:
        """Replace `name` whole: readers (and a crash) see the old or the new content, never a mix."""
        self.put(self.prepare(name, data), name)
        self.sync()

    def prepare(self, name: str, data: bytes, *, sync: bool = True) -> str:
        """The first half of a replace: `data` in a new temporary file, on disk; returns its name.

        `put` then renames it over `name`, and `sync` makes the rename durable: a group of
        replaces (the save queue's) shares one `sync` of the directory instead of one each.
        With `sync=False` the data is not fsynced (a redo log holds it until a checkpoint does).
        """
        _check_name(name)
        tmp = f".{name}.{secrets.token_hex(6)}{_TMP_SUFFIX}"
        fd = self._open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        try:
            try:
                _write_all(fd, data)
                if sync:
                    os.fsync(fd)
            finally:
                os.close(fd)
        except BaseException:
            _unlink_quietly(tmp, self._fd)
            raise
        return tmp

    def put(self, tmp: str, name: str) -> None:
        """Rename a prepared temporary file over `name` (removed again if the rename fails)."""
        try:
            os.rename(tmp, name, src_dir_fd=self._fd, dst_dir_fd=self._fd)
        except BaseException:
            _unlink_quietly(tmp, self._fd)
            raise

    def sync(self) -> None:
        """Make the renames and new entries made so far in this directory durable."""
        os.fsync(self._fd)

    def move(self, name: str, dest: PrivateDir, new_name: str) -> None:
        """Move `name` into another private directory (a missing file is no error)."""
        _check_name(name)
        _check_name(new_name)
        try:
            os.rename(name, new_name, src_dir_fd=self._fd, dst_dir_fd=dest._fd)
        except FileNotFoundError:
            return
        os.fsync(dest._fd)
        os.fsync(self._fd)

    def remove(self, name: str, *, sync: bool = True) -> None:
        """Delete `name`; `sync=False` when a crash that brings it back does no harm (no fsync then)."""
        _check_name(name)
        _unlink_quietly(name, self._fd)
        if sync:
            os.fsync(self._fd)

    def remove_empty_dir(self, name: str) -> bool:
        """Remove the directory `name` if nothing is in it (durably); False if something is."""
        _check_name(name)
        try:
            os.rmdir(name, dir_fd=self._fd)
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                return False
            raise
        os.fsync(self._fd)
        return True

    # ------------------------------------------------------------ reading

    def read(self, name: str) -> bytes | None:
        """The content of `name`, or None if there is no such file."""
        if (fd := self._open_existing(name, os.O_RDONLY)) is None:
            return None
        try:
            _own_file(fd, self.path, name)
            chunks = []
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)

    def exists(self, name: str) -> bool:
        """Is there an entry `name` here (of any kind; a link is not followed)?"""
        return self.lstat(name) is not None

    def lstat(self, name: str) -> os.stat_result | None:
        """The stat of the entry `name` (a link not followed), or None if there is none."""
        _check_name(name)
        try:
            return os.stat(name, dir_fd=self._fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def names(self, suffix: str = "") -> list[str]:
        """The names of the files here ending in `suffix`, sorted; temporary files left out."""
        return sorted(n for n in os.listdir(self._fd) if n.endswith(suffix) and not _is_temporary(n))

    def _open_existing(self, name: str, flags: int) -> int | None:
        """`name` opened, or None if there is no such file (gone since: nothing to do on it)."""
        _check_name(name)
        try:
            return self._open(name, flags)
        except FileNotFoundError:
            return None

    def _open(self, name: str, flags: int) -> int:
        try:
            return os.open(name, flags | _OPEN, _FILE_MODE, dir_fd=self._fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # O_NOFOLLOW met a symbolic link
                raise StorageError(exc.errno, f"{os.path.join(self.path, name)} is a symbolic link; "
                                              "anvilfs never follows links in its state: remove it") from None
            raise

    def _remove_temporaries(self) -> None:
        """Temporary files of writes a crash interrupted: never renamed, so never part of the state."""
        for name in os.listdir(self._fd):
            if _is_temporary(name):
                _unlink_quietly(name, self._fd)


def _is_temporary(name: str) -> bool:
    return name.startswith(".") and name.endswith(_TMP_SUFFIX)


def _check_name(name: str) -> None:
    if not name or "/" in name or name in (".", "..") or "\0" in name:
        raise ValueError(f"not a file name inside a state directory: {name!r}")


def _own_file(fd: int, directory: str, name: str) -> bool:
    """Check an opened file is a regular file of ours, and make it 0600; True if it was just made (empty)."""
    info = os.fstat(fd)
    where = os.path.join(directory, name)
    if not stat.S_ISREG(info.st_mode):
        raise StorageError(0, f"{where} is not a regular file; move it away")
    if info.st_uid != os.geteuid():
        raise StorageError(0, f"{where} belongs to uid {info.st_uid}, not to you; move it away")
    if stat.S_IMODE(info.st_mode) != _FILE_MODE:
        os.fchmod(fd, _FILE_MODE)  # files written by older versions were 0644
    return info.st_size == 0


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _unlink_quietly(name: str, dir_fd: int) -> None:
    try:
        os.unlink(name, dir_fd=dir_fd)
    except FileNotFoundError:
        pass


def move_aside(state: PrivateDir, paths: list[str], moved: Callable[[], None] = lambda: None) -> str:
    """The files an import of an older anvilfs's state read, each a NAME or PARENT/NAME of `state`, moved into
    STATE/imported/TIME/ (its parents made there) for a person to keep or delete, never over what an earlier
    import left (NAME.2, NAME.3...); `moved()` after each move. Returns where they went."""
    into = state.subdir("imported").subdir(timestamp().replace(":", ""))
    for path in paths:
        parent, _, name = path.rpartition("/")
        source, dest = (state.subpath(parent), into.subpath(parent)) if parent else (state, into)
        free, n = name, 1
        while dest.exists(free):
            n += 1
            free = f"{name}.{n}"
        source.move(name, dest, free)
        moved()
    return into.path

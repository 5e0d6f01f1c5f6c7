"""plan9port's real `9p` and `9pfuse`, built once from the shared sources, and a 9pfuse mount.

    bin = plan9port_bin()            # or pytest.skip with what to install
    with ninepfuse_mount(srv.socket) as mnt: ...   # unmounted on the way out

The build runs shared/reference/build-plan9port-9p.sh (about 40 s) into
``~/.cache/anvilfs/plan9port-<hash of the tarball>`` (``$ANVILFS_TEST_CACHE``
instead of ``~/.cache/anvilfs`` if set), once: a marker written after a good
build says it is ready, an ``flock`` serialises concurrent test processes,
and a build without its marker is thrown away and redone. shared/ is found
beside the repository (``../shared``), as in CI.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
REFERENCE = REPO_ROOT.parent / "shared" / "reference"
TARBALL = REFERENCE / "plan9port-9p.tar.gz"
BUILD_SCRIPT = REFERENCE / "build-plan9port-9p.sh"
MARKER = "anvilfs-built"
BUILD_TIMEOUT = 900  # s: about 40 s alone, far more on a loaded machine


class Unavailable(Exception):
    """plan9port's tools cannot be had here; the message says what to install."""


def cache_dir() -> Path:
    env = os.environ.get("ANVILFS_TEST_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "anvilfs"


def _build_dir() -> Path:
    digest = hashlib.sha256(TARBALL.read_bytes()).hexdigest()[:12]
    return cache_dir() / f"plan9port-{digest}"


def plan9port_bin() -> Path:
    """The bin/ holding `9p` and `9pfuse`, built on first use; raises Unavailable."""
    if not TARBALL.is_file() or not BUILD_SCRIPT.is_file():
        raise Unavailable(f"plan9port sources not found in {REFERENCE}: check out shared/ beside the repository")
    if shutil.which("gcc") is None:
        raise Unavailable("no C compiler to build plan9port's 9p and 9pfuse: apt-get install gcc libc6-dev")
    build = _build_dir()
    if not (build / MARKER).is_file():
        build.parent.mkdir(parents=True, exist_ok=True)
        with open(build.parent / (build.name + ".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            if not (build / MARKER).is_file():
                _build(build)
    return build / "bin"


def _build(build: Path) -> None:
    shutil.rmtree(build, ignore_errors=True)  # a build that never finished
    try:
        proc = subprocess.run(["sh", str(BUILD_SCRIPT), str(build)], capture_output=True, text=True,
                              timeout=BUILD_TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        raise Unavailable(f"building plan9port took over {BUILD_TIMEOUT} s: {exc.stderr}") from None
    if proc.returncode != 0 or not (build / "bin" / "9pfuse").is_file():
        raise Unavailable(f"building plan9port failed (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    (build / MARKER).write_text("ok\n")


def tool_env(bin_dir: Path, namespace: Path | None = None) -> dict[str, str]:
    """The environment for plan9port's tools: its bin/ appended (it has its own `mount`), and `fusermount`."""
    path = os.environ.get("PATH", "/usr/bin:/bin") + os.pathsep + str(bin_dir)
    shim = _fusermount_shim(bin_dir)
    if shim is not None:
        path = str(shim) + os.pathsep + path
    env = os.environ | {"PATH": path}
    if namespace is not None:
        env["NAMESPACE"] = str(namespace)
    return env


def _fusermount_shim(bin_dir: Path) -> Path | None:
    """9pfuse runs `fusermount`; with only fuse3's `fusermount3` installed, a link of that name."""
    if shutil.which("fusermount") is not None or shutil.which("fusermount3") is None:
        return None
    shim = bin_dir.parent / "fusermount-shim"
    shim.mkdir(exist_ok=True)
    with contextlib.suppress(FileExistsError):
        (shim / "fusermount").symlink_to(shutil.which("fusermount3"))
    return shim


def fuse_missing() -> str | None:
    """Why a 9pfuse mount cannot work here, or None."""
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse: 9pfuse needs the fuse kernel module"
    if shutil.which("fusermount") is None and shutil.which("fusermount3") is None:
        return "no fusermount: apt-get install fuse3"
    return None


@contextlib.contextmanager
def ninepfuse_mount(bin_dir: Path, socket: Path, *, timeout: float = 30) -> Iterator[Path]:
    """Mount the server at `socket` with 9pfuse on a fresh directory; always unmounted afterwards."""
    mnt = Path(tempfile.mkdtemp(prefix="9pfuse."))
    env = tool_env(bin_dir)
    try:
        # 9pfuse forks: the parent returns once the mount is up, the daemon keeps
        # its output open, so that goes to a file (a pipe would never see EOF)
        with tempfile.TemporaryFile() as log:
            proc = subprocess.run([str(bin_dir / "9pfuse"), f"unix!{socket}", str(mnt)], stdout=log, stderr=log,
                                  env=env, timeout=timeout, stdin=subprocess.DEVNULL)
            if proc.returncode != 0:
                log.seek(0)
                raise RuntimeError(f"9pfuse failed (exit {proc.returncode}): {log.read().decode(errors='replace')}")
        _wait_mounted(mnt, timeout)
        yield mnt
    finally:
        _unmount(mnt, env)
        with contextlib.suppress(OSError):
            mnt.rmdir()


def _wait_mounted(mnt: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not os.path.ismount(mnt):
        if time.monotonic() > deadline:
            raise TimeoutError(f"9pfuse did not mount {mnt} within {timeout} s")
        time.sleep(0.05)  # poll interval, bounded by the deadline


def _unmount(mnt: Path, env: dict[str, str]) -> None:
    if not os.path.ismount(mnt):
        return
    for argv in (["fusermount", "-u", "-z", str(mnt)], ["umount", "-l", str(mnt)]):
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            if subprocess.run(argv, capture_output=True, env=env, timeout=30).returncode == 0:
                return


if __name__ == "__main__":  # .ci/run: `python3 tests/harness/plan9port.py build`, before the tests
    import sys

    if sys.argv[1:] != ["build"]:
        sys.exit("usage: plan9port.py build   (builds 9p and 9pfuse into the cache, once)")
    try:
        print(f"plan9port's 9p and 9pfuse: {plan9port_bin()}")
    except Unavailable as exc:
        sys.exit(f"plan9port: {exc}")

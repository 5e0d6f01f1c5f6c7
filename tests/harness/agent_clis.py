"""The real agent CLIs, pinned, installed once into the test cache (stdlib only).

    bin_dir = cli_bin("claude")       # or Unavailable, saying what to install
    python3 tests/harness/agent_clis.py install [NAME...]   # what .ci/run calls

Each CLI goes into ``~/.cache/anvilfs/agents/NAME-VERSION`` (the cache of
harness/plan9port.py, ``$ANVILFS_TEST_CACHE`` if set): the npm ones with
``npm install --prefix``, aider into a virtualenv of its own. A marker written
after a good install says it is ready; an ``flock`` serialises concurrent
test processes, and an install without its marker is thrown away and redone.
Versions are pinned so that a new release cannot change what a test proves;
moving one is a change of this table, with its tests run again.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

MARKER = "anvilfs-installed"
INSTALL_TIMEOUT = 900  # s: an install is 5-60 s on a quiet machine


class Unavailable(Exception):
    """The CLI cannot be installed here; the message says what is missing."""


@dataclass(frozen=True)
class Cli:
    name: str  # the program, and the backend's name in anvilfs/config/builtin.py
    package: str
    version: str
    registry: str  # "npm" or "pypi"

    @property
    def spec(self) -> str:
        return f"{self.package}@{self.version}" if self.registry == "npm" else f"{self.package}=={self.version}"


CLIS = {cli.name: cli for cli in (
    Cli("claude", "@anthropic-ai/claude-code", "2.1.332", "npm"),
    Cli("codex", "@openai/codex", "0.171.0", "npm"),
    Cli("gemini", "@google/gemini-cli", "0.61.0", "npm"),
    Cli("aider", "aider-chat", "0.86.2", "pypi"),
)}


def cache_dir() -> Path:
    env = os.environ.get("ANVILFS_TEST_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "anvilfs"


def install_dir(name: str) -> Path:
    cli = CLIS[name]
    return cache_dir() / "agents" / f"{cli.name}-{cli.version}"


def bin_dir(name: str) -> Path:
    """Where the CLI's program is once installed (put it first on the agent's PATH)."""
    where = install_dir(name)
    return where / ("node_modules/.bin" if CLIS[name].registry == "npm" else "bin")


def cli_bin(name: str) -> Path:
    """The directory holding the CLI's program, installed on first use; raises Unavailable."""
    where = install_dir(name)
    if not (where / MARKER).is_file():
        where.parent.mkdir(parents=True, exist_ok=True)
        with open(where.parent / (where.name + ".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            if not (where / MARKER).is_file():
                _install(CLIS[name], where)
    program = bin_dir(name) / name
    if not program.exists():
        raise Unavailable(f"{program} missing after installing {CLIS[name].spec}")
    return bin_dir(name)


def _install(cli: Cli, where: Path) -> None:
    shutil.rmtree(where, ignore_errors=True)  # a half-done install
    where.mkdir(parents=True)
    if cli.registry == "npm":
        if shutil.which("npm") is None:
            raise Unavailable(f"npm not found, needed to install {cli.spec}: apt-get install nodejs npm")
        steps = [["npm", "install", "--no-fund", "--no-audit", "--prefix", str(where), cli.spec]]
    else:
        steps = [[sys.executable, "-m", "venv", str(where)],
                 [str(where / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", cli.spec]]
    for argv in steps:
        try:
            result = subprocess.run(argv, capture_output=True, text=True, timeout=INSTALL_TIMEOUT,
                                    cwd=where, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise Unavailable(f"installing {cli.spec}: {' '.join(argv[:3])} failed: {exc}") from exc
        if result.returncode != 0:
            tail = "\n".join((result.stderr or result.stdout).strip().splitlines()[-15:])
            raise Unavailable(f"installing {cli.spec} failed (exit {result.returncode}):\n{tail}")
    (where / MARKER).write_text(cli.spec + "\n")


def size_mb(path: Path) -> float:
    """Disk used, a hard-linked file once (npm links claude's binary into two packages)."""
    sizes = {}
    for file in path.rglob("*"):
        if file.is_file() and not file.is_symlink():
            stat = file.stat()
            sizes[(stat.st_dev, stat.st_ino)] = stat.st_size
    return sum(sizes.values()) / 1e6


def main(argv: list[str]) -> int:
    if not argv or argv[0] != "install":
        print("usage: agent_clis.py install [NAME...]   (names: " + " ".join(CLIS) + ")", file=sys.stderr)
        return 2
    for name in argv[1:] or list(CLIS):
        if name not in CLIS:
            print(f"unknown CLI {name}; known: {' '.join(CLIS)}", file=sys.stderr)
            return 2
        started = time.monotonic()
        fresh = not (install_dir(name) / MARKER).is_file()
        try:
            cli_bin(name)
        except Unavailable as exc:
            print(f"{name}: {exc}", file=sys.stderr)
            return 1
        took = f"installed in {time.monotonic() - started:.0f} s" if fresh else "already installed"
        print(f"{CLIS[name].spec}: {took}, {size_mb(install_dir(name)):.0f} MB in {install_dir(name)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Private virtualenvs for the third-party 9P clients the tests drive.

Two independent Python 9P clients are used to check anvilfs from the outside:

* ``python-9p`` (import name ``py9p``): plan9port's C codec behind ctypes,
  9P2000 only.
* ``p9fs`` (also installs a top-level ``py9p`` package): a pure-Python
  9P2000 / 9P2000.u / 9P2000.L client.

Both claim the import name ``py9p``, so each lives in a virtualenv of its own
and neither is ever installed into the project's venv.  The tests talk to them
only through subprocesses (see ``tests/clients/*.py``).

The venvs live under ``${ANVILFS_TEST_CACHE:-<repo>/.cache}/venvs/<name>``.
Creation is done once and cached: a ready venv carries a marker file naming the
pinned requirement and the interpreter, written only after ``pip install``
and an import check succeeded.  Concurrent test processes serialise on an
``flock`` held on ``venvs/<name>.lock``; a half-built venv (no marker, e.g.
after a crash) is removed and rebuilt by the next caller.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
CLIENTS_DIR = REPO_ROOT / "tests" / "clients"
MARKER = "anvilfs-venv.json"


@dataclass(frozen=True)
class ClientSpec:
    name: str  # directory name under venvs/
    requirement: str  # what pip installs
    dist: str  # distribution name, for importlib.metadata
    version: str
    check: str  # python snippet that must run cleanly inside the venv


CLIENTS: dict[str, ClientSpec] = {
    "python-9p": ClientSpec(
        name="python-9p",
        requirement="python-9p==0.1.0",
        dist="python-9p",
        version="0.1.0",
        check=(
            "import py9p\n"
            "assert hasattr(py9p, 'encode_message') and hasattr(py9p, 'Client')\n"
            "py9p.encode_message(py9p.Tversion(msize=8192))\n"
        ),
    ),
    "p9fs": ClientSpec(
        name="p9fs",
        requirement="p9fs==0.0.4",
        dist="p9fs",
        version="0.0.4",
        check=(
            "from py9p import py9p\n"
            "assert hasattr(py9p, 'Client') and hasattr(py9p, 'Marshal9P')\n"
            "import p9fs\n"
        ),
    ),
}


class VenvError(RuntimeError):
    """A client venv could not be created; the message carries the tool output."""


def cache_root() -> Path:
    env = os.environ.get("ANVILFS_TEST_CACHE")
    return Path(env) if env else REPO_ROOT / ".cache"


def venvs_root() -> Path:
    return cache_root() / "venvs"


def _venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def _marker_content(spec: ClientSpec) -> dict:
    return {
        "requirement": spec.requirement,
        "base_python": sys.version.split()[0],
        "base_executable": getattr(sys, "_base_executable", sys.executable),
    }


def _is_ready(venv: Path, spec: ClientSpec) -> bool:
    marker = venv / MARKER
    if not marker.is_file() or not _venv_python(venv).exists():
        return False
    try:
        return json.loads(marker.read_text()) == _marker_content(spec)
    except (OSError, ValueError):
        return False


def _clean_env() -> dict[str, str]:
    env = dict(os.environ)
    # Never let the project's venv leak into the client venvs.
    for var in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP"):
        env.pop(var, None)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PIP_NO_INPUT"] = "1"
    return env


def _run(cmd: list[str], what: str, timeout: float) -> None:
    try:
        proc = subprocess.run(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=_clean_env(),
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout if isinstance(exc.stdout, str) else (exc.stdout or b"").decode(errors="replace")
        raise VenvError(f"{what} timed out after {timeout}s: {' '.join(cmd)}\n{out}") from exc
    if proc.returncode != 0:
        raise VenvError(
            f"{what} failed (exit {proc.returncode}): {' '.join(cmd)}\n{proc.stdout}"
        )


def _build(venv: Path, spec: ClientSpec) -> None:
    if venv.exists():
        shutil.rmtree(venv)
    _run([sys.executable, "-m", "venv", str(venv)], f"creating venv for {spec.name}", 300)
    py = str(_venv_python(venv))
    _run(
        [py, "-m", "pip", "install", "--disable-pip-version-check", "--no-input", spec.requirement],
        f"pip install {spec.requirement}",
        900,
    )
    _run([py, "-I", "-c", spec.check], f"import check for {spec.name}", 120)
    tmp = venv / (MARKER + ".tmp")
    tmp.write_text(json.dumps(_marker_content(spec)))
    os.replace(tmp, venv / MARKER)


LOCK_DEADLINE = 1500  # seconds: longer than one build (its steps time out after 300 + 900 + 120)


def _lock(lock, spec: ClientSpec) -> None:
    """Take the build lock, waiting for another process's build; fail if it never ends."""
    deadline = time.monotonic() + LOCK_DEADLINE
    while True:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise VenvError(f"another process held {lock.name} for {LOCK_DEADLINE}s building {spec.name}") from None
            time.sleep(0.5)  # poll interval for another process's lock, bounded by the deadline


def ensure_client_venv(name: str) -> Path:
    """Create (once) the venv for client ``name`` and return its python.

    ``name`` is ``"python-9p"`` or ``"p9fs"``.  Safe to call from several
    processes at once.  Raises :class:`VenvError` with pip's output if the
    venv cannot be built.
    """
    spec = CLIENTS[name]
    root = venvs_root()
    venv = root / spec.name
    if _is_ready(venv, spec):
        return _venv_python(venv)
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f"{spec.name}.lock", "w") as lock:
        _lock(lock, spec)
        try:
            if not _is_ready(venv, spec):
                _build(venv, spec)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return _venv_python(venv)


def python_9p_python() -> Path:
    return ensure_client_venv("python-9p")


def p9fs_python() -> Path:
    return ensure_client_venv("p9fs")


# --- helpers for running the scripts in tests/clients -----------------------

DRIVERS = {
    "python-9p": CLIENTS_DIR / "py9p_driver.py",
    "p9fs": CLIENTS_DIR / "p9fs_driver.py",
}
PY9P_CODEC = CLIENTS_DIR / "py9p_codec.py"


def client_command(name: str, script: Path, *args: str) -> list[str]:
    """argv that runs ``script`` with client ``name``'s python in isolated mode."""
    return [str(ensure_client_venv(name)), "-I", str(script), *args]


def driver_command(name: str, *args: str) -> list[str]:
    """argv for the driver of client ``name``; add ``--unix PATH`` or ``--tcp H:P``."""
    return client_command(name, DRIVERS[name], *args)


def run_driver(
    name: str,
    ops: list[dict],
    *args: str,
    timeout: float = 60.0,
) -> tuple[list[dict], subprocess.CompletedProcess]:
    """Run a driver over ``ops`` and return (one parsed result per line, process)."""
    proc = subprocess.run(
        driver_command(name, *args),
        input="\n".join(json.dumps(op) for op in ops) + "\n",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_clean_env(),
        timeout=timeout,
    )
    results = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    return results, proc

"""Checks for the third-party 9P client harness (tests/harness, tests/clients): the two client venvs
(python-9p, p9fs) exist, are pinned and isolated, and their creation is cached and safe under concurrency.

The codec oracle's checks are in test_clients_codec_oracle.py, the drivers' against real servers in
test_clients_drivers.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness import venvs  # as every test imports it: `tests.harness` would be a second copy of the module

pytestmark = pytest.mark.clients

PROBE = r"""
import importlib.metadata as md, importlib.util, json, sys
def ver(d):
    try:
        return md.version(d)
    except md.PackageNotFoundError:
        return None
spec = importlib.util.find_spec("py9p")
print(json.dumps({"prefix": sys.prefix, "python-9p": ver("python-9p"), "p9fs": ver("p9fs"),
                  "py9p": spec.origin if spec else None}))
"""


def _probe(python: Path) -> dict:
    out = subprocess.run([str(python), "-I", "-c", PROBE], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_client_venvs_are_separate_pinned_and_not_in_project_venv(py9p_python, p9fs_python):
    import importlib.util

    root = venvs.venvs_root().resolve()
    a, b = _probe(py9p_python), _probe(p9fs_python)
    assert Path(a["prefix"]).resolve() == root / "python-9p"
    assert Path(b["prefix"]).resolve() == root / "p9fs"
    assert (a["python-9p"], a["p9fs"]) == ("0.1.0", None)
    assert (b["p9fs"], b["python-9p"]) == ("0.0.4", None)
    # each venv's py9p is its own package
    assert a["py9p"].startswith(a["prefix"]) and b["py9p"].startswith(b["prefix"])
    assert (Path(a["py9p"]).parent / "libpy9p.so").exists()  # python-9p's native codec
    assert (Path(b["py9p"]).parent / "py9p.py").exists()  # p9fs's pure-python module
    # and neither leaks into the project's own venv
    assert importlib.util.find_spec("py9p") is None


def _ensure_in_subprocess(cache: Path, name: str) -> subprocess.Popen:
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from harness import venvs; print(venvs.ensure_client_venv(sys.argv[2]))"
    )
    env = dict(os.environ, ANVILFS_TEST_CACHE=str(cache))
    return subprocess.Popen(
        [sys.executable, "-c", code, str(venvs.REPO_ROOT / "tests"), name],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_venv_creation_is_race_safe_cached_and_repairs_half_built(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    t0 = time.monotonic()
    procs = [_ensure_in_subprocess(cache, "python-9p") for _ in range(2)]
    outs = [p.communicate(timeout=900) for p in procs]
    build_s = time.monotonic() - t0
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
    paths = {out.strip() for out, _ in outs}
    expected = cache / "venvs" / "python-9p" / "bin" / "python"
    assert paths == {str(expected)}
    marker = cache / "venvs" / "python-9p" / venvs.MARKER
    assert marker.is_file()
    assert json.loads(marker.read_text())["requirement"] == "python-9p==0.1.0"
    print(f"fresh python-9p venv (two racing callers): {build_s:.1f}s")

    # cached: a further call does not rebuild
    monkeypatch.setenv("ANVILFS_TEST_CACHE", str(cache))
    stamp = marker.stat().st_mtime_ns
    assert venvs.ensure_client_venv("python-9p") == expected
    assert marker.stat().st_mtime_ns == stamp

    # a venv without its marker (crashed build) is thrown away and rebuilt
    marker.unlink()
    junk = cache / "venvs" / "python-9p" / "half-built"
    junk.write_text("")
    assert venvs.ensure_client_venv("python-9p") == expected
    assert marker.is_file() and not junk.exists()


def test_venv_pip_failure_raises_with_pip_output(tmp_path, monkeypatch):
    monkeypatch.setenv("ANVILFS_TEST_CACHE", str(tmp_path / "cache"))
    missing = tmp_path / "does_not_exist-0.0.0-py3-none-any.whl"
    monkeypatch.setitem(
        venvs.CLIENTS,
        "broken",
        venvs.ClientSpec(name="broken", requirement=str(missing), dist="x", version="0", check="pass"),
    )
    with pytest.raises(venvs.VenvError) as exc:
        venvs.ensure_client_venv("broken")
    text = str(exc.value)
    assert "pip install" in text and "does_not_exist-0.0.0-py3-none-any.whl" in text
    assert "ERROR" in text  # pip's own output is carried along
    assert not (tmp_path / "cache" / "venvs" / "broken" / venvs.MARKER).exists()

"""A real backend through a Linux v9fs mount in QEMU: the fake agent CLI as a command backend."""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from harness.fakes import FAKE_AGENT
from harness.server import start_server
from harness.vm import ensure_assets, run_in_guest

pytestmark = pytest.mark.vm

SNIPPET = r"""
echo 'new fake /tmp name=vm1' > ctl; echo "new=$?"
cat vm1/backend
echo 'hello from the guest' > vm1/in; echo "in=$?"
cat vm1/wait
cat vm1/out
echo 'second turn' > vm1/in
cat vm1/wait
cat vm1/out
"""


def test_command_backend_through_v9fs():
    ensure_assets()
    base = Path(tempfile.mkdtemp(prefix="anvv.", dir="/tmp"))
    config = base / "config.toml"
    config.write_text(
        f'[backends.fake]\nkind = "command"\n'
        f'argv = ["{sys.executable}", "{FAKE_AGENT}", "-p", "--session-id", "{{conversation}}"]\n'
        f'resume_argv = ["{sys.executable}", "{FAKE_AGENT}", "-p", "--resume", "{{conversation}}"]\n'
        f'env = {{ FAKE_AGENT_STATE = "{base / "fake-state"}" }}\n')
    srv = start_server(base, extra_args=["--config", str(config)])
    try:
        r = run_in_guest(srv.socket, SNIPPET, version="9p2000.L", timeout=90)
        why = f"{r}\n{srv.trace_tail()}"
        assert r.returncode == 0 and r.mounted, why
        lines = r.output.splitlines()
        assert lines[:4] == ["new=0", "fake", "in=0", "await"], why
        assert "[fake agent] conversation" in r.output and "turn 1" in r.output, why
        assert "hello from the guest" in r.output, why
        assert "turn 2" in r.output and "second turn" in r.output, why  # the conversation was resumed
        assert lines.count("await") == 2, why
    finally:
        srv.stop()
        shutil.rmtree(base, ignore_errors=True)

"""The IDEAS.md beads flow through a Linux v9fs mount in a QEMU guest: echo to ctl, cat status."""

from __future__ import annotations

import pytest

from harness.server import AnvilServer
from harness.vm import ensure_assets, run_in_guest, sections

pytestmark = pytest.mark.vm

SNIPPET = r"""
step() { echo "@@ $1"; }
step session;  echo 'new sim /tmp name=research-bot-123' > ctl;                                   echo "rc=$?"
step new;      echo 'new "Research auth system" researcher "Analyze existing auth code"' > beads/ctl; echo "rc=$?"
step ready;    cat beads/ready;                                                                   echo "rc=$?"
step claim;    echo 'claim research-bot-123' > beads/research-auth-001/ctl;                       echo "rc=$?"
step result;   echo '/tmp/auth-analysis.md' > beads/research-auth-001/result;                     echo "rc=$?"
step complete; echo complete > beads/research-auth-001/ctl;                                       echo "rc=$?"
step new2;     echo 'new "Implement OAuth" developer "Add OAuth based on research" research-auth-001' > beads/ctl; echo "rc=$?"
step status;   cat beads/research-auth-001/status;                                                echo "rc=$?"
step again;    echo 'claim research-bot-123' > beads/research-auth-001/ctl;                       echo "rc=$?"
step dev;      cat beads/ready.developer;                                                         echo "rc=$?"
step readback; exec 3<>beads/ctl; echo 'new "Write tests" tester "Cover OAuth" impl-oauth-002' >&3; cat <&3; exec 3>&-; echo "rc=$?"
step ls;       ls beads/research-auth-001;                                                        echo "rc=$?"
step list;     cat beads/list;                                                                    echo "rc=$?"
step end
"""


@pytest.fixture(scope="session")
def guest_assets() -> None:
    ensure_assets()


def test_the_ideas_md_beads_flow_on_a_linux_mount(guest_assets: None, anvil_server: AnvilServer) -> None:
    srv = anvil_server
    r = run_in_guest(srv.socket, SNIPPET, timeout=90)
    why = f"{r}\n{srv.trace_tail()}"
    assert r.mounted, why
    s = sections(r.output)
    for step in ["session", "new", "claim", "result", "complete", "new2"]:
        assert s[step] == ([], 0), f"{step}: {s.get(step)}\n{why}"
    assert s["ready"] == (["research-auth-001 pending researcher - Research auth system"], 0), why
    assert s["status"] == (["completed"], 0), why
    lines, rc = s["again"]
    assert rc not in (None, 0) and any("write error" in ln for ln in lines), why  # completed: no claim
    assert s["dev"] == (["impl-oauth-002 pending developer - Implement OAuth"], 0), why
    assert s["readback"] == (["write-tests-003"], 0), why
    files = set(s["ls"][0][0].split()) if len(s["ls"][0]) == 1 else {w for ln in s["ls"][0] for w in ln.split()}
    assert {"status", "title", "description", "role", "assigned_to", "result", "depends_on", "convoy", "context", "ctl"} <= files, why
    assert s["list"][0][:2] == ["research-auth-001 completed researcher research-bot-123 Research auth system",
                                "impl-oauth-002 pending developer - Implement OAuth"], why

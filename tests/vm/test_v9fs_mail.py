"""The mail flow through a Linux v9fs mount in a QEMU guest: write mail, cat inbox/*.json, rm to ack."""

from __future__ import annotations


import pytest

from harness.server import AnvilServer
from harness.vm import ensure_assets, run_in_guest, sections

pytestmark = pytest.mark.vm

SNIPPET = r"""
step() { echo "@@ $1"; }
step session;  echo 'new sim /tmp name=dev-123' > ctl;                                                  echo "rc=$?"
step send;     echo '{"to":"human","type":"APPROVAL_REQUEST","subject":"OAuth implementation","body":"Please review."}' > dev-123/mail; echo "rc=$?"
step readback; exec 3<>dev-123/mail; echo '{"to":"human","type":"QUERY_REQUEST","subject":"second","body":""}' >&3; cat <&3; exec 3>&-; echo "rc=$?"
step approvals; cat human/approvals;                                                                   echo "rc=$?"
step cat;      cat human/inbox/*.json | tr -d '\n';                                                    echo; echo "rc=$?"
step bad;      echo '{"to":"nobody","type":"QUERY_REQUEST","subject":"x","body":""}' > dev-123/mail;    echo "rc=$?"
step rm;       rm human/inbox/*.json;                                                                  echo "rc=$?"
step after;    ls human/inbox | wc -l; ls human/done | wc -l;                                          echo "rc=$?"
step rmdir;    echo stop > dev-123/ctl; rmdir dev-123;                                                  echo "rc=$?"
step list;     cat list | wc -l;                                                                        echo "rc=$?"
step end
"""


@pytest.fixture(scope="session")
def guest_assets() -> None:
    ensure_assets()


def test_the_mail_flow_on_a_linux_mount(guest_assets: None, anvil_server: AnvilServer) -> None:
    srv = anvil_server
    r = run_in_guest(srv.socket, SNIPPET, timeout=90)
    why = f"{r}\n{srv.trace_tail()}"
    assert r.mounted, why
    s = sections(r.output)
    for step in ["session", "send", "rm", "rmdir"]:
        assert s[step] == ([], 0), f"{step}: {s.get(step)}\n{why}"
    [second], rc = s["readback"]
    assert rc == 0 and second.isdigit() and len(second) == 16, why
    [line], _ = s["approvals"]
    assert line.endswith(" dev-123 - OAuth implementation"), why
    text = s["cat"][0][0]
    assert text.count('"from": "dev-123"') == 2 and '"subject": "second"' in text, why
    lines, rc = s["bad"]
    assert rc not in (None, 0), why  # refused at the write: the shell sees it
    assert s["after"] == (["0", "2"], 0), why
    assert s["list"] == (["0"], 0), why

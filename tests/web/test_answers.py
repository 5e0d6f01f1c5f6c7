"""The page's approve and reject as a script would send them (no browser): the same rules as `anvilfs approve|reject`.

A real `anvilfs web` on a real server; the POSTs carry the login cookie and the page's own Origin, as the page's do.
"""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from web_drive import Web, web_process

from harness.server import AnvilServer


class Page:
    """What the page does over HTTP: log in once (the cookie), then POST JSON with its Origin."""

    def __init__(self, web: Web):
        self.host = urlsplit(web.base).netloc
        login = urlsplit(web.login)
        reply = self._request("GET", f"{login.path}?{login.query}", {})
        assert reply[0] == 303, reply
        self.cookie = reply[2].split(";")[0]

    def _request(self, method: str, path: str, headers: dict, body: bytes | None = None) -> tuple[int, str, str]:
        conn = http.client.HTTPConnection(self.host, timeout=30)
        try:
            conn.request(method, path, body=body, headers=headers)
            reply = conn.getresponse()
            return reply.status, reply.read().decode(), reply.getheader("set-cookie") or ""
        finally:
            conn.close()

    def post(self, path: str, doc: dict) -> tuple[int, dict]:
        headers = {"Content-Type": "application/json", "Origin": f"http://{self.host}", "Cookie": self.cookie}
        status, text, _ = self._request("POST", path, headers, json.dumps(doc).encode())
        return status, json.loads(text)


def cli(srv: AnvilServer, *args: str) -> str:
    result = srv.run_cli(*args)
    assert result.returncode == 0, f"anvilfs {' '.join(args)}: {result.stderr}"
    return result.stdout


def bead_asking_its_coordinator(srv: AnvilServer) -> str:
    """A bead waiting for approval whose request went to its convoy's coordinator: the page answers it on its ctl."""
    for name in ("dev", "lead"):
        cli(srv, "write", "agent/ctl", f"new sim /tmp name={name}")
    cli(srv, "write", "agent/convoys/ctl", 'new "Auth" "OAuth for the app"')
    convoy = cli(srv, "read", "agent/convoys/list").split()[0]
    cli(srv, "write", f"agent/convoys/{convoy}/ctl", "coordinator lead")
    cli(srv, "write", "agent/beads/ctl", f'new "Implement OAuth" developer "Add OAuth" requires_approval=true convoy={convoy}')
    bead = "impl-oauth-001"
    cli(srv, "write", f"agent/beads/{bead}/ctl", "claim dev")
    cli(srv, "write", f"agent/beads/{bead}/ctl", "complete")
    assert cli(srv, "read", "agent/human/approvals") == ""
    return bead


@pytest.mark.parametrize("reason", ["it's missing  tests", "looks wrong\nunclaim"])
def test_a_reason_from_the_page_reaches_the_beads_ctl_whole_as_one_word(srv: AnvilServer, tmp_path: Path, reason) -> None:
    bead = bead_asking_its_coordinator(srv)
    with web_process(srv, tmp_path / "web.log") as web:
        status, answer = Page(web).post("/reject", {"id": bead, "reason": reason})
    assert status == 200, answer
    assert cli(srv, "read", f"agent/beads/{bead}/status") == "in_progress\n"
    assert cli(srv, "read", f"agent/beads/{bead}/review") == f"{reason}\n"
    assert cli(srv, "read", f"agent/beads/{bead}/assigned_to") == "dev\n"  # no `unclaim` ran after it


def test_the_worker_cannot_approve_its_own_bead_from_the_page(srv: AnvilServer, tmp_path: Path) -> None:
    cli(srv, "write", "agent/ctl", "new sim /tmp name=dev")
    cli(srv, "write", "agent/beads/ctl", 'new "Implement OAuth" developer "Add OAuth" requires_approval=true')
    bead = "impl-oauth-001"
    cli(srv, "write", f"agent/beads/{bead}/ctl", "claim dev")
    cli(srv, "write", f"agent/beads/{bead}/ctl", "complete")
    with web_process(srv, tmp_path / "web.log", env={"ANVILFS_SESSION": "dev"}) as web:  # the page attaches as dev
        status, answer = Page(web).post("/approve", {"id": bead})
    assert status == 409 and "dev did the work" in answer["error"], answer
    assert cli(srv, "read", f"agent/beads/{bead}/status") == "pending_approval\n"


def test_a_request_from_a_lease_holder_is_answered_from_the_page(srv: AnvilServer, tmp_path: Path) -> None:
    cli(srv, "write", "agent/beads/ctl", 'new "Implement OAuth" developer "Add OAuth" requires_approval=true')
    bead = "impl-oauth-001"
    cli(srv, "write", f"agent/beads/{bead}/ctl", "claim ci-bot lease=600")
    cli(srv, "write", f"agent/beads/{bead}/ctl", "complete")
    [line] = cli(srv, "read", "agent/human/approvals").splitlines()
    assert line.split()[1:3] == ["anvilfs", bead], line  # from anvilfs: ci-bot is no participant
    with web_process(srv, tmp_path / "web.log") as web:
        status, answer = Page(web).post("/reject", {"id": bead, "reason": "no tests"})
    assert status == 200, answer
    assert cli(srv, "read", f"agent/beads/{bead}/status") == "in_progress\n"
    assert cli(srv, "read", f"agent/beads/{bead}/review") == "no tests\n"
    assert cli(srv, "read", "agent/human/approvals") == ""

"""`anvilfs web` in a real headless Chromium, against a real `anvilfs serve`.

What a person sees (sessions live from events, beads in waves, convoys, human's approvals and
inbox), that an approval clicked in the page reaches the bead as `anvilfs approve` would, and what
is refused: a visit without the cookie, a second use of the login link, a cross-site POST.
Screenshots of each view go to the test's tmp dir (screenshots/), named in the test's output.
"""

from __future__ import annotations

import http.server
import json
import threading
from pathlib import Path

import httpx
import pytest
from web_drive import Web, act, logged_in, text, wait_for

pytestmark = pytest.mark.web

VIEWS = ("sessions", "beads", "convoys", "mail")
WAIT_HTTP = 30  # seconds for one request to the web process


def test_a_session_made_through_ctl_shows_up_without_a_reload(web: Web, browser) -> None:
    page = logged_in(browser(), web)
    page.execute_script("window.sameDocument = true")  # gone if the page were loaded again
    web.cli("write", "agent/ctl", "new sim /tmp name=bot1")
    row = '#sessions tr[data-name="bot1"]'
    wait_for(page, lambda d: text(d, row), "bot1's row in the sessions table")
    web.cli("write", "agent/bot1/in", input="hello\n")
    assert web.cli("read", "agent/bot1/wait") == "await\n"
    wait_for(page, lambda d: "await" in text(d, f"{row} td:nth-child(2)"), "bot1's status to turn to await")
    assert "sim" in text(page, row) and "simulated" in text(page, row)
    # the status column comes from `list`, the last event from `events`: two reads that may land in two renders
    wait_for(page, lambda d: "await" in text(d, f"{row} td.last"), "the last event to be the turn's end")
    assert page.execute_script("return window.sameDocument") is True, "the page was loaded again"


def requested_approval(web: Web, title: str = "Implement OAuth") -> tuple[str, str]:
    """A bead that requires approval, done by the session dev: (its id, the request's id in human/approvals)."""
    web.cli("write", "agent/ctl", "new sim /tmp name=dev")
    bead = web.cli("rdwr", "agent/beads/ctl", input=f'new "{title}" developer "Add it" requires_approval=true\n').split()[0]
    web.cli("write", f"agent/beads/{bead}/ctl", "claim dev")
    web.cli("write", f"agent/beads/{bead}/ctl", "complete all tests pass")
    [line] = web.cli("read", "agent/human/approvals").splitlines()
    return bead, line.split()[0]


def test_an_approval_clicked_in_the_page_reaches_the_bead(web: Web, browser) -> None:
    bead, request = requested_approval(web)
    page = logged_in(browser(), web, "mail")
    item = f'#approvals li[data-id="{request}"]'
    wait_for(page, lambda d: bead in text(d, item), "the approval request in the page")
    act(page, f"{item} button.approve", lambda button: button.click(), "the approve button")
    wait_for(page, lambda d: f"approved {request}" in text(d, "#message"), "the page to say the approval was sent")
    assert web.cli("read", f"agent/beads/{bead}/status") == "completed\n"
    assert web.cli("read", "agent/human/approvals") == ""
    answers = [json.loads(web.cli("read", f"agent/dev/inbox/{name}")) for name in web.cli("ls", "agent/dev/inbox").split()]
    assert [(m["from"], m["type"], m["re"], m["subject"]) for m in answers] == \
        [("human", "APPROVAL_RESPONSE", request, "approved")]  # as `anvilfs approve` sends it
    wait_for(page, lambda d: not d.find_elements("css selector", item), "the request to leave the page (live)")


def test_a_rejection_typed_in_the_page_reaches_the_bead_with_its_reason(web: Web, browser) -> None:
    bead, request = requested_approval(web)
    page = logged_in(browser(), web, "mail")
    item = f'#approvals li[data-id="{request}"]'
    wait_for(page, lambda d: text(d, item), "the approval request in the page")
    act(page, f"{item} input.reason", lambda field: field.send_keys("no test for the callback"), "the reason field")
    web.cli("write", "agent/ctl", "new sim /tmp name=other")  # a new view while the reason is being typed
    wait_for(page, lambda d: text(d, "#count-sessions") == "2", "the view with the new session")
    act(page, f"{item} button.reject", lambda button: button.click(), "the reject button")
    wait_for(page, lambda d: f"rejected {request}" in text(d, "#message"), "the page to say the rejection was sent")
    assert web.cli("read", f"agent/beads/{bead}/status") == "in_progress\n"
    assert web.cli("read", f"agent/beads/{bead}/review") == "no test for the callback\n"


def test_a_visit_without_the_cookie_is_refused(web: Web, browser) -> None:
    stranger = browser()
    stranger.get(f"{web.base}/")
    assert "refused: not logged in" in text(stranger, "body")
    assert not stranger.find_elements("css selector", "#sessions"), "the page must not be served"
    for path in ("/", "/events", "/app.js"):
        answer = httpx.get(f"{web.base}{path}", timeout=WAIT_HTTP)
        assert answer.status_code == 401 and "not logged in" in answer.text, (path, answer.status_code)
    page = logged_in(browser(), web)  # the link works once ...
    cookie = page.get_cookie("anvilfs_web")
    assert (cookie["httpOnly"], cookie["sameSite"]) == (True, "Strict"), cookie
    assert page.execute_script("return document.cookie") == "", "no script of the page may read the cookie"
    stranger.get(web.login)  # ... and then no more
    assert "refused: this login link was used already" in text(stranger, "body")
    stranger.get(f"{web.base}/")
    assert "refused: not logged in" in text(stranger, "body")


def test_a_cross_site_post_is_refused(web: Web, browser, tmp_path: Path) -> None:
    bead, request = requested_approval(web)
    page = logged_in(browser(), web)
    # a page on another port of this machine: another origin, but the same site, so the
    # SameSite=Strict cookie goes along with its form; only the Origin check stands in the way
    with evil_site(f'<form method="post" action="{web.base}/approve" enctype="text/plain">'
                   f'<input name=\'{{"id": "{bead}", "x": "\' value=\'"}}\'></form>'
                   "<script>document.forms[0].submit()</script>") as evil:
        page.get(evil)
        wait_for(page, lambda d: "refused: a cross-site request" in text(d, "body"), "the refusal of the evil form")
    assert f"Origin {evil.rstrip('/')}" in text(page, "body")
    assert web.cli("read", f"agent/beads/{bead}/status") == "pending_approval\n"
    assert web.cli("read", "agent/human/approvals").split()[0] == request
    for headers in ({"Origin": "http://127.0.0.1:1"}, {"Origin": web.base, "Sec-Fetch-Site": "cross-site"}, {}):
        answer = post_with_the_cookie(page, web, headers, {"id": bead})
        assert answer.status_code == 403 and "cross-site" in answer.text, (headers, answer.status_code, answer.text)
    assert web.cli("read", f"agent/beads/{bead}/status") == "pending_approval\n"


def post_with_the_cookie(page, web: Web, headers: dict, body: dict) -> httpx.Response:
    """A POST from outside the browser that carries the browser's cookie (read through the driver)."""
    cookies = {c["name"]: c["value"] for c in page.get_cookies()}
    return httpx.post(f"{web.base}/approve", json=body, headers=headers, cookies=cookies, timeout=WAIT_HTTP)


class evil_site:  # noqa: N801 - used as a context manager, like open()
    """A page served from another port of 127.0.0.1, as another local program (or a DNS rebind) might."""

    def __init__(self, html: str):
        body = f"<!doctype html><html><body>{html}</body></html>".encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)

    def __enter__(self) -> str:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.server.server_address[1]}/"

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_each_view_shows_the_tree(web: Web, browser, tmp_path: Path) -> None:
    web.cli("write", "agent/ctl", "new sim /tmp name=bot1")
    web.cli("write", "agent/ctl", "new sim /tmp name=rev")
    convoy = web.cli("rdwr", "agent/convoys/ctl", input='new "OAuth" "Log in with OAuth"\n').split()[0]
    research, impl, docs = (
        web.cli("rdwr", "agent/beads/ctl", input=f'new "{title}" {role} "{what}" {deps} convoy={convoy}\n').split()[0]
        for title, role, what, deps in (("Research auth", "researcher", "Read the code", ""),
                                        ("Implement OAuth", "developer", "Add it", "research-auth-001"),
                                        ("Document OAuth", "writer", "Say how", "impl-oauth-002")))
    for verb in ("claim bot1", "complete notes in docs/auth.md"):
        web.cli("write", f"agent/beads/{research}/ctl", verb)
    web.cli("write", f"agent/beads/{impl}/ctl", "claim bot1")
    rev = {"ANVILFS_SESSION": "rev"}
    web.cli("mail", "human", "QUERY_REQUEST", "which provider first?", input="GitHub or Google?\n", env=rev)
    web.cli("mail", "human", "APPROVAL_REQUEST", "merge the OAuth branch", input="All tests pass.\n", env=rev)
    page = logged_in(browser(), web)
    expected = {
        "sessions": ("#sessions", ["bot1", "rev", "simulated"]),
        "beads": ("#waves", ["wave 1", impl, "claimed by bot1", "wave 2", docs, f"waits on {impl}", "done", research]),
        "convoys": ("#convoys", [convoy, "OAuth", "1/3 completed", "in_progress"]),
        "mail": ("main", ["merge the OAuth branch", "Approve", "which provider first?", "QUERY_REQUEST",
                          "GitHub or Google?"]),
    }
    shots = tmp_path / "screenshots"
    shots.mkdir()
    for view, (selector, words) in expected.items():
        act(page, f'nav button[data-view="{view}"]', lambda button: button.click(), f"the {view} tab")
        wait_for(page, lambda d: all(w in text(d, selector) for w in words), f"the {view} view to show {words}")
        page.save_screenshot(str(shots / f"{view}.png"))
    print(f"screenshots of the views: {shots}")
    assert sorted(p.name for p in shots.iterdir()) == sorted(f"{v}.png" for v in VIEWS)

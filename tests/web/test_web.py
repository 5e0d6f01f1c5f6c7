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


def test_what_each_session_bead_and_convoy_spent_shows_live(web: Web, browser) -> None:
    convoy = web.cli("rdwr", "agent/convoys/ctl", input='new "OAuth" "Log in with OAuth"\n').split()[0]
    bead = web.cli("rdwr", "agent/beads/ctl", input=f'new "Implement OAuth" developer "Add it" convoy={convoy}\n').split()[0]
    for name in ("dev", "counter"):
        web.cli("write", "agent/ctl", f"new sim /tmp name={name}")
    web.cli("write", f"agent/beads/{bead}/ctl", "claim dev")
    page = logged_in(browser(), web)
    row = '#sessions tr[data-name="dev"]'
    wait_for(page, lambda d: text(d, f"{row} td.spent") == "-", "dev's row with nothing spent")
    web.cli("write", "agent/dev/in", input="work sim:usage=100,20,0.75\n")
    web.cli("write", "agent/counter/in", input="count sim:usage=1200,34\n")  # no cost reported: its tokens
    for name in ("dev", "counter"):
        assert web.cli("read", f"agent/{name}/wait").startswith("await")
    wait_for(page, lambda d: text(d, f"{row} td.spent") == "$0.75", "dev's spending, without a reload")
    wait_for(page, lambda d: text(d, '#sessions tr[data-name="counter"] td.spent') == "1.2k tok", "counter's tokens")
    assert text(page, "#total") == "total spent $0.75+ in 2 turns, 1.4k tok"
    act(page, 'nav button[data-view="beads"]', lambda button: button.click(), "the beads tab")
    wait_for(page, lambda d: "spent $0.75" in text(d, f'.bead[data-id="{bead}"]'), "the bead's spending")
    act(page, 'nav button[data-view="convoys"]', lambda button: button.click(), "the convoys tab")
    wait_for(page, lambda d: text(d, f'#convoys tr[data-id="{convoy}"] td.spent') == "$0.75", "the convoy's spending")


def test_a_session_s_view_shows_its_stream_live_its_out_and_why_it_is_in_error(web: Web, browser, tmp_path: Path) -> None:
    web.cli("write", "agent/ctl", "new sim /tmp name=dev budget=0.5")
    web.cli("write", "agent/ctl", "new sim /tmp name=other")
    page = logged_in(browser(), web, "session=dev")
    wait_for(page, lambda d: text(d, "#session-status") == "idle", "dev's view, idle")
    web.cli("write", "agent/other/in", input="not looked at\n")  # another session's turn shows nowhere here
    web.cli("write", "agent/dev/in", input="sim:hang\n")
    wait_for(page, lambda d: "dev, turn 1: hanging until interrupted" in text(d, "#session-stream"),
             "the running turn's stream, live")
    wait_for(page, lambda d: text(d, "#session-status") == "running", "dev's status: running (from its status file)")
    web.cli("write", "agent/dev/ctl", "interrupt")
    # what an agent wrote is shown as text: a tag in it makes no element
    web.cli("write", "agent/dev/in", input="<img src=x onerror=alert(1)> sim:usage=10,10,0.75\n")
    assert web.cli("read", "agent/dev/wait").startswith("await")
    wait_for(page, lambda d: "<img src=x onerror=alert(1)>" in text(d, "#session-out"), "the turn's answer, from out")
    wait_for(page, lambda d: "turn 2: this answer comes" in text(d, "#session-stream"), "the second turn's stream")
    assert "hanging" not in text(page, "#session-stream"), "a new turn's stream replaces the last one's"
    assert page.execute_script("return document.querySelectorAll('#session img').length") == 0
    assert "not looked at" not in text(page, "#session")
    web.cli("write", "agent/dev/in", input="next one\n")  # the budget is spent: the turn does not start
    wait_for(page, lambda d: "budget spent: session dev spent $0.7500 of its $0.5" in text(d, "#session-why"),
             "why dev is in error")
    assert text(page, "#session-status") == "error"  # one event: the status and why
    wait_for(page, lambda d: "budget spent" in text(d, "#session-errors"), "dev's lines of errors")
    page.save_screenshot(str(shot := tmp_path / "session.png"))
    print(f"a screenshot of dev's view: {shot}")
    act(page, '#sessions tr[data-name="other"] a', lambda link: link.click(), "other's link")
    wait_for(page, lambda d: "not looked at" in text(d, "#session-out"), "other's view, from its name in the table")
    assert page.execute_script("return location.hash") == "#session=other"
    assert not page.find_element("css selector", "#session-why").is_displayed()


def test_a_session_that_is_not_there_says_so_and_a_bad_name_is_refused(web: Web, browser) -> None:
    page = logged_in(browser(), web, "session=nobody")
    wait_for(page, lambda d: "nobody" in text(d, "#session-why"), "the page to say there is no such session")
    cookies = {c["name"]: c["value"] for c in page.get_cookies()}
    answer = httpx.get(f"{web.base}/session", params={"name": "../usage"}, cookies=cookies, timeout=WAIT_HTTP)
    assert answer.status_code == 400 and "is no session's name" in answer.text, (answer.status_code, answer.text)


def open_fids(trace: str, wnames: str) -> set[tuple[str, str]]:
    """(connection, fid) of each fid the trace shows walked to `wnames` and not clunked since."""
    walked: set[tuple[str, str]] = set()
    for line in trace.splitlines():
        words = line.split()
        if len(words) > 8 and words[2] == "Twalk" and line.endswith(f"wnames [{wnames}]"):  # c3 -> Twalk tag 7 fid 1 newfid 9 ...
            walked.add((words[0], words[8]))
        elif len(words) > 6 and words[2] == "Tclunk":  # c3 -> Tclunk tag 8 fid 9
            walked.discard((words[0], words[6]))
    return walked


def test_the_web_reads_a_session_s_stream_only_while_a_page_looks_at_it(web: Web, browser) -> None:
    for name in ("dev", "other"):
        web.cli("write", "agent/ctl", f"new sim /tmp name={name}")
    page = logged_in(browser(), web, "session=dev")
    wait_for(page, lambda d: open_fids(web.srv.trace(), "dev stream"), "the web to follow dev's stream")
    act(page, '#sessions tr[data-name="other"] a', lambda link: link.click(), "other's link")
    wait_for(page, lambda d: not open_fids(web.srv.trace(), "dev stream"), "dev's stream to be let go")
    wait_for(page, lambda d: open_fids(web.srv.trace(), "other stream"), "the web to follow other's stream")
    act(page, 'nav button[data-view="beads"]', lambda button: button.click(), "the beads tab")
    wait_for(page, lambda d: not open_fids(web.srv.trace(), "other stream"), "other's stream to be let go")

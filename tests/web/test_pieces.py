"""The pieces of `anvilfs web` that need no browser: who the guard lets in, how files become the view,
and how the process ends (no server; the server going away)."""

from __future__ import annotations

import subprocess
import sys

import httpx
import pytest
from web_drive import START, web_process

from anvilfs.client import spent
from anvilfs.web import guard, kept, view, watch
from harness.server import REPO_ROOT, AnvilServer

# ------------------------------------------------------------ the guard


@pytest.fixture
def keys() -> guard.Keys:
    keys = guard.Keys()
    keys.port = 8641
    return keys


def headers(keys: guard.Keys, **more: str) -> dict[str, str]:
    return {"host": "127.0.0.1:8641", "cookie": f"{guard.COOKIE}={keys.session}"} | more


@pytest.mark.parametrize(("method", "path", "change", "status", "words"), [
    ("GET", "/", {"host": "evil.example:8641"}, 403, "Host evil.example:8641"),
    ("GET", "/", {"host": "127.0.0.1:8642"}, 403, "is not this server's"),
    ("GET", "/", {"cookie": ""}, 401, "not logged in"),
    ("GET", "/events", {"cookie": f"{guard.COOKIE}=guessed"}, 401, "not logged in"),
    ("POST", "/approve", {}, 403, "Origin missing"),
    ("POST", "/approve", {"origin": "http://127.0.0.1:9999"}, 403, "cross-site"),
    ("POST", "/approve", {"origin": "null"}, 403, "cross-site"),
    ("POST", "/approve", {"origin": "http://127.0.0.1:8641", "sec-fetch-site": "same-site"}, 403, "Sec-Fetch-Site same-site"),
    ("POST", "/login", {"origin": "http://127.0.0.1:9999", "cookie": ""}, 403, "cross-site"),
])
def test_the_guard_refuses(keys, method, path, change, status, words) -> None:
    refused = guard.refusal(method, path, headers(keys) | change, keys)
    assert refused is not None and refused[0] == status and words in refused[1], refused


@pytest.mark.parametrize(("method", "path", "change"), [
    ("GET", "/", {}),
    ("GET", "/", {"host": "localhost:8641"}),
    ("GET", "/login", {"cookie": ""}),  # the login itself needs no cookie (its secret is checked there)
    ("POST", "/approve", {"origin": "http://127.0.0.1:8641", "sec-fetch-site": "same-origin"}),
    ("POST", "/approve", {"origin": "http://127.0.0.1:8641"}),  # a browser that sends no Sec-Fetch-Site
])
def test_the_guard_lets_the_page_in(keys, method, path, change) -> None:
    assert guard.refusal(method, path, headers(keys) | change, keys) is None


def test_the_login_secret_works_once(keys) -> None:
    once = keys.login_url().partition("once=")[2]
    assert not keys.spend("wrong") and not keys.spend("")
    assert keys.spend(once)
    assert not keys.spend(once)


# ------------------------------------------------------------ files -> view

GRAPH = """wave 1
  research-auth-001 in_progress  Research auth system
wave 2
  impl-oauth-002 pending  Implement OAuth  <- research-auth-001
done
  setup-repo-000 completed  Set up the repository
"""
BEADS = """impl-oauth-002 pending developer - Implement OAuth
research-auth-001 in_progress researcher bot1 Research auth system
setup-repo-000 completed - - Set up the repository
odd-thing-003 broken - - not TOML: line 3
"""


def test_beads_come_in_the_graphs_waves_with_the_lists_claims() -> None:
    groups = view.waves(GRAPH, BEADS)
    assert [(g["name"], [b["id"] for b in g["beads"]]) for g in groups] == [
        ("wave 1", ["research-auth-001"]), ("wave 2", ["impl-oauth-002"]), ("done", ["setup-repo-000"]),
        ("other", ["odd-thing-003"])]
    research, impl = groups[0]["beads"][0], groups[1]["beads"][0]
    assert (research["assigned_to"], research["role"], research["title"]) == ("bot1", "researcher", "Research auth system")
    assert impl["waits_on"] == ["research-auth-001"] and research["waits_on"] == []
    assert "broken" in groups[3]["why"]


def test_sessions_convoys_and_approvals_from_their_lines() -> None:
    rows = view.sessions("bot1 sim await - /tmp/my dir simulated\ndev claude idle developer /src\ngone sim idle - /\n",
                         {"bot1": 2, "dev": 0}, {"bot1": "09:00:01 await"}, {"sim": True, "claude": False})
    assert [(r["name"], r["cwd"], r["simulated"], r["queue"], r["last"]) for r in rows] == [
        ("bot1", "/tmp/my dir", True, 2, "09:00:01 await"), ("dev", "/src", False, 0, "-")]
    assert view.convoys("oauth-001 in_progress 1/3 lead OAuth for all\n") == [
        {"id": "oauth-001", "status": "in_progress", "done": 1, "total": 3, "coordinator": "lead", "title": "OAuth for all",
         "spent": "-"}]
    assert view.approvals("1796 dev - merge it now\n1797 dev impl-oauth-002 approve bead\n") == [
        {"id": "1796", "from": "dev", "bead": "", "subject": "merge it now"},
        {"id": "1797", "from": "dev", "bead": "impl-oauth-002", "subject": "approve bead"}]


def test_each_session_bead_and_convoy_has_its_usage_line_as_a_short_cell() -> None:
    usage = "bot1 turns=2 input_tokens=10 output_tokens=2 cost_usd=0.500000 unpriced_turns=0\n"
    [row] = view.sessions("bot1 sim await - /tmp\n", {"bot1": 0}, {}, {"sim": True}, spent.lines(usage))
    assert row["spent"] == "$0.50"
    beads = "research-auth-001 turns=1 input_tokens=1500 output_tokens=0 cost_usd=unknown unpriced_turns=1\n"
    spent_by_id = {b["id"]: b["spent"] for g in view.waves(GRAPH, BEADS, spent.lines(beads)) for b in g["beads"]}
    assert spent_by_id == {"research-auth-001": "1.5k tok", "impl-oauth-002": "-", "setup-repo-000": "-",
                           "odd-thing-003": "-"}
    [convoy] = view.convoys("oauth-001 in_progress 1/3 lead OAuth\n", spent.lines("oauth-001 turns=1 cost_usd=2.5\n"))
    assert convoy["spent"] == "$2.50"


def test_a_session_s_name_is_checked_before_any_read() -> None:
    assert watch.bad_name("dev-1.x") is None
    for name in ("", "../usage", "beads/x", "-x", "x" * 65, "a b"):
        assert "is no session's name" in watch.bad_name(name), name


def test_a_title_that_looks_like_an_arrow_waits_on_nothing() -> None:
    graph = ("wave 1\n  fake-001 pending  Fake  <- other-002\n  other-002 pending  Other\n"
             "wave 2\n  real-003 pending  Real  <- x  <- fake-001\n")
    listing = ("fake-001 pending dev - Fake  <- other-002\nother-002 pending dev - Other\n"
               "real-003 pending dev - Real  <- x\n")
    groups = view.waves(graph, listing)
    waits = {b["id"]: (b["title"], b["waits_on"]) for g in groups for b in g["beads"]}
    assert waits == {"fake-001": ("Fake  <- other-002", []), "other-002": ("Other", []),
                     "real-003": ("Real  <- x", ["fake-001"])}


def test_a_cwd_ending_in_simulated_is_a_cwd_when_the_backend_is_not_simulated() -> None:
    listing = "real claude idle - /home/me/not simulated\nsim1 sim idle - /home/me/not simulated simulated\n"
    rows = view.sessions(listing, {"real": 0, "sim1": 0}, {}, {"claude": False, "sim": True})
    assert [(r["name"], r["cwd"], r["simulated"]) for r in rows] == [
        ("real", "/home/me/not simulated", False), ("sim1", "/home/me/not simulated", True)]


def test_queues_are_read_again_only_for_sessions_an_event_named_or_whose_line_changed() -> None:
    queues = kept.Queues()
    listing = "a sim idle - /\nb sim idle - /\n"
    assert queues.stale(listing) == ["a", "b"]
    assert queues.update(listing, {"a": "1 human 5 hello\n", "b": ""}) == {"a": 1, "b": 0}
    assert queues.stale(listing) == []
    queues.named("b")
    queues.named("bead:")  # an event about a bead names no session
    assert queues.stale(listing) == ["b"]
    assert queues.update(listing, {"b": None}) == {"a": 1}  # removed meanwhile
    changed = "a sim busy - /\n"
    assert queues.stale(changed) == ["a"]
    assert queues.update(changed, {"a": ""}) == {"a": 0}


# ------------------------------------------------------------ the process


def test_without_a_server_it_says_what_to_start(tmp_path) -> None:
    r = subprocess.run([sys.executable, "-m", "anvilfs", "web"], env={"NAMESPACE": str(tmp_path), "PATH": "/usr/bin"},
                       cwd=REPO_ROOT, capture_output=True, text=True, timeout=START)
    assert (r.returncode, r.stdout) == (1, ""), r
    assert "cannot connect" in r.stderr and "anvilfs serve" in r.stderr, r.stderr


def test_it_ends_when_the_server_goes_away(srv: AnvilServer, tmp_path) -> None:
    with web_process(srv, tmp_path / "web.log") as web:
        srv.stop()
        assert web.proc.wait(timeout=START) == 1, "anvilfs web must end (status 1) when its server stops"
        assert "the server closed the connection" in web.log.read_text(), web.log.read_text()


def test_a_post_of_json_nested_too_deep_is_refused_as_the_pages_mistake(web) -> None:
    # json.loads raised RecursionError on it: 500 "Internal Server Error"
    login = httpx.get(web.login, follow_redirects=False, timeout=START)
    assert login.status_code == 303, login.text
    for body, words in ((b'{"id": ' + b"[" * 5000 + b"]" * 5000 + b"}", "far deeper than 32 levels"),
                        (b'{"id": "x", "reason": ' + b"{\"a\": " * 40 + b"1" + b"}" * 41, "41 levels deep")):
        answer = httpx.post(f"{web.base}/approve", content=body, cookies=login.cookies, timeout=START,
                            headers={"Origin": web.base, "Content-Type": "application/json"})
        assert answer.status_code == 400 and words in answer.json()["error"], (answer.status_code, answer.text)

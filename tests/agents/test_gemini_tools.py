"""Gemini CLI 0.61 using anvilfs's tools itself: the stub model calls them as the CLI offered them.

The built-in ``gemini`` backend gives each session a Gemini home of its own holding the user's settings plus
the MCP server ``anvilfs`` (anvilfs/backends/tools_gemini.py); gemini names its tools ``mcp_anvilfs_claim``
and so on. The stub answers a prompt with the calls of a plan (one per request, each from the results so
far), then with a text; what the CLI sent back after each call (its functionResponse) is the evidence of
what the tool did and what the model was told.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from drive import TURN_TIMEOUT, agent_server, cli, new_session, turn, wait_until
from gemini_env import GeminiHome, gemini_config, gemini_env

from stubs import Reply, Request, StubModels, Text, ToolCall, directives

PREFIX = "mcp_anvilfs_"  # gemini's name of an MCP tool: mcp_SERVER_TOOL
Step = Callable[[list[dict]], Reply]  # the reply to make, from the tool results of this turn so far


@pytest.fixture
def env(stub: StubModels, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return gemini_env(stub, tmp_path_factory.mktemp("gemini-tmp"))


def call(tool: str, **arguments) -> ToolCall:
    return ToolCall(PREFIX + tool, arguments)


def results(request: Request) -> list[dict]:
    """The functionResponse parts the CLI sent since the prompt of this turn, oldest first."""
    found = []
    for content in request.body.get("contents", []):
        parts = content.get("parts", [])
        if content.get("role") == "user" and any("text" in part for part in parts):
            found = []  # a prompt (or the session's context): the turn begins again
        found += [part["functionResponse"] for part in parts if "functionResponse" in part]
    return found


def said(result: dict) -> str:
    """The tool's own text in what the model was told.

    0.61 wraps an MCP tool's output in <untrusted_context> tags; it tells an error as "MCP tool 'claim'
    reported tool error for function call: {call} with response: [parts]", the tool's text in the parts.
    """
    response = result.get("response", {})
    if "output" in response:
        return re.sub(r"\A<untrusted_context>\n|\n</untrusted_context>\Z", "", response["output"])
    error = str(response.get("error", ""))
    if " with response: " not in error:
        return error
    parts = json.loads(error.split(" with response: ", 1)[1])
    return "\n".join(item.get("text", "") for part in parts
                     for item in part.get("functionResponse", {}).get("response", {}).get("content", []))


def refused(result: dict) -> bool:
    """Whether the model was told the call failed."""
    return "error" in result.get("response", {})


def planned(plans: dict[str, list[Step]]) -> Callable[[Request], Reply]:
    """A script: the prompt containing KEY gets the calls of plans[KEY], one per request, then a text."""
    def script(request: Request) -> Reply:
        if not request.stream:
            return directives(request)  # the CLI's side calls (JSON answers)
        for key, steps in plans.items():
            if key in request.prompt:
                done = results(request)
                if len(done) < len(steps):
                    return steps[len(done)](done)
                return Text("[stub gemini] done: " + (said(done[-1])[:300] if done else "nothing called"))
        return directives(request)
    return script


def roles(home: GeminiHome, *names: str) -> Callable[[Path], None]:
    """``home=``: the Gemini home, and roles/NAME.md beside the server's config.toml (gemini_config())."""
    def make(path: Path) -> None:
        home(path)
        (path.parent / "roles").mkdir()
        for name in names:
            (path.parent / "roles" / f"{name}.md").write_text(f"You are a {name}.\n")
    return make


def new_bead(srv, title: str, role: str) -> str:
    cli(srv, "write", "agent/beads/ctl", f'new "{title}" {role} "{title}, as the tests ask"')
    (line,) = [line for line in cli(srv, "read", "agent/beads/list").splitlines() if line.endswith(title)]
    return line.split()[0]


def history(srv) -> list[str]:
    log = subprocess.run(["git", "-C", str(srv.state), "log", "--format=%s"], capture_output=True, text=True)
    return log.stdout.splitlines()


def first_id(text: str) -> str:
    """The first word of the line after a listing's header (ready's, inbox's)."""
    return text.splitlines()[1].split()[0]


def wired(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings: str,
          conductor: bool = False) -> tuple[Path, Path, dict]:
    """tools_gemini.wire for a session bot1 of a user whose ~/.gemini/settings.json is SETTINGS: (user's .gemini,
    the session's Gemini home, the environment added)."""
    from anvilfs.backends.agent_tools import ToolSetup
    from anvilfs.backends.tools_gemini import wire
    from anvilfs.brief import brief, tool_names
    from anvilfs.sessions import SessionInfo

    user = tmp_path / "home" / ".gemini"
    (user / "extensions").mkdir(parents=True)
    (user / "settings.json").write_text(settings)
    (user / "oauth_creds.json").write_text("{}")
    (user / "projects.json").write_text('{"projects": {}}')
    (user / "GEMINI.md").write_text("Always answer in French.\n")
    (tmp_path / "work").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("GEMINI_CLI_HOME", raising=False)
    monkeypatch.delenv("GEMINI_CLI_TRUSTED_FOLDERS_PATH", raising=False)
    session = SessionInfo("bot1", str(tmp_path / "work"), env={"ANVILFS_SESSION": "bot1", "NAMESPACE": "/ns"},
                          home=str(tmp_path / "state" / "agents" / "bot1"))
    wiring = wire(ToolSetup(session, "/opt/anvilfs", brief("bot1", conductor=conductor), tool_names(conductor)))
    assert wiring.args == ()
    return user, Path(wiring.env["GEMINI_CLI_HOME"]), dict(wiring.env)


def test_the_session_gets_the_users_settings_with_the_server_and_nothing_of_the_users_changes(tmp_path, monkeypatch):
    settings = """{
      // the user's own, with a comment as 0.61 allows
      "model": {"name": "gemini-2.5-pro"}, "general": {"url": "http://x//y"},
      "tools": {"allowed": ["glob"]}, "mcp": {"allowed": ["theirs"]},
      "mcpServers": {"theirs": {"command": "their-server"}}
    }"""
    user, home, env = wired(tmp_path, monkeypatch, settings)
    assert (user / "settings.json").read_text() == settings
    assert sorted(p.name for p in user.iterdir()) == ["GEMINI.md", "extensions", "oauth_creds.json", "projects.json",
                                                      "settings.json"]
    assert list((tmp_path / "work").iterdir()) == []  # nothing in the session's cwd
    assert env == {"GEMINI_CLI_HOME": str(home), "GEMINI_CLI_TRUSTED_FOLDERS_PATH": str(user / "trustedFolders.json")}
    assert home == tmp_path / "state" / "agents" / "bot1" / "gemini"
    mine = json.loads((home / ".gemini" / "settings.json").read_text())
    assert mine["model"] == {"name": "gemini-2.5-pro"} and mine["general"] == {"url": "http://x//y"}
    assert mine["mcpServers"] == {"theirs": {"command": "their-server"}, "anvilfs": {
        "command": "/opt/anvilfs", "args": ["mcp"], "env": {"ANVILFS_SESSION": "bot1", "NAMESPACE": "/ns"},
        "description": "anvilfs: beads, convoys and mail, as this session"}}
    from anvilfs.brief import TOOL_NAMES
    assert mine["tools"]["allowed"] == ["glob"] + [PREFIX + name for name in TOOL_NAMES]
    assert mine["mcp"] == {"allowed": ["theirs", "anvilfs"]}
    own = home / ".gemini"
    assert (own / "oauth_creds.json").readlink() == user / "oauth_creds.json"
    assert (own / "extensions").readlink() == user / "extensions"
    assert not (own / "projects.json").exists()  # the session's own conversations: gemini makes it
    memory = (own / "GEMINI.md").read_text()
    assert memory.startswith("Always answer in French.\n\nYou are the anvilfs session bot1.")
    assert "mcp_anvilfs_*" in memory and "mcp__anvilfs__" not in memory


def test_a_conductor_session_is_allowed_its_three_tools_more(tmp_path, monkeypatch):
    _, home, _ = wired(tmp_path, monkeypatch, "", conductor=True)
    allowed = json.loads((home / ".gemini" / "settings.json").read_text())["tools"]["allowed"]
    assert allowed[-3:] == [PREFIX + "prompt", PREFIX + "new_session", PREFIX + "wait"] and len(allowed) == 19


def test_settings_that_are_not_json_are_left_for_gemini_to_refuse(tmp_path, monkeypatch):
    user, home, _ = wired(tmp_path, monkeypatch, '{"model": ')
    assert (home / ".gemini" / "settings.json").readlink() == user / "settings.json"


def test_a_bot_claims_its_own_bead_and_a_second_bot_is_told_who_won(stub, env, tmp_path):
    stub.script = planned({
        "find work": [lambda done: call("ready"), lambda done: call("claim", bead=first_id(said(done[0])))],
        "take BEAD": [lambda done: call("claim", bead=bead)],
        "finish it": [lambda done: call("result", bead=bead, text="the parser is fixed"),
                      lambda done: call("complete", bead=bead)],
    })
    home = GeminiHome(tmp_path)
    with agent_server(stub, "gemini", env=env, home=roles(home, "worker"), config=gemini_config()) as srv:
        bead = new_bead(srv, "Fix the parser", "worker")
        new_session(srv, "gemini", tmp_path, "bot1", "role=worker")
        new_session(srv, "gemini", tmp_path, "bot2", "role=worker")
        assert f"claimed {bead} for bot1" in turn(srv, "bot1", "find work")
        assert cli(srv, "read", f"agent/beads/{bead}/assigned_to").strip() == "bot1"

        turn(srv, "bot2", "take BEAD")
        (claim,) = results(last_call(stub, "take BEAD"))
        assert claim["name"] == PREFIX + "claim"
        assert refused(claim) and said(claim) == f"busy: claim: bead {bead} is already claimed by bot1 (in_progress)"
        assert cli(srv, "read", f"agent/beads/{bead}/assigned_to").strip() == "bot1"

        assert f"{bead}: completed" in turn(srv, "bot1", "finish it")
        assert cli(srv, "read", f"agent/beads/{bead}/result").strip() == "the parser is fixed"
        ready, claim = results(last_call(stub, "find work", before="take BEAD"))
        assert said(ready).splitlines() == ["id status role assigned_to title", f"{bead} pending worker - Fix the parser"]
        wait_until(lambda: f"Claimed: {bead} by bot1" in history(srv), "the claim in the beads' history")


def last_call(stub: StubModels, prompt: str, before: str = "") -> Request:
    """The last conversation request of the turn whose prompt contains PROMPT (and not BEFORE)."""
    calls = [r for r in stub.requests("gemini") if r.stream and prompt in r.prompt
             and not (before and before in r.prompt)]
    assert calls, f"no request of the turn {prompt!r} reached the stub"
    return calls[-1]


def test_a_bot_asks_for_approval_and_reads_the_answer_it_is_prompted_about(stub, env, tmp_path):
    stub.script = planned({
        "ask human": [lambda done: call("request_approval", subject="deploy the parser", body="all tests pass")],
        "APPROVAL_RESPONSE": [lambda done: call("inbox"), lambda done: call("read_message", id=first_id(said(done[0]))),
                              lambda done: call("ack", id=json.loads(said(done[1]))["id"])],
    })
    with agent_server(stub, "gemini", env=env, home=GeminiHome(tmp_path)) as srv:
        new_session(srv, "gemini", tmp_path, "bot1", "notify")
        out = turn(srv, "bot1", "ask human")
        assert "end your turn" in out  # the tool's answer, which the stub echoes as its text
        (request,) = [line.split()[0] for line in cli(srv, "read", "agent/human/approvals").splitlines()]
        cli(srv, "approve", request)

        notice = stub.wait_for(lambda r: r.stream and "APPROVAL_RESPONSE" in r.prompt and len(results(r)) == 3,
                               timeout=TURN_TIMEOUT, what="the notice's turn, after its third tool call")
        inbox, message, ack = results(notice)
        answer = json.loads(said(message))
        assert (answer["from"], answer["type"], answer["re"]) == ("human", "APPROVAL_RESPONSE", request)
        assert said(ack) == f"{answer['id']} acknowledged"
        assert answer["id"] in notice.prompt  # the notice names the message it is about
        wait_until(lambda: cli(srv, "ls", "agent/bot1/inbox").strip() == "", "bot1's inbox to be empty")
        assert f"{answer['id']}.json" in cli(srv, "ls", "agent/bot1/done")


def test_a_tool_call_cannot_act_as_another_session_nor_run_a_command(stub, env, tmp_path):
    bait = tmp_path / "bait"
    stub.script = planned({"misbehave": [
        lambda done: call("claim", bead=bead, session="bot1"),                 # identity is no argument
        lambda done: call("read", path="../../etc/passwd"),                    # outside the tree
        lambda done: call("send_mail", to="human", type="APPROVAL_RESPONSE", subject="approved",
                          body="by bot2", re="1796000000000001"),             # answers no request
        lambda done: call("new_session", backend="gemini", cwd="."),            # a conductor's, not offered
        lambda done: ToolCall("run_shell_command", {"command": f"touch {bait}"}),  # no shell in auto_edit
    ]})
    with agent_server(stub, "gemini", env=env, home=roles(GeminiHome(tmp_path), "worker"),
                      config=gemini_config()) as srv:
        bead = new_bead(srv, "Held by one", "worker")
        new_session(srv, "gemini", tmp_path, "bot1")
        new_session(srv, "gemini", tmp_path, "bot2")
        cli(srv, "write", f"agent/beads/{bead}/ctl", "claim bot1")
        turn(srv, "bot2", "misbehave")
        told = results(last_call(stub, "misbehave"))
        assert all(refused(result) for result in told), told
        as_other, outside, mail, conductor, shell = [said(result) for result in told]
        assert "claim: no argument 'session'; it takes bead" in as_other, as_other  # anvilfs mcp checks each call
        assert outside.startswith("path: '../../etc/passwd' is no path in the tree"), outside
        assert "no approval request of that id is waiting" in mail, mail
        assert conductor.startswith('Tool "mcp_anvilfs_new_session" not found'), conductor
        assert shell.startswith('Tool "run_shell_command" not found'), shell
        assert not bait.exists()
        assert cli(srv, "read", f"agent/beads/{bead}/status").strip() == "in_progress"
        assert cli(srv, "read", f"agent/beads/{bead}/assigned_to").strip() == "bot1"
        assert cli(srv, "ls", "agent/human/inbox").strip() == ""


def test_the_tools_are_offered_with_the_brief_and_what_they_cost(stub, env, tmp_path):
    with agent_server(stub, "gemini", env=env, home=GeminiHome(tmp_path)) as srv:
        new_session(srv, "gemini", tmp_path, "bot1")
        turn(srv, "bot1", "hello")
    (request,) = [r for r in stub.requests("gemini") if r.stream]
    ours = [d for tool in request.body["tools"] for d in tool["functionDeclarations"] if d["name"].startswith(PREFIX)]
    from anvilfs.brief import TOOL_NAMES
    assert [d["name"] for d in ours] == [PREFIX + name for name in TOOL_NAMES]
    sent = len(json.dumps(ours, separators=(",", ":")))
    # gemini adds a parameter of its own to every tool it offers, built-in ones too (no setting removes it)
    for declaration in ours:
        del declaration["parametersJsonSchema"]["properties"]["wait_for_previous"]
    own = len(json.dumps(ours, separators=(",", ":")))
    print(f"anvilfs's tool declarations as gemini 0.61 sends them: {sent} bytes, {own} without gemini's "
          f"wait_for_previous")
    assert sent < 8192, f"anvilfs's {len(ours)} tool declarations take {sent} bytes as sent ({own} its own), past 8 KB"
    system = json.dumps(request.body["systemInstruction"])
    assert "You are the anvilfs session bot1" in system and "mcp_anvilfs_*" in system


def test_a_bot_cannot_complete_a_bead_another_bot_holds(stub, env, tmp_path):
    stub.script = planned({"complete theirs": [lambda done: call("complete", bead=bead)]})
    with agent_server(stub, "gemini", env=env, home=GeminiHome(tmp_path)) as srv:
        bead = new_bead(srv, "Held by one", "worker")
        new_session(srv, "gemini", tmp_path, "bot2")
        cli(srv, "write", "agent/ctl", f"new sim {tmp_path} name=bot1")  # the holder: any session
        cli(srv, "write", f"agent/beads/{bead}/ctl", "claim bot1")
        turn(srv, "bot2", "complete theirs")
        (told,) = results(last_call(stub, "complete theirs"))
        assert refused(told) and "bot1" in said(told), said(told)
        assert cli(srv, "read", f"agent/beads/{bead}/status").strip() == "in_progress"


def test_mcp_false_runs_gemini_as_before_without_the_tools(stub, env, tmp_path):
    home = GeminiHome(tmp_path)
    with agent_server(stub, "gemini", env=env, home=home, config=gemini_config(mcp=False)) as srv:
        new_session(srv, "gemini", tmp_path, "bot1")
        assert "turn 1: you said hello" in turn(srv, "bot1", "hello")
        assert not (srv.state / "agents" / "bot1" / "gemini").exists()
        assert home.chats(tmp_path).parent.parent == home.path / ".gemini" / "tmp"  # the user's own
    (request,) = [r for r in stub.requests("gemini") if r.stream]
    assert not [name for name in request.tools if name.startswith(PREFIX)]
    assert "anvilfs session" not in json.dumps(request.body["systemInstruction"])

"""The real Codex CLI (pinned) acting on the tree with anvilfs's tools, through the built-in `codex` backend.

The stub answers with calls of the tools codex offered, both ways codex
0.171 offers MCP tools: to a model without tool search (gpt-4.1) as one
namespace tool `mcp__anvilfs`, to gpt-5.5 behind its client-executed
`tool_search` (the stub searches, codex runs the search, the stub calls
what it found). What a test asserts on is what the tree did and what the
stub received as each tool's output: what the model would have read.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest
from codex_env import backend_config, codex_env, codex_home
from drive import agent_server, cli, new_session, turn, wait_until
from harness.git_history import messages_in_history

from anvilfs.backends.agent_tools import anvilfs_command
from anvilfs.backends.tools_codex import toml_value
from stubs import Reply, Request, StubModels, Text, ToolCall, directives

DIALECT = "openai-responses"
MODELS = {"direct": "gpt-4.1", "search": "gpt-5.5"}  # gpt-4.1: no tool search in codex 0.171; gpt-5.5: tool_search
TOOL_LIST_MOST = 8192  # bytes: issue 30's bound for the whole tool list as the CLI sends it

Step = Callable[[Request], Reply]


def tool(name: str, /, **arguments) -> ToolCall:
    return ToolCall(f"mcp__anvilfs__{name}", arguments)


def tools_server(stub: StubModels, model: str, roles: tuple[str, ...] = ("researcher", "developer")):
    """A server whose codex talks to the stub as MODEL, with ROLE.md files in its config directory's roles/."""
    def home(path: Path) -> None:
        codex_home(stub, model)(path)
        (path.parent / "roles").mkdir()
        for role in roles:
            (path.parent / "roles" / f"{role}.md").write_text(f"You are the team's {role}.\n")
    return agent_server(stub, "codex", env=codex_env(), home=home, config=backend_config())


def since_prompt(request: Request) -> list[tuple[str, str]]:
    """The conversation after the last user text: this turn's tool calls and their outputs."""
    last = max(i for i, (role, _) in enumerate(request.messages) if role == "user")
    return request.messages[last + 1:]


def last_output(request: Request) -> str:
    return request.messages[-1][1] if request.after_tool else ""


def plans(turns: dict[str, list[Step]]) -> Callable[[Request], Reply]:
    """A script: a prompt containing a key gets its steps, one per request (step N once N tools have answered
    in this turn), then a text with the last tool's output; any other prompt gets directives."""
    def script(request: Request) -> Reply:
        for key, steps in turns.items():
            if key in request.prompt:
                done = sum(role == "tool" for role, _ in since_prompt(request))
                if done < len(steps):
                    return steps[done](request)
                return Text(f"[stub {DIALECT}] {key}: done; last tool said: {last_output(request)}")
        return directives(request)
    return script


def outputs(stub: StubModels, name: str, prompt: str = "") -> list[str]:
    """What the stub received as the output of each call of tool NAME in turns whose prompt has PROMPT."""
    seen: list[str] = []
    for request in stub.requests(DIALECT):
        if prompt not in request.prompt:
            continue
        pairs = since_prompt(request)
        for (role, said), (next_role, output) in zip(pairs, pairs[1:], strict=False):
            if role == "assistant" and said.startswith(f"tool mcp__anvilfs__{name} ") and next_role == "tool":
                if output not in seen:
                    seen.append(output)
    return seen


def first_bead(request: Request) -> str:
    """The first bead id in the last tool output (a `ready` listing: a header, then `ID status ...` lines)."""
    lines = [line for line in last_output(request).splitlines() if " pending " in line]
    assert lines, f"no ready bead in what the tool said: {last_output(request)!r}"
    return lines[0].split()[0]


def new_bead(srv, *words: str) -> str:
    """A bead made as the human would (the read-back gives its id)."""
    return rdwr(srv, "agent/beads/ctl", "new " + " ".join(json.dumps(word) if " " in word else word
                                                           for word in words))


CLAIM = [lambda r: tool("ready"), lambda r: tool("claim", bead=first_bead(r))]


def finish(bead: str, result: str) -> list[Step]:
    return [lambda r: tool("result", bead=bead, text=result), lambda r: tool("complete", bead=bead)]


@pytest.mark.parametrize("way", sorted(MODELS))
def test_a_bot_claims_works_and_completes_its_own_bead_and_a_second_claim_names_the_winner(stub, tmp_path, way):
    with tools_server(stub, MODELS[way]) as srv:
        bead = new_bead(srv, "Research auth system", "researcher", "Analyze existing auth code")
        stub.script = plans({"do your work": CLAIM, "take it too": [lambda r: tool("claim", bead=bead)],
                             "finish it": finish(bead, "the auth code keeps sessions in cookies")})
        new_session(srv, "codex", tmp_path, "bot1", "role=researcher")
        new_session(srv, "codex", tmp_path, "bot2", "role=researcher")
        turn(srv, "bot1", "do your work")
        second = turn(srv, "bot2", "take it too")
        said = turn(srv, "bot1", "finish it")
        status = cli(srv, "read", f"agent/beads/{bead}/status").strip()
        result = cli(srv, "read", f"agent/beads/{bead}/result")
        # history commits in rounds after the answer (SPEC §6): wait for the round, do not race it
        wait_until(lambda: f"Claimed: {bead} by bot1" in messages_in_history(srv.base / "state"),
                   f"the history's message that bot1 claimed {bead}")
        history = messages_in_history(srv.base / "state")
    assert status == "completed" and result.strip() == "the auth code keeps sessions in cookies", (status, result, said)
    [ready] = outputs(stub, "ready", "do your work")
    assert f"{bead} pending researcher - Research auth system" in ready, ready  # the bot's own role's list
    [claimed] = outputs(stub, "claim", "do your work")
    assert f"\nclaimed {bead} for bot1" in claimed, claimed
    [refused] = outputs(stub, "claim", "take it too")
    assert "already claimed by bot1" in refused, refused  # the tool error the model reads names the winner
    assert "already claimed by bot1" in second, second
    assert f"Claimed: {bead} by bot1" in history, history  # the bead's history names the session
    offered = offered_bytes(stub, way)
    print(f"anvilfs's tools as codex 0.171 sends them ({way}): {offered} bytes of JSON")
    assert 0 < offered < TOOL_LIST_MOST, offered


def offered_bytes(stub: StubModels, way: str) -> int:
    """The bytes of the anvilfs tools as codex sent them (compact JSON, as serde_json writes them): the
    namespace tool offered directly, or, for a model that searches, the tool_search tool and every
    namespace it found."""
    def size(value: dict) -> int:
        return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())
    request = stub.requests(DIALECT)[-1]
    if way == "direct":
        [namespace] = [t for t in request.body["tools"] if t.get("name") == "mcp__anvilfs"]
        return size(namespace)
    [search] = [t for t in request.body["tools"] if t.get("type") == "tool_search"]
    found = [found for item in request.body["input"] if item.get("type") == "tool_search_output"
             for found in item["tools"]]
    return size(search) + sum(size(item) for item in found)


def message_id(prompt: str, kind: str) -> str:
    """The id of the KIND message a notice names ("1 new message: ID KIND from SENDER: subject")."""
    match = re.search(rf"(\d+) {kind} from ", prompt)
    assert match, f"no {kind} in the notice {prompt!r}"
    return match.group(1)


def test_a_bot_asks_for_approval_and_goes_on_when_its_notice_brings_the_answer(stub, tmp_path):
    answer = lambda r: message_id(r.prompt, "APPROVAL_RESPONSE")  # noqa: E731 - a step of the plan
    stub.script = plans({
        "ask before you merge": [lambda r: tool("request_approval", subject="OAuth implementation",
                                                body="All tests pass. May I merge?")],
        "APPROVAL_RESPONSE": [lambda r: tool("read_message", id=answer(r)), lambda r: tool("ack", id=answer(r))]})
    with tools_server(stub, MODELS["search"]) as srv:
        new_session(srv, "codex", tmp_path, "bot1", "role=developer", "notify")
        asked = turn(srv, "bot1", "ask before you merge")
        [waiting] = cli(srv, "read", "agent/human/approvals").splitlines()
        request_id, sender, _bead, subject = waiting.split(" ", 3)
        response_id = cli(srv, "approve", request_id).strip()
        wait_until(lambda: outputs(stub, "ack", "APPROVAL_RESPONSE"), "bot1 to acknowledge the answer")
        assert cli(srv, "read", "agent/bot1/wait").strip() == "await"
        inbox = cli(srv, "ls", "agent/bot1/inbox")
        done = cli(srv, "ls", "agent/bot1/done")
        approvals = cli(srv, "read", "agent/human/approvals")
    assert (sender, subject) == ("bot1", "OAuth implementation"), waiting
    [sent] = outputs(stub, "request_approval")
    assert f"sent {request_id} to human" in sent and "end your turn" in sent, sent
    assert "end your turn" in asked, asked  # the turn ended with what the tool said
    [read] = outputs(stub, "read_message")
    message = json.loads(read.split("Output:\n", 1)[1])
    assert (message["id"], message["from"], message["type"], message["re"]) == (response_id, "human",
                                                                               "APPROVAL_RESPONSE", request_id)
    notice = stub.wait_for(lambda r: "APPROVAL_RESPONSE" in r.prompt, what="the notice").prompt
    assert f"{response_id} APPROVAL_RESPONSE from human" in notice and "mcp__anvilfs__read_message" in notice, notice
    [acked] = outputs(stub, "ack")
    assert acked.endswith(f"{response_id} acknowledged"), acked
    assert inbox == "" and f"{response_id}.json" in done and approvals == "", (inbox, done, approvals)


def test_a_tool_call_acts_only_as_its_session_and_refusals_reach_the_model(stub, tmp_path):
    secret = tmp_path / "outside.txt"
    stub.script = plans({"try what you may not": [
        lambda r: tool("ack", id=theirs),  # acknowledges in the caller's own inbox only
        lambda r: tool("claim", bead=bead, session="bot2"),  # the identity is no argument
        lambda r: tool("send_mail", to="bot2", type="QUERY_REQUEST", subject="who am I", body="?"),
        lambda r: tool("read", path="../../etc/passwd"),  # paths stay in the tree
        lambda r: ToolCall("mcp__anvilfs__write", {"path": "ctl", "text": f"new codex {tmp_path}"}),  # no such tool
        lambda r: tool("new_session", backend="codex", cwd="."),  # a conductor's tool: not this session's
        lambda r: tool("result", bead=bead, text=f"$(touch {secret})"),  # not its bead; text is data, never run
    ]})
    with tools_server(stub, MODELS["direct"]) as srv:
        bead = new_bead(srv, "Research auth system", "researcher", "Analyze existing auth code")
        new_session(srv, "codex", tmp_path, "bot1")
        new_session(srv, "codex", tmp_path, "bot2")
        theirs = srv.run_cli("mail", "bot2", "QUERY_REQUEST", "for bot2 alone", input="private").stdout.strip()
        turn(srv, "bot1", "try what you may not")
        bot2_inbox = cli(srv, "ls", "agent/bot2/inbox").split()
        status = cli(srv, "read", f"agent/beads/{bead}/status").strip()
        sessions = cli(srv, "read", "agent/list")
        mail = [json.loads(cli(srv, "read", f"agent/bot2/inbox/{name}")) for name in bot2_inbox]
        stored = cli(srv, "read", f"agent/beads/{bead}/result")
    # codex 0.171 hands the model a refusal as the tool's output text, with no error flag: the words must say it
    said = {name: outputs(stub, name) for name in ("read", "ack", "claim", "result")}
    assert f"bot1/inbox/{theirs}.json: '{theirs}.json' does not exist" in said["ack"][0] and f"{theirs}.json" in bot2_inbox, (said["ack"], bot2_inbox)
    assert "no argument 'session'" in said["claim"][0] and status == "pending", (said["claim"], status)
    assert [m["from"] for m in mail if m["subject"] == "who am I"] == ["bot1"], mail
    assert "is no path in the tree" in said["read"][0], said["read"]
    unsupported = [text for text in (outputs(stub, "write") + outputs(stub, "new_session")) if text]
    assert len(unsupported) == 2 and all("unsupported call" in text for text in unsupported), unsupported
    assert "bot3" not in sessions and not secret.exists()
    assert "works on the beads it holds" in said["result"][0] and stored == "", (said["result"], stored)


def _claimed(request: Request) -> str:
    """The bead this turn claimed (the claim tool said `claimed ID for SESSION: title`)."""
    for role, said in since_prompt(request):
        last = said.rsplit("\n", 1)[-1]
        if role == "tool" and last.startswith("claimed "):
            return last.split()[1]
    raise AssertionError(f"no claim in this turn: {since_prompt(request)}")


def _dependency(request: Request) -> str:
    """The bead the last tool output (a `bead` tool's fields) says this one depends on."""
    for line in last_output(request).splitlines():
        if line.startswith("depends_on: "):
            return line.split()[1]
    raise AssertionError(f"no depends_on in {last_output(request)!r}")


RESEARCH = "The auth code keeps sessions in signed cookies; the OAuth callback goes in auth/oauth.py."
CONTEXT = "Use the company's OAuth provider; keep sessions server-side."


def test_research_then_development_with_two_codex_bots_and_no_one_writing_their_ctl_lines(stub, tmp_path):
    """IDEAS.md's "Research -> Development": the beads and the convoy are made as a coordinator would;
    every claim, result and completion is the bots' own, through their tools."""
    stub.script = plans({
        "anything for a developer": [lambda r: tool("ready")],
        "research what we have": [*CLAIM, lambda r: tool("result", bead=_claimed(r), text=RESEARCH),
                                  lambda r: tool("complete", bead=_claimed(r))],
        "build on the research": [*CLAIM, lambda r: tool("bead", bead=_claimed(r)),
                                  lambda r: tool("read", path=f"beads/{_dependency(r)}/result")]})
    (tmp_path / "research").mkdir()
    (tmp_path / "dev").mkdir()
    with tools_server(stub, MODELS["search"]) as srv:
        convoy = rdwr(srv, "agent/convoys/ctl", 'new "OAuth" "Users log in with the company account"')
        cli(srv, "write", f"agent/convoys/{convoy}/context", CONTEXT)
        research = new_bead(srv, "Research auth system", "researcher", "Analyze existing auth code",
                            f"convoy={convoy}")
        impl = new_bead(srv, "Implement OAuth", "developer", "Add OAuth based on research", research,
                        f"convoy={convoy}")
        new_session(srv, "codex", tmp_path / "research", "research-bot", "role=researcher")
        new_session(srv, "codex", tmp_path / "dev", "dev-bot", "role=developer")
        turn(srv, "dev-bot", "anything for a developer")  # nothing yet: the research is not done
        turn(srv, "research-bot", "research what we have")
        turn(srv, "dev-bot", "build on the research")
        beads = cli(srv, "read", "agent/beads/list")
        progress = cli(srv, "read", f"agent/convoys/{convoy}/progress")
        claims = {f"Claimed: {research} by research-bot", f"Claimed: {impl} by dev-bot"}
        wait_until(lambda: claims <= set(messages_in_history(srv.base / "state")), "the history's messages of both claims")
        history = messages_in_history(srv.base / "state")
    assert f"{research} completed researcher research-bot Research auth system" in beads, beads
    assert f"{impl} in_progress developer dev-bot Implement OAuth" in beads, beads
    [nothing, found] = outputs(stub, "ready", "anything for a developer") + outputs(stub, "ready", "build on the research")
    assert "no bead is ready for role developer" in nothing, nothing
    assert f"{impl} pending developer - Implement OAuth" in found and research not in found, found
    [fields] = outputs(stub, "bead", "build on the research")
    assert CONTEXT in fields and f"depends_on: {research}" in fields and f"convoy: {convoy}" in fields, fields
    [result] = outputs(stub, "read", "build on the research")
    assert result.endswith(RESEARCH + "\n") or result.endswith(RESEARCH), result
    assert f"Claimed: {research} by research-bot" in history and f"Claimed: {impl} by dev-bot" in history, history
    assert progress.strip(), progress


def rdwr(srv, path: str, line: str) -> str:
    """A ctl line and its read-back (a new id), as the coordinator would write it."""
    result = srv.run_cli("rdwr", path, input=line + "\n")
    assert result.returncode == 0 and result.stdout.strip(), result
    return result.stdout.split()[-1]


def test_codex_s_shell_cannot_reach_the_tree_so_the_tools_are_the_only_way(stub, tmp_path):
    """No shell path for codex (docs/backends.md): its login shell resets PATH, and its workspace-write
    sandbox refuses the tree's socket; the wiring widens neither."""
    with tools_server(stub, MODELS["search"]) as srv:
        bead = new_bead(srv, "Research auth system", "researcher", "Analyze existing auth code")
        claim = f"write agent/beads/{bead}/ctl claim"
        stub.script = plans({"claim it from the shell": [
            lambda r: ToolCall("exec_command", {"cmd": f"anvilfs {claim}"}),
            lambda r: ToolCall("exec_command", {"cmd": f"{anvilfs_command()} {claim}"})]})
        new_session(srv, "codex", tmp_path, "bot1")
        turn(srv, "bot1", "claim it from the shell")
        status = cli(srv, "read", f"agent/beads/{bead}/status").strip()
    request = stub.wait_for(lambda r: "claim it from the shell" in r.prompt and len(since_prompt(r)) == 4,
                            what="both shell calls answered")
    by_name, by_path = [said for role, said in since_prompt(request) if role == "tool"]
    assert "anvilfs: command not found" in by_name, by_name
    assert "operation not permitted" in by_path, by_path
    assert status == "pending"


def test_the_brief_follows_codex_s_and_the_user_s_own_developer_instructions(stub, tmp_path):
    def home(path: Path) -> None:
        codex_home(stub, MODELS["search"])(path)
        config = path / ".codex" / "config.toml"
        config.write_text('developer_instructions = "Answer in haiku."\n' + config.read_text())
    with agent_server(stub, "codex", env=codex_env(), home=home) as srv:
        before = (srv.base / "home" / ".codex" / "config.toml").read_text()
        new_session(srv, "codex", tmp_path, "bot1")
        turn(srv, "bot1", "hello")
        after = (srv.base / "home" / ".codex" / "config.toml").read_text()
    request = stub.wait_for(lambda r: r.prompt.strip() == "hello", what="the turn's request")
    developer = [part["text"] for item in request.body["input"] if item.get("role") == "developer"
                 for part in item["content"]]
    mine = [text for text in developer if "You are the anvilfs session bot1" in text]
    assert mine and mine[0].startswith("Answer in haiku.\n\n"), developer  # the user's, then the brief
    assert developer[0].startswith("You are Codex"), developer[0][:80]  # codex's own instructions stay first
    assert after == before  # nothing written to the user's settings


@pytest.mark.parametrize("text", ["plain", 'a "quoted" \\ back\\slash', "two\nlines\tand a tab", "emoji \U0001f600 é",
                                  "control \x01 and \x7f"])
def test_a_setting_s_text_reaches_codex_as_the_same_text(text):
    """codex reads each -c value as TOML, and a value that is no TOML as a plain string (quotes and all)."""
    value = {"developer_instructions": text, "env": {"ANVILFS_SESSION": text}, "enabled_tools": [text]}
    assert tomllib.loads(f"x = {toml_value(value)}")["x"] == value


def test_a_conductor_bot_starts_a_session_gives_it_work_and_waits_for_its_answer(stub, tmp_path):
    """IDEAS.md's "Conductor as Bot": a codex session made with `conductor` gets prompt, new_session and
    wait besides the worker's tools, and drives a session of its own through them."""
    stub.script = plans({"get the helper going": [
        lambda r: tool("new_session", backend="sim", cwd=".", name="helper"),
        lambda r: tool("prompt", session="helper", text="count the files"),
        lambda r: tool("wait", session="helper"),
        lambda r: tool("read", path="helper/out")]})
    with tools_server(stub, MODELS["direct"]) as srv:
        new_session(srv, "codex", tmp_path, "lead", "conductor")
        turn(srv, "lead", "get the helper going")
        sessions = cli(srv, "read", "agent/list")
        helper_cwd = cli(srv, "read", "agent/helper/cwd").strip()
    request = stub.wait_for(lambda r: "get the helper going" in r.prompt, what="the conductor's turn")
    offered = set(request.tools)
    assert {"mcp__anvilfs__prompt", "mcp__anvilfs__new_session", "mcp__anvilfs__wait"} <= offered, offered
    [made], [waited], [answer] = (outputs(stub, name) for name in ("new_session", "wait", "read"))
    assert made.endswith("made session helper") and "helper: await" in waited, (made, waited)
    assert "[simulated]" in answer and "count the files" in answer, answer
    assert "helper" in sessions and helper_cwd == str(tmp_path)

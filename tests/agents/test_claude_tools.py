"""Claude Code (2.1.332, built-in `claude` backend) working through anvilfs's own tools, against the Anthropic stub.

The backend hands claude the MCP server `anvilfs` (`anvilfs mcp`, as the
session), allows exactly its tools and the shell path's `anvilfs` verbs,
and appends the brief to the system prompt (backends/tools_claude.py). The
stub plays the model: it calls the tools Claude Code offered it
(claude_tools_script.Plans), and what Claude Code sends back, each tool's
result and whether it is an error, is the model's side of the story. The
test does as the human does: makes beads and convoys, prompts each bot
once, approves; every claim, result and completion is the bot's own call.
"""

from __future__ import annotations

import json

from claude_env import main_requests
from claude_tools_script import Plans, bash, bead_field, call, first_word, new_bead, tools_server
from drive import TURN_TIMEOUT, cli, new_session, turn, wait_until
from harness.git_history import messages_in_history
from stubs.anthropic import tool_results, tool_schemas
from test_claude_tmux import claude_in_tmux, hook_writes

from anvilfs.backends.agent_tools import MCP_SERVER
from anvilfs.brief import TOOL_NAMES, brief

TOOL_LIST_LIMIT = 8192  # bytes: the bound on the tool list as the CLI sends it (about 2k tokens)
IDENTITY_WORDS = {"session", "from", "as", "uname", "user", "who", "sender", "identity"}


def anvilfs_tools(request) -> dict[str, dict]:
    return {name: tool for name, tool in tool_schemas(request).items() if name.startswith(f"mcp__{MCP_SERVER}__")}


def results_of(stub, prompt: str) -> list[tuple[str, bool]]:
    """The tool results of the turn of PROMPT, as Claude Code sent them in its last request of that turn."""
    return tool_results([request for request in main_requests(stub) if prompt in request.prompt][-1])


def json_bytes(value) -> int:
    """Bytes of VALUE as compact JSON, as Claude Code (JSON.stringify) sends it."""
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def test_a_bot_lists_claims_writes_its_result_and_completes_its_bead(stub, tmp_path):
    plans = Plans({"work on your beads": [
        call("ready"),
        lambda said: call("claim", bead=first_word(said)),
        lambda said: call("result", bead=said.split()[1], text="the auth code keeps sessions in cookies"),
        lambda said: call("complete", bead=said.split("'")[0]),
    ]})
    with tools_server(stub, plans) as srv:
        bead = new_bead(srv, 'new "Research auth" researcher "Analyze the auth code"')
        new_session(srv, "claude", tmp_path, "bot1", "role=researcher")
        out = turn(srv, "bot1", "work on your beads")
        assert bead_field(srv, bead, "status") == "completed", cli(srv, "read", "agent/beads/list")
        assert bead_field(srv, bead, "assigned_to") == "bot1"
        assert bead_field(srv, bead, "result") == "the auth code keeps sessions in cookies"
        wait_until(lambda: f"Claimed: {bead} by bot1" in messages_in_history(srv.state),
                   f"the history's message that bot1 claimed {bead}")
        history = messages_in_history(srv.state)
    assert plans.unoffered == []
    results = tool_results(main_requests(stub)[-1])
    assert [error for _, error in results] == [False] * 4, results
    assert results[0][0].startswith("id status role assigned_to title\n" + bead), results
    assert results[1][0].startswith(f"claimed {bead} for bot1"), results
    assert results[3][0] == f"{bead}: completed", results
    assert out.startswith("[stub anthropic] work on your beads: done"), out
    assert f"Created: Research auth ({bead}, role researcher)" in history, history
    assert f"Completed: Research auth ({bead}) by bot1" in history, history


def test_the_tools_are_in_the_request_small_and_the_brief_is_appended(stub, tmp_path):
    with tools_server(stub, Plans({})) as srv:
        new_session(srv, "claude", tmp_path, "bot1", "role=researcher")
        turn(srv, "bot1", "hello")
    (request,) = main_requests(stub)
    offered = anvilfs_tools(request)
    # alwaysLoad: every tool is in the request itself (2.1.332 otherwise defers MCP tools behind ToolSearch)
    assert sorted(offered) == sorted(f"mcp__anvilfs__{name}" for name in TOOL_NAMES), sorted(offered)
    assert not [name for name, tool in offered.items() if tool.get("defer_loading")]
    size = json_bytes(list(offered.values()))
    print(f"anvilfs's tool list as Claude Code 2.1.332 sends it: {len(offered)} tools, {size} bytes of JSON")
    assert size < TOOL_LIST_LIMIT, f"the tool list is {size} bytes, over {TOOL_LIST_LIMIT}"
    for name, tool in offered.items():  # who calls is the session the server started, never an argument
        taken = set(tool["input_schema"].get("properties", {}))
        assert not taken & IDENTITY_WORDS, f"{name} takes an identity argument: {taken & IDENTITY_WORDS}"
    system = [block["text"] for block in request.body["system"]]
    assert any(text.startswith("You are Claude Code") for text in system), "the brief replaced the system prompt"
    assert system[-1].rstrip().endswith(brief("bot1", "researcher")), system[-1][-400:]


def test_a_second_bots_claim_of_the_same_bead_is_an_error_naming_the_winner(stub, tmp_path):
    state = {}
    plans = Plans({"claim a ready bead": [call("ready"), lambda said: call("claim", bead=first_word(said))],
                   "claim the bead you were told of": [lambda said: call("claim", bead=state["bead"])]})
    with tools_server(stub, plans) as srv:
        state["bead"] = bead = new_bead(srv, 'new "Research auth" researcher "Analyze the auth code"')
        for name in ("bot1", "bot2"):
            new_session(srv, "claude", tmp_path, name, "role=researcher")
        turn(srv, "bot1", "claim a ready bead")
        turn(srv, "bot2", "claim the bead you were told of")  # as if it had read `ready` before bot1's claim
        assert bead_field(srv, bead, "assigned_to") == "bot1"
    assert plans.unoffered == []
    first, second = (results_of(stub, prompt) for prompt in plans.plans)
    assert first[1][0].startswith(f"claimed {bead} for bot1") and not first[1][1], first
    (text, error), = second
    assert error and f"claim: bead {bead} is already claimed by bot1 (in_progress)" in text, second


def test_a_bot_asks_for_approval_and_goes_on_when_its_notice_comes(stub, tmp_path):
    state = {}

    def remember(key, value):
        state[key] = value
        return value

    plans = Plans({
        "ship the auth change": [
            lambda said: call("claim", bead=state["bead"]),
            call("request_approval", subject="deploy the auth change", body="tests pass; may I deploy?"),
        ],
        "APPROVAL_RESPONSE": [  # the notice of the human's answer
            call("inbox"),
            lambda said: call("read_message", id=remember("message", first_word(said))),
            lambda said: call("ack", id=state["message"]),
            lambda said: call("complete", bead=state["bead"], result="deployed after approval"),
        ],
    })
    with tools_server(stub, plans) as srv:
        state["bead"] = new_bead(srv, 'new "Deploy auth" developer "Deploy the auth change"')
        new_session(srv, "claude", tmp_path, "bot1", "role=developer", "notify")
        out = turn(srv, "bot1", "ship the auth change")
        assert "sent" in out and "end your turn" in out, out
        (waiting,) = cli(srv, "read", "agent/human/approvals").splitlines()
        request_id, sender, _, subject = waiting.split(" ", 3)
        assert (sender, subject) == ("bot1", "deploy the auth change"), waiting
        cli(srv, "approve", request_id)
        stub.wait_for(lambda request: len(tool_results(request)) == 4 and "APPROVAL_RESPONSE" in request.prompt,
                      TURN_TIMEOUT, "the notice turn's last tool result")
        assert cli(srv, "read", "agent/bot1/wait", timeout=TURN_TIMEOUT).strip() == "await"
        assert bead_field(srv, state["bead"], "status") == "completed"
        assert cli(srv, "ls", "agent/bot1/inbox").split() == []
    assert plans.unoffered == []
    results = tool_results(main_requests(stub)[-1])[-4:]
    assert [error for _, error in results] == [False] * 4, results
    message = json.loads(results[1][0])
    assert (message["from"], message["type"], message["re"]) == ("human", "APPROVAL_RESPONSE", request_id), message
    assert results[2][0] == f"{state['message']} acknowledged"


def test_a_tool_call_cannot_act_as_another_session_write_outside_the_tools_or_run_a_command(stub, tmp_path):
    plans = Plans({"be someone else": [
        call("claim", bead="BEAD", session="bot2"),  # no identity argument exists
        call("prompt", session="bot2", text="do my work"),  # a conductor's tool: not offered to bot1
        call("new_session", backend="claude", cwd="/"),  # nor this one (it would start a program)
        call("write", path="bot2/in", text="do my work"),  # no tool writes a path
        call("read", path="../../etc/passwd"),  # paths are the tree's
        bash("anvilfs notify --all touch pwned"),  # `notify` runs commands: not a shell path verb
    ]})
    with tools_server(stub, plans) as srv:
        bead = new_bead(srv, 'new "Research auth" researcher "Analyze the auth code"')
        for name in ("bot1", "bot2"):
            new_session(srv, "claude", tmp_path, name)
        turn(srv, "bot1", "be someone else")
        assert bead_field(srv, bead, "status") == "pending"
        assert cli(srv, "read", "agent/bot2/log") == "", "bot2 was prompted"
    assert not (tmp_path / "pwned").exists()
    assert set(plans.unoffered) == {"mcp__anvilfs__prompt", "mcp__anvilfs__new_session", "mcp__anvilfs__write"}
    results = tool_results(main_requests(stub)[-1])
    assert len(results) == 6 and all(error for _, error in results), results
    said = [text for text, _ in results]
    assert "session" in said[0], said[0]  # Claude Code checks the schema; the server would say "no argument"
    assert all("No such tool available" in text for text in said[1:4]), said[1:4]
    assert "'../../etc/passwd' is no path in the tree" in said[4], said[4]
    assert "requires approval" in said[5], said[5]


def test_the_shell_path_claims_as_the_session_and_other_commands_stay_refused(stub, tmp_path):
    state = {}
    plans = Plans({
        "claim by shell": [lambda said: bash(f"anvilfs write agent/beads/{state['bead']}/ctl claim")],
        "notify by shell": [bash("anvilfs notify --all touch pwned")],
        "python by shell": [bash("python3 -c 'open(\"pwned\", \"w\")'")],
        "chain by shell": [bash("anvilfs ls agent/beads && python3 -c 'open(\"pwned\", \"w\")'")],
    })
    with tools_server(stub, plans) as srv:
        state["bead"] = new_bead(srv, 'new "Research auth" researcher "Analyze the auth code"')
        new_session(srv, "claude", tmp_path, "bot1")
        for prompt in plans.plans:
            turn(srv, "bot1", prompt)
        assert bead_field(srv, state["bead"], "assigned_to") == "bot1"
        wait_until(lambda: f"Claimed: {state['bead']} by bot1" in messages_in_history(srv.state),
                   "the history's message that bot1 claimed the bead")
    assert not (tmp_path / "pwned").exists()
    claimed, notify, python, chain = (results_of(stub, prompt)[-1] for prompt in plans.plans)
    assert claimed == ("(Bash completed with no output)", False), claimed
    assert notify == ("This command requires approval", True), notify
    assert python == ("This command requires approval", True), python
    assert chain[1] and "The following part requires approval: python3 -c" in chain[0], chain


def test_research_then_development_two_bots_working_the_board_themselves(stub, tmp_path):
    """IDEAS.md "Research -> Development": the human makes the convoy and its beads and prompts each bot once."""
    plans = Plans({
        "do your research": [
            call("ready"),
            lambda said: call("claim", bead=first_word(said)),
            lambda said: call("complete", bead=said.split()[1], result="sessions live in signed cookies; no refresh"),
        ],
        "build what is ready": [
            call("ready"),
            lambda said: call("claim", bead=first_word(said)),
            lambda said: call("bead", bead=said.split()[1]),
            lambda said: call("bead", bead=field(said, "depends_on")),  # what the research found
        ],
    })
    with tools_server(stub, plans) as srv:
        cli(srv, "write", "agent/convoys/ctl", 'new "Auth" "OAuth login for the web app"')
        (convoy,) = [line.split()[0] for line in cli(srv, "read", "agent/convoys/list").splitlines()]
        cli(srv, "write", f"agent/convoys/{convoy}/context", "Keep the existing session cookie name.")
        research = new_bead(srv, f'new "Research auth" researcher "Analyze the auth code" convoy={convoy}')
        develop = new_bead(srv, f'new "Implement OAuth" developer "Add OAuth" {research} convoy={convoy}')
        new_session(srv, "claude", tmp_path, "res", "role=researcher")
        new_session(srv, "claude", tmp_path, "dev", "role=developer")
        assert cli(srv, "read", "agent/beads/ready.developer") == ""  # it waits for the research
        turn(srv, "res", "do your research")
        assert bead_field(srv, research, "status") == "completed"
        turn(srv, "dev", "build what is ready")
        assert (bead_field(srv, develop, "status"), bead_field(srv, develop, "assigned_to")) == ("in_progress", "dev")
        wait_until(lambda: {f"Claimed: {research} by res", f"Claimed: {develop} by dev"}
                   <= set(messages_in_history(srv.state)), "the history's messages of both claims")
    assert plans.unoffered == []
    found = results_of(stub, "do your research")
    assert [error for _, error in found] == [False] * 3 and found[0][0].splitlines()[1].startswith(research), found
    built = results_of(stub, "build what is ready")
    assert [error for _, error in built] == [False] * 4, built
    assert built[0][0].splitlines()[1].startswith(f"{develop} pending developer"), built[0]
    own, dependency = built[2][0], built[3][0]
    assert f"convoy: {convoy}" in own and "Keep the existing session cookie name." in own, own  # the convoy's context
    assert "result:\nsessions live in signed cookies; no refresh" in dependency, dependency


def test_claude_code_in_tmux_gets_the_tools_and_its_claim_lands(stub, tmp_path):
    """claude-tmux: the same flags through the TUI's argv; its hooks still end the turn and hand in the answer."""
    state = {}
    plans = Plans({"claim the auth bead": [lambda said: call("claim", bead=state["bead"])]})
    stub.script = plans
    with claude_in_tmux(stub, tmp_path) as (srv, _):
        state["bead"] = bead = new_bead(srv, 'new "Research auth" researcher "Analyze the auth code"')
        out = turn(srv, "a", "claim the auth bead")
        assert bead_field(srv, bead, "assigned_to") == "a"
        # written as uname a, by the MCP server the TUI started
        assert ("ctl", "claim\n") in hook_writes(srv), hook_writes(srv)
    # The TUI does not wait for its MCP servers before it takes input (print mode does): the request of a prompt
    # typed soon after it started may lack the tools (seen here, with ready_seconds 2, even on a second prompt),
    # and a call of one is run all the same once the server is up. Once it has answered, they are offered.
    assert sorted(anvilfs_tools(main_requests(stub)[-1])) == sorted(f"mcp__anvilfs__{name}" for name in TOOL_NAMES)
    assert out.startswith(f"[stub anthropic] claim the auth bead: done; the last tool said: claimed {bead} for a"), out
    assert results_of(stub, "claim the auth bead") == [(out.split("said: ", 1)[1].rstrip("\n"), False)]


def field(said: str, name: str) -> str:
    """The value of NAME in the `bead` tool's answer (its `name: value` lines)."""
    values = [line.split(": ", 1)[1] for line in said.splitlines() if line.startswith(f"{name}: ")]
    assert values, f"no {name} in {said!r}"
    return values[0]

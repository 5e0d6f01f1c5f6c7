"""`anvilfs mcp`'s bead tools, called through the MCP SDK's client against a real `anvilfs serve`.

Each tool is reads and writes of tree files as the session: these tests
check what the tree shows afterwards (over 9P, as another client), what
git records, and that a refusal is the file's own text, as the model sees it.
"""

from __future__ import annotations

import pytest
from harness.git_history import messages_in_history
from harness.mcp_tools import ToolRefused, bead, client_rdwr, identity_env, read, team, tool_client

from anvilfs.brief import tool_names
from anvilfs.mcpserver.tools import TOOLS, offered

def test_the_tool_list_is_the_briefs_and_small():
    assert tuple(tool.name for tool in offered(False)) == tool_names(False)
    assert tuple(tool.name for tool in offered(True)) == tool_names(True)
    assert len({tool.name for tool in TOOLS}) == len(TOOLS)


def test_a_bot_lists_claims_writes_and_completes_its_own_bead():
    with team(("bot1", "developer")) as srv:
        research = bead(srv, "Research auth", "researcher")
        fix = bead(srv, "Fix login", "developer")
        with tool_client(srv, "bot1", env=identity_env(srv, "bot1") | {"ANVILFS_ROLE": "developer"}) as tools:
            assert "You are the anvilfs session bot1, role developer." in tools.instructions
            assert tools.list_bytes() < 8192, "the whole tool list stays under 8 KB of JSON"
            assert "prompt" not in tools.names, "a session that is no conductor gets no conductor tools"
            ready = tools.call("ready")
            assert fix in ready and research not in ready, "ready defaults to the session's own role"
            assert research in tools.call("ready", role="researcher")
            assert tools.call("claim").startswith(f"claimed {fix} for bot1")
            work = tools.call("my_work")
            assert f"- {fix} in_progress (developer): Fix login" in work
            assert "spent: 0 turns, 0 tokens, cost_usd 0.000000; budget: none" in work  # what it may spend
            tools.call("result", bead=fix, text="it's fixed\nin two places")
            tools.call("complete", bead=fix)
            shown = tools.call("bead", bead=fix)
        assert read(srv, f"beads/{fix}/status").strip() == "completed"
        assert read(srv, f"beads/{fix}/result") == "it's fixed\nin two places\n"  # the file ends its last line
        assert "status: completed" in shown and "assigned_to: bot1" in shown
        srv.stop()  # a clean stop commits what is pending
        history = messages_in_history(srv.state)
    assert f"Claimed: {fix} by bot1" in history
    assert f"Updated result: {fix} by bot1" in history and f"Completed: Fix login ({fix}) by bot1" in history


def test_a_second_claim_is_refused_naming_the_winner():
    with team(("bot1", "developer"), ("bot2", "developer")) as srv:
        fix = bead(srv, "Fix login", "developer")
        with tool_client(srv, "bot1") as one, tool_client(srv, "bot2") as two:
            one.call("claim", bead=fix)
            with pytest.raises(ToolRefused, match=f"bead {fix} is already claimed by bot1"):
                two.call("claim", bead=fix)
            assert two.call("claim").startswith("nothing to claim"), "nothing else is ready"
        assert read(srv, f"beads/{fix}/assigned_to").strip() == "bot1"


def test_complete_with_a_result_quotes_it_whole():
    with team(("bot1", "developer")) as srv:
        fix = bead(srv, "Fix login", "developer")
        text = 'it\'s done "quoted"\nunclaim'  # would be a second command, pasted unquoted
        with tool_client(srv, "bot1") as tools:
            tools.call("claim", bead=fix)
            tools.call("complete", bead=fix, result=text)
        assert read(srv, f"beads/{fix}/result") == text + "\n"
        assert read(srv, f"beads/{fix}/status").strip() == "completed"


def test_new_bead_with_dependencies_and_a_convoy():
    with team(("lead", "developer")) as srv:
        research = bead(srv, "Research auth", "researcher")
        with srv.connect("glenda") as client:
            convoy = client_rdwr(client, "convoys/ctl", 'new "Auth" "ship auth"\n')
        with tool_client(srv, "lead") as tools:
            made = tools.call("new_bead", title="Implement OAuth", role="developer", description="per the research",
                              depends_on=[research], requires_approval=True)
            oauth = made.removeprefix("made bead ")
            tools.call("add_to_convoy", convoy=convoy, bead=research)
            tools.call("add_to_convoy", convoy=convoy, bead=oauth)
            assert oauth not in tools.call("ready"), "its dependency is not completed"
        assert read(srv, f"beads/{oauth}/depends_on").split() == [research]
        assert read(srv, f"convoys/{convoy}/beads").split() == [research, oauth]


def test_refusals_are_the_files_own_text_and_name_what_to_do():
    with team(("bot1", "developer")) as srv:
        fix = bead(srv, "Fix login", "developer")
        with tool_client(srv, "bot1") as tools:
            with pytest.raises(ToolRefused, match=r"is held by no one; session bot1.s agent works on the beads it holds \(claim one first\)$"):
                tools.call("complete", bead=fix)
            with pytest.raises(ToolRefused, match="is no bead id"):
                tools.call("claim", bead="../../ctl")
            with pytest.raises(ToolRefused, match="no argument 'session'"):
                tools.call("claim", bead=fix, session="bot2")
            with pytest.raises(ToolRefused, match="give bead, text"):
                tools.call("result")
            with pytest.raises(ToolRefused, match="must be a list of strings"):
                tools.call("new_bead", title="t", role="developer", description="d", depends_on="x")
        assert read(srv, f"beads/{fix}/status").strip() == "pending"

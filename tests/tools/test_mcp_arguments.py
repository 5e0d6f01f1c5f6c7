"""What `anvilfs mcp` says to a model's mistakes: each refusal names what was wrong and what to give instead,
and what a model writes reaches the file whole (a long result, a text that looks like an option)."""

from __future__ import annotations

import os
import tempfile

import pytest
from harness.mcp_tools import ToolRefused, bead, read, team, tool_client


def test_read_of_a_directory_and_list_of_a_file_say_which_tool_fits():
    with team(("bot1", "developer")) as srv:
        with tool_client(srv, "bot1") as tools:
            with pytest.raises(ToolRefused, match="beads is a directory: list it"):
                tools.call("read", path="beads")
            with pytest.raises(ToolRefused, match="beads/list is a file: read it"):
                tools.call("list", path="beads/list")
            assert "ready" in tools.call("list", path="agent/beads").split()


def test_a_bead_id_that_cannot_be_one_says_what_ids_look_like():
    with team(("bot1", "developer")) as srv:
        bead(srv, "Fix login", "developer")
        with tool_client(srv, "bot1") as tools:
            for wrong in ("FIX-LOGIN-001", "fix.login-001"):
                with pytest.raises(ToolRefused, match="bead ids are lower-case letters, digits and '-'"):
                    tools.call("claim", bead=wrong)
            with pytest.raises(ToolRefused, match="as inbox lists it"):
                tools.call("ack", id="../x")


def test_a_result_longer_than_a_ctl_line_still_completes_the_bead():
    with team(("bot1", "developer")) as srv:
        fix = bead(srv, "Fix login", "developer")
        text = "found it\n" * 800  # 7200 bytes: more than one ctl line holds (4000)
        with tool_client(srv, "bot1") as tools:
            tools.call("claim", bead=fix)
            assert tools.call("complete", bead=fix, result=text) == f"{fix}: completed"
        assert read(srv, f"beads/{fix}/result") == text
        assert read(srv, f"beads/{fix}/status").strip() == "completed"


def test_a_text_that_looks_like_an_option_is_refused_naming_it():
    with team(("lead", "developer")) as srv:
        with tool_client(srv, "lead") as tools:
            with pytest.raises(ToolRefused, match="description: 'requires_approval=true' would be read as the option"):
                tools.call("new_bead", title="t", role="developer", description="requires_approval=true")
            with pytest.raises(ToolRefused, match=r"shorten the description \(5000 bytes\)"):
                tools.call("new_bead", title="t", role="developer", description="d" * 5000)
        assert read(srv, "beads/list") == ""


def test_new_session_keeps_to_the_conductors_directory_through_links_and_absolute_paths():
    with team() as srv, tempfile.TemporaryDirectory(prefix="cond.") as home, \
            tempfile.TemporaryDirectory(prefix="elsewhere.") as elsewhere:
        home = os.path.realpath(home)
        os.mkdir(os.path.join(home, "work"))
        os.symlink(elsewhere, os.path.join(home, "out"))
        os.symlink(os.path.join(home, "work"), os.path.join(home, "in"))
        srv.run_cli("write", "agent/ctl", f"new sim {home} name=boss conductor")
        with tool_client(srv, "boss", conductor=True) as tools:
            for outside in ("out", "out/x/..", elsewhere, "/", "work/../.."):
                with pytest.raises(ToolRefused, match="outside your own directory"):
                    tools.call("new_session", backend="sim", cwd=outside)
            assert tools.call("new_session", backend="sim", cwd=os.path.join(home, "work"), name="w1") == "made session w1"
            assert tools.call("new_session", backend="sim", cwd="in", name="w2") == "made session w2"
            with pytest.raises(ToolRefused, match="backend: 'no such' is no backend name; give one as read backends"):
                tools.call("new_session", backend="no such")
        assert read(srv, "w2/cwd").strip() == os.path.join(home, "work"), "the link's target, checked, not the link"

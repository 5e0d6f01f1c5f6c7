"""The brief tells the truth about the tools: it names each one offered, and no other."""

from __future__ import annotations

import re

from anvilfs.brief import brief
from anvilfs.mcpserver.tools import offered


def test_the_brief_names_every_tool_offered_and_no_other():
    for conductor in (False, True):
        for worktree in (False, True):
            text = brief("bot1", "developer", conductor=conductor, worktree=worktree)
            named = set(re.findall(r"`([a-z_]+)`", text))
            assert named == {tool.name for tool in offered(conductor)}


def test_a_worktree_sessions_brief_says_how_its_branches_work_and_no_other_brief_does():
    text = brief("dev1", worktree=True)
    assert "git worktree of your own" in text and "no-change: WHY" in text and "REWORK_REQUEST" in text
    assert "worktree" not in brief("dev1") and "worktree" not in brief("lead", conductor=True)


def test_the_brief_promises_no_prompt_a_session_without_notify_never_gets():
    text = brief("bot1", "developer")
    assert "you are prompted about it" not in text and "made with notify is prompted" in text
    assert "up to its timeout" in brief("lead", conductor=True), "wait is bounded: the brief says so"

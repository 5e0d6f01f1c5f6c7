"""A session's role after a first turn that failed, with a command backend driven by the session's runner.

The role goes before the prompt of a turn that begins a conversation
(Agent.begins_conversation), so a conversation gets it once:
restart_after_failed_first_turn = true begins a new one, which gets it
again; false resumes the one the CLI kept, which had it; and if the CLI
had saved nothing, the prompt runs again with argv, beginning one, role and
all.

The program is scripted below, claude-like (--session-id refuses an id in
use, --resume one never saved), and keeps each conversation's prompts in a
file, which its answer shows whole: `out` tells which prompts, with or
without the role, each conversation got.
"""

from __future__ import annotations

import sys

from anvilfs.backends.command import CommandBackend
from anvilfs.config.model import CommandBackendConfig
from anvilfs.sessions import State
from harness.apps import until

ROLE = "You review code. Be terse."
KEEPING = """\
import os, sys
flag, conversation = sys.argv[1:3]
path = os.path.join(os.environ["KEEPING_STATE"], conversation)
if flag == "--session-id" and os.path.exists(path):
    sys.exit(f"session id {conversation} is already in use")
if flag == "--resume" and not os.path.exists(path):
    sys.exit(f"No conversation found with session ID: {conversation}")
prompt = sys.stdin.read()
if "fake:early" in prompt:
    sys.exit("cut short before it saved anything")
with open(path, "a") as f:
    f.write(f"<prompt>{prompt}</prompt>\\n")
if "fake:fail" in prompt:
    sys.exit("failing after it saved the prompt, as claude does")
with open(path) as f:
    print(f"[fake agent] conversation {conversation}, all its prompts:\\n" + f.read())
"""


def keeping(tmp_path, restart: bool) -> CommandBackend:
    script = tmp_path / "keeping.py"  # a file, not -c: argv's braces are placeholders
    script.write_text(KEEPING)
    (tmp_path / "state").mkdir()
    program = [sys.executable, str(script)]
    config = CommandBackendConfig(kind="command", argv=[*program, "--session-id", "{conversation}"],
                                  resume_argv=[*program, "--resume", "{conversation}"],
                                  env={"KEEPING_STATE": str(tmp_path / "state")}, restart_after_failed_first_turn=restart,
                                  missing_conversation_pattern="No conversation found with session ID")
    return CommandBackend("keeping", config)


async def after_a_failed_first_turn(running, tmp_path, first: str, *, restart: bool):
    """A session with a role whose first turn (`first`, carrying the role) failed, then had a second turn."""
    app = await running(backends={"keeping": keeping(tmp_path, restart)}, roles=lambda: {"reviewer": ROLE})
    s = app.sessions.new("keeping", str(tmp_path), name="rev", role="reviewer")
    app.sessions.submit("rev", first, "glenda")
    await until(lambda: s.turn_count == 1 and not s.busy)
    assert s.state is State.ERROR, s.status_line()
    await answered(app, s, "look at this")
    return app, s


async def answered(app, s, prompt: str) -> str:
    count = s.turn_count + 1
    app.sessions.submit(s.name, prompt, "glenda")
    await until(lambda: s.turn_count == count and not s.busy)
    assert s.state is State.AWAIT, s.status_line() + s.log_text()
    return s.out


def conversations(tmp_path) -> list[str]:
    return sorted(path.name for path in (tmp_path / "state").iterdir())


async def test_a_cli_that_keeps_no_failed_turn_begins_again_and_gets_the_role_again(running, tmp_path):
    app, s = await after_a_failed_first_turn(running, tmp_path, "fake:fail", restart=True)
    assert len(conversations(tmp_path)) == 2  # the failed one, and the one begun after it
    assert s.out.count(ROLE) == 1 and f"<prompt>{ROLE}\n\nlook at this</prompt>" in s.out
    assert "fake:fail" not in s.out
    out = await answered(app, s, "and this")
    assert out.count(ROLE) == 1 and out.endswith("<prompt>and this</prompt>\n\n")


async def test_a_kept_failed_first_turn_is_resumed_without_the_role_again(running, tmp_path):
    app, s = await after_a_failed_first_turn(running, tmp_path, "fake:fail", restart=False)
    assert len(conversations(tmp_path)) == 1
    assert s.out.count(ROLE) == 1, s.out  # from the failed turn the CLI kept
    assert f"<prompt>{ROLE}\n\nfake:fail</prompt>\n<prompt>look at this</prompt>" in s.out
    out = await answered(app, s, "and this")
    assert out.count(ROLE) == 1 and out.endswith("<prompt>look at this</prompt>\n<prompt>and this</prompt>\n\n")


async def test_a_first_turn_the_cli_never_saved_is_begun_again_with_the_role(running, tmp_path):
    app, s = await after_a_failed_first_turn(running, tmp_path, "fake:early", restart=False)
    assert s.out.count(ROLE) == 1 and f"<prompt>{ROLE}\n\nlook at this</prompt>" in s.out, s.out
    assert "has no conversation" in s.log_text() and "runs again with argv, beginning the conversation" in s.log_text()
    out = await answered(app, s, "and this")
    assert out.count(ROLE) == 1 and out.endswith("<prompt>and this</prompt>\n\n")

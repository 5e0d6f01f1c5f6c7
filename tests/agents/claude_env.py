"""How the tests point the real Claude Code CLI at the Anthropic stub (shared by the command, tmux and review tests).

    with agent_server(stub, "claude", env=claude_env(stub), home=claude_home) as srv: ...

claude_env: the environment that sends every model call of Claude Code to
the stub and nothing anywhere else (measured on 2.1.332: with these it makes
no other lookups and gives up on the first failed call instead of retrying).
claude_home: the settings a private HOME needs (none beyond the defaults
today; kept so that a need found later has one place to go).
"""

from __future__ import annotations

from pathlib import Path

from stubs import StubModels


def claude_env(stub: StubModels) -> dict[str, str]:
    """Claude Code's environment for a stub: its API at the stub, a dummy key, no side traffic, no retries."""
    return {
        "ANTHROPIC_BASE_URL": stub.url,
        "ANTHROPIC_AUTH_TOKEN": "dummy",  # any token: the stub checks none, and there is no login to do
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",  # no telemetry, update checks or error reports
        "CLAUDE_CODE_MAX_RETRIES": "0",  # an error from the stub ends the turn now, not after minutes of retries
    }


def claude_home(home: Path) -> None:
    """Write Claude Code's settings into a fresh HOME (for agent_server's home=)."""
    home.mkdir(parents=True, exist_ok=True)

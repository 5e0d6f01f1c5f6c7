"""How the tests point the real Claude Code CLI at the Anthropic stub (shared by the command, tmux and review tests).

    with agent_server(stub, "claude", env=claude_env(stub)) as srv: ...

With these (measured on 2.1.332) Claude Code sends every request to the stub
and nothing anywhere else, and an error from the stub ends its turn at once
instead of after about three minutes of retries. Print mode (`claude -p`)
needs nothing in its HOME: a fresh one works (it writes ~/.claude.json and
keeps each conversation in ~/.claude/projects/<cwd>/<id>.jsonl).
"""

from __future__ import annotations

from stubs import Request, StubModels


def claude_env(stub: StubModels) -> dict[str, str]:
    """Claude Code's environment for a stub: its API at the stub, a dummy key, no side traffic, no retries."""
    return {
        "ANTHROPIC_BASE_URL": stub.url,
        "ANTHROPIC_AUTH_TOKEN": "dummy",  # sent as "Authorization: Bearer dummy"; there is no login to do
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",  # no telemetry, update checks or error reports
        # by default it retries 10 times: about 185 s to fail on a 500 or a refused connection
        "CLAUDE_CODE_MAX_RETRIES": "0",
    }


def is_main(request: Request) -> bool:
    """A turn's own request offers the tools; a side request (a title, a summary) would offer none."""
    return bool(request.tools)


def main_requests(stub: StubModels) -> list[Request]:
    """The conversations' requests, side requests left out (2.1.332 made none with claude_env's settings)."""
    return [request for request in stub.requests("anthropic") if is_main(request)]


# What the Anthropic stub records it reported for each request (Request.usage, the API's keys), by the usage
# file's keys: Anthropic's input_tokens are the fresh ones already (anvilfs/usage/model.py)
USAGE_KEYS = {"input_tokens": "input_tokens", "output_tokens": "output_tokens",
              "cache_read_tokens": "cache_read_input_tokens", "cache_write_tokens": "cache_creation_input_tokens"}


def reported(requests: list[Request]) -> dict[str, int]:
    """What the stub reported for these requests, summed, in the usage file's keys."""
    return {ours: sum(request.usage.get(theirs, 0) for request in requests) for ours, theirs in USAGE_KEYS.items()}

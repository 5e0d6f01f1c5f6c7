"""The static brief an agent is given: who it is and how to work with the others through the tools.

It is the MCP server's `instructions`, and where a CLI can append to its
system prompt without replacing it (Claude Code's --append-system-prompt),
it goes there too. It says nothing that changes during the session: Claude
Code keeps the system prompt of its first request, so live state (the beads
held, the inbox) comes from the `my_work` tool, never from here.
"""

from __future__ import annotations

# The tools `anvilfs mcp` offers (anvilfs/mcpserver/tools.py has them; a test holds the two lists equal). Here, apart
# from the tools, so that the backends can name them to a CLI (--allowedTools) without importing the client.
TOOL_NAMES = ("ready", "claim", "my_work", "bead", "result", "complete", "fail", "new_bead", "add_to_convoy",
              "send_mail", "inbox", "read_message", "ack", "request_approval", "read", "list")
CONDUCTOR_TOOL_NAMES = ("prompt", "new_session", "wait")  # a session made with the `conductor` option also gets


def tool_names(conductor: bool) -> tuple[str, ...]:
    return TOOL_NAMES + CONDUCTOR_TOOL_NAMES * conductor

BRIEF = """\
You are the anvilfs session {name}{role_part}. anvilfs coordinates you with other agents and a human through \
shared work units (beads), convoys (groups of beads with shared context) and mail. Use its tools (mcp__anvilfs__*):
- Work: `ready` lists the beads you can claim; `claim` takes one (another session may win: then take the next); \
`bead` shows what it asks and its context; do the work; `result` records what you found or made; `complete` \
ends it (`fail` with a reason if you cannot). `my_work` shows what you hold and your inbox, now.
- Beads of others: `new_bead` (with depends_on for order, convoy to group), `add_to_convoy`.
- Mail: `inbox`, `read_message`, then `ack` each message you have handled. `send_mail` writes to a session or \
human. For a decision that needs a person, `request_approval`, then end your turn: the APPROVAL_RESPONSE comes \
to your inbox (a session made with notify is prompted about it; else `inbox` shows it at your next turn).
- `read` and `list` show any file of the tree (beads/list, convoys/ID/context, ...).{conductor_part}{worktree_part}
A refused call says why; do not retry it unchanged."""

CONDUCTOR = """
- You coordinate: `new_session` starts an agent in a directory inside yours, `prompt` gives a session work, \
`wait` waits for its turn to end, up to its timeout (its answer is then in SESSION/out)."""


WORKTREE = """
- Your directory is a git worktree of your own: other agents work in theirs. Hold one bead at a time: your \
`claim` checks out the bead's branch (`my_work` names it), and `complete` commits what you left uncommitted and \
queues the branch for merging (if nothing needed changing, complete with result `no-change: WHY`). Do not switch \
branches yourself. A REWORK_REQUEST in your inbox means your branch could not be merged: claim that bead again \
and resolve the conflict markers it names, then complete it."""


def brief(name: str, role: str = "", conductor: bool = False, worktree: bool = False) -> str:
    return BRIEF.format(name=name, role_part=f", role {role}" if role else "",
                        conductor_part=CONDUCTOR if conductor else "", worktree_part=WORKTREE if worktree else "")

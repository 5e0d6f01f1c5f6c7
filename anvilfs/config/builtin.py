"""Backends anvilfs knows without configuration; each works once its program is installed.

A user's [backends.NAME] table of the same name replaces one of these whole.
Where a CLI can resume a conversation by id, {conversation} (made per
session) keeps each session's turns in one conversation.
"""

from __future__ import annotations

BUILTIN_BACKENDS: dict[str, dict] = {
    "claude": {
        "kind": "command",
        # Print mode has no one to grant a permission, so without a mode every edit is refused.
        # acceptEdits lets it edit files (and mkdir/touch/mv...) in its working directory only;
        # any other program, and any path outside it, is still refused.
        "argv": ["claude", "-p", "--permission-mode", "acceptEdits", "--session-id", "{conversation}"],
        "resume_argv": ["claude", "-p", "--permission-mode", "acceptEdits", "--resume", "{conversation}"],
        "description": "Claude Code, print mode, may edit files in its cwd; each turn resumes its conversation",
    },
    "codex": {
        "kind": "command",
        # exec asks for no approvals; workspace-write lets codex's tools write in the session's
        # cwd (and /tmp) inside its sandbox, nowhere else. Its default, read-only, is no coding
        # agent, and a resumed session does not keep its first turn's sandbox: both runs say it.
        "argv": ["codex", "exec", "--sandbox", "workspace-write", "--skip-git-repo-check", "-"],
        "resume_argv": ["codex", "exec", "--sandbox", "workspace-write", "--skip-git-repo-check",
                        "resume", "{conversation}", "-"],
        # codex names its sessions itself; the header it prints on stderr has the id. Each
        # turn's own stderr: two first turns at once cannot take each other's.
        "conversation_pattern": r"(?m)^session id: ([0-9a-fA-F-]{36})$",
        # An API it cannot reach makes codex wait for ever ("Reconnecting... waiting for
        # network"), retries or not: an hour bounds that and leaves a long task its time.
        "timeout": 3600,
        "description": "OpenAI Codex CLI (exec, workspace-write sandbox); each turn resumes the session's codex session",
    },
    "gemini": {
        "kind": "command",
        "argv": ["gemini", "--prompt", "{prompt}"],
        "prompt": "argument",
        "description": "Gemini CLI, one prompt per run (no memory between turns)",
    },
    "llm": {
        "kind": "command",
        "argv": ["llm"],
        "resume_argv": ["llm", "--cid", "{conversation}"],
        # llm names the conversation itself; its log tells the id (first turns run one at a time for it)
        "conversation_argv": ["llm", "logs", "list", "--json", "-n", "1"],
        "conversation_pattern": r'"conversation_id": "([^"]+)"',
        "one_at_a_time": True,  # two llm runs at once can fail writing its logs.db ("database is locked")
        "description": "Simon Willison's llm; each turn continues the session's own conversation by its id",
    },
    "ollama": {
        "kind": "command",
        "argv": ["ollama", "run", "{model}"],
        "description": "ollama run MODEL (needs model=); no memory between turns",
    },
    "aider": {
        "kind": "command",
        "argv": ["aider", "--yes-always", "--no-pretty", "--no-stream", "--restore-chat-history", "--message", "{prompt}"],
        "prompt": "argument",
        "description": "aider, one message per run; chat history restored from the working directory",
    },
    "sim": {
        "kind": "sim",
        "description": "simulated agent for demos and tests; its answers say so",
    },
    "external": {
        "kind": "external",
        "description": "nothing is started: the session's owner (a conductor) writes its status and answers",
    },
}

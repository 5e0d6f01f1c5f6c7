"""Backends anvilfs knows without configuration; each works once its program is installed.

A user's [backends.NAME] table of the same name replaces one of these whole.
Where a CLI can resume a conversation by id, {conversation} (made per
session) keeps each session's turns in one conversation.
"""

from __future__ import annotations

BUILTIN_BACKENDS: dict[str, dict] = {
    "claude": {
        "kind": "command",
        "argv": ["claude", "-p", "--session-id", "{conversation}"],
        "resume_argv": ["claude", "-p", "--resume", "{conversation}"],
        "description": "Claude Code, print mode; each turn resumes the session's conversation",
    },
    "codex": {
        "kind": "command",
        "argv": ["codex", "exec", "--skip-git-repo-check", "-"],
        # codex names its sessions itself and prints the id in the header on stderr
        "resume_argv": ["codex", "exec", "--skip-git-repo-check", "resume", "{conversation}", "-"],
        "conversation_pattern": r"session id: ([0-9a-fA-F-]{36})",
        "description": "OpenAI Codex CLI; each turn resumes the session's own codex session by its id",
    },
    "gemini": {
        "kind": "command",
        # Headless because stdin is no terminal; the prompt comes on stdin (argv would show it in ps).
        # auto_edit: its file tools (write_file, replace) run without asking, shell commands are not
        # offered. In a folder it does not trust, Gemini CLI refuses to run headless (README: backends).
        "argv": ["gemini", "--approval-mode", "auto_edit", "--session-id", "{conversation}"],
        "resume_argv": ["gemini", "--approval-mode", "auto_edit", "--resume", "{conversation}"],
        "env": {"NO_COLOR": "1"},  # its fatal errors come in red otherwise
        # A failed model call ends with "An unexpected critical error occurred:[object Object]", a
        # failed resume with advice: the API's own text, or why the resume failed, is further up.
        "error_pattern": r"(?:Error when talking to Gemini API.*? (?=\w*Error: )|(?=Error resuming session: ))(.+)",
        "description": "Gemini CLI, headless; each turn resumes the session's conversation; edits files (auto_edit)",
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

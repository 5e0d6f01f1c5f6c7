"""Backends anvilfs knows without configuration; each works once its program is installed.

A user's [backends.NAME] table of the same name replaces one of these whole,
unless it says `extends = "NAME"`: a table with `extends` starts from that
built-in's keys and gives only those it changes (load.py).
Where a CLI can resume a conversation by id, {conversation} (made per
session) keeps each session's turns in one conversation.
"""

from __future__ import annotations

# print mode's events, one JSON object a line, text as it comes ("claude-json")
CLAUDE_EVENTS = ["--output-format", "stream-json", "--verbose", "--include-partial-messages"]

BUILTIN_BACKENDS: dict[str, dict] = {
    "claude": {
        "kind": "command",
        # Print mode has no one to grant a permission, so without a mode every edit is refused.
        # acceptEdits lets it edit files (and mkdir/touch/mv...) in its working directory only;
        # any other program, and any path outside it, is still refused.
        "argv": ["claude", "-p", *CLAUDE_EVENTS, "--permission-mode", "acceptEdits", "--session-id", "{conversation}"],
        "resume_argv": ["claude", "-p", *CLAUDE_EVENTS, "--permission-mode", "acceptEdits", "--resume", "{conversation}"],
        # its events, read by backends/output_claude.py: `stream` shows the turn as it goes, `out` is the
        # result alone, and the result says what the run spent
        "output_format": "claude-json",
        # Claude Code stops a run whose cost passes this (checked after each request): one turn cannot
        # overspend the session's budgets by more than a request
        "budget_argv": ["--max-budget-usd", "{budget_usd}"],
        # Claude Code saves a prompt as soon as it starts on it: a first turn that failed or was cut short is
        # resumed, unless it was cut short before that (in its first second), when --resume says so.
        "restart_after_failed_first_turn": False,
        "missing_conversation_pattern": r"(?m)^No conversation found with session ID",
        "mcp": True,  # anvilfs's tools: backends/agent_tools.py
        "description": "Claude Code, print mode, may edit files in its cwd; each turn resumes its conversation",
    },
    "claude-tmux": {
        "kind": "tmux",
        "argv": ["claude", "--session-id", "{conversation}"],
        "resume_argv": ["claude", "--resume", "{conversation}"],  # --session-id refuses an id in use
        "turn_end": "hook",
        "mcp": True,  # anvilfs's tools: backends/agent_tools.py
        "usage": "claude-transcript",  # tokens from its conversation's file; it says no cost
        "description": "Claude Code's own terminal UI in tmux (tmux attach to watch); its hooks end the turns "
                       "and hand in the answers (hooks/README.md)",
    },
    "codex": {
        "kind": "command",
        # exec asks for no approvals; workspace-write lets codex's tools write in the session's
        # cwd (and /tmp) inside its sandbox, nowhere else. Its default, read-only, is no coding
        # agent, and a resumed session does not keep its first turn's sandbox: both runs say it.
        # --json: its events on stdout (backends/output_codex.py): the answer, tool calls for `stream`, the
        # tokens spent. codex names its sessions itself: the first event has the id (thread.started), in
        # each turn's own output, so two first turns at once cannot take each other's.
        "argv": ["codex", "exec", "--json", "--sandbox", "workspace-write", "--skip-git-repo-check", "-"],
        "resume_argv": ["codex", "exec", "--json", "--sandbox", "workspace-write", "--skip-git-repo-check",
                        "resume", "{conversation}", "-"],
        "output_format": "codex-json",
        # codex keeps a failed or interrupted prompt in its session (the id is in the failed turn's output),
        # unless cut short before it wrote the session's file, when resume says so.
        "restart_after_failed_first_turn": False,
        "missing_conversation_pattern": r"no rollout found for thread id",
        "mcp": True,  # anvilfs's tools: backends/agent_tools.py
        # An API it cannot reach makes codex wait for ever ("Reconnecting... waiting for
        # network"), retries or not: an hour bounds that and leaves a long task its time.
        "timeout": 3600,
        "description": "OpenAI Codex CLI (exec, workspace-write sandbox); each turn resumes the session's codex session",
    },
    "gemini": {
        "kind": "command",
        # Headless because stdin is no terminal; the prompt comes on stdin (argv would show it in ps).
        # auto_edit: its file tools (write_file, replace) run without asking, shell commands are not
        # offered. In a folder it does not trust, Gemini CLI refuses to run headless (README: backends).
        # stream-json: its events on stdout (backends/output_gemini.py): the answer, tool calls for `stream`,
        # the tokens spent, a failed model call's own text.
        "argv": ["gemini", "--approval-mode", "auto_edit", "--output-format", "stream-json",
                 "--session-id", "{conversation}"],
        "resume_argv": ["gemini", "--approval-mode", "auto_edit", "--output-format", "stream-json",
                        "--resume", "{conversation}"],
        "output_format": "gemini-json",
        "env": {"NO_COLOR": "1"},  # its fatal errors come in red otherwise
        "mcp": True,  # anvilfs's tools: backends/agent_tools.py
        # A failed model call's text is in the output's result; should none come, its stderr ends with "An
        # unexpected critical error occurred:[object Object]", a failed resume (which stops before any
        # output) with advice: the API's own text, or why the resume failed, is further up.
        # A failed first prompt is dropped from its session, which it then will neither resume nor start.
        "restart_after_failed_first_turn": True,
        "reason_pattern": r"(?:Error when talking to Gemini API.*? (?=\w*Error: )|(?=Error resuming session: ))(.+)",
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
        # --yes-always answers aider's questions, so the ones it must not answer yes are settled first: no
        # update check (it would pip-install a new aider), no analytics opt-in, no release notes in a browser,
        # no install of Playwright and Chromium for a URL in a prompt (aider fetches it plainly instead).
        # Streamed (aider's default): the answer goes to stdout as it comes, not re-wrapped at 80 columns.
        # Each session has its own chat history file in its cwd ({conversation}: a new one after clear),
        # so two sessions in one directory keep two conversations.
        "argv": ["aider", "--yes-always", "--no-pretty", "--no-fancy-input", "--no-check-update", "--no-analytics",
                 "--no-show-release-notes", "--disable-playwright",
                 "--chat-history-file", ".aider.chat.history.anvilfs-{conversation}.md", "--restore-chat-history",
                 "--message", "{prompt}"],
        "prompt": "argument",
        # its text is the answer, as it comes; the "Tokens: ... Cost: ..." lines after each request are what
        # the turn spent (backends/output_aider.py)
        "output_format": "aider-text",
        # aider writes a prompt to its chat history as it starts on it: a first turn that failed or was cut
        # short is restored by the next run from the same file (no resume to fail: a missing file is a new chat)
        "restart_after_failed_first_turn": False,
        # aider exits 0 when the model call failed (after retrying a 429 or 5xx for about a minute), its
        # output ending with litellm's error and aider's word on it; an error that was retried ("Retrying
        # in") or followed by an answer (the "Tokens:" line) is not the end of the turn
        "error_pattern": r"(?m)^(litellm\.\w+Error: .*(?:\n(?!Retrying in |Tokens: ).+)*)\s*\Z",
        "description": "aider, one message per run; each session's chat history is restored from its cwd",
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

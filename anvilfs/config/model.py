"""The configuration file's schema (pydantic v2), one model per backend kind.

    [backends.mybot]
    kind = "command"            # command | tmux | openai | sim | external
    argv = ["mybot", "--quiet"]

    [backends.claude-slow]
    extends = "claude"          # a built-in's keys, these over them (load.py)
    timeout = 3600

Placeholders in argv and resume_argv: {prompt} {model} {cwd} {name}
{conversation} (an id anvilfs makes per session, for CLIs that resume a
conversation by id). Unknown placeholders are an error at load time. A
command backend's budget_argv has {budget_usd}, the dollars left, alone.
"""

from __future__ import annotations

import os
import re
import string
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from . import repos as _repos
from .repos import RepoConfig

if TYPE_CHECKING:
    from ..worktrees.model import MergeConfig

# the ways a command backend's stdout can be read: backends/output_formats.py has a reader for each
OUTPUT_FORMATS = frozenset({"text", "claude-json", "codex-json", "gemini-json", "aider-text"})
PLACEHOLDERS = frozenset({"prompt", "model", "cwd", "name", "conversation"})
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")


def placeholders(words: list[str]) -> set[str]:
    found = set()
    for word in words:
        for _, field, _, _ in string.Formatter().parse(word):
            if field is not None:
                found.add(field)
    return found


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _check_argv(argv: list[str] | None) -> list[str] | None:
    if argv is None:
        return None
    if not argv or not argv[0]:
        raise ValueError("must name a program first, e.g. [\"claude\", \"-p\"]")
    unknown = placeholders(argv) - PLACEHOLDERS
    if unknown:
        raise ValueError(f"unknown placeholder {{{sorted(unknown)[0]}}}; known: {', '.join(sorted(PLACEHOLDERS))}")
    return argv


class CommandBackendConfig(_Strict):
    """A per-turn command: each prompt runs argv; stdout is the answer."""

    kind: Literal["command"]
    argv: list[str]
    resume_argv: list[str] | None = None  # turns after the first (continue the conversation)
    prompt: Literal["stdin", "argument"] = "stdin"  # argument: argv holds {prompt}
    env: dict[str, str] = {}
    timeout: float | None = Field(default=None, gt=0)  # seconds a turn may take
    # For CLIs that choose their conversation's id: a regex whose first group is it, searched
    # after the turn that began a conversation in its stderr, or in conversation_argv's stdout.
    conversation_pattern: str = ""
    conversation_argv: list[str] | None = None
    # For CLIs that exit 0 after reporting a failure (aider): a regex searched in the end of stdout
    # (its last 4 KiB) when the program exits 0; a match fails the turn, naming the match (its group).
    error_pattern: str = ""
    # turns one at a time across the backend's sessions: for a CLI whose own state breaks when two
    # runs overlap (llm's logs.db: "database is locked")
    one_at_a_time: bool = False
    # For a CLI whose last line on failure says nothing of why (gemini): a regex whose first group (or
    # whole match), at its last match in stderr, names a turn that exited non-zero instead of that line.
    reason_pattern: str = ""
    # A first turn that failed or was cut short: true, the next turn begins a new conversation (for a CLI that
    # keeps no such turn, gemini); false, the next resumes it (a CLI that kept the prompt: claude, codex).
    restart_after_failed_first_turn: bool = True
    # With false: a regex that, in the stderr of that next (resumed) turn when it fails, says the CLI saved no
    # conversation (it was cut short as it started): the prompt then runs again at once with argv.
    missing_conversation_pattern: str = ""
    # Give the agent anvilfs's tools (`anvilfs mcp`, the brief, the shell path): for claude, codex and gemini
    # (backends/agent_tools.py); the built-ins of those say true.
    mcp: bool = False
    # How to read stdout (backends/output_formats.py): "text" (it is the answer, as it comes), or the name of
    # a CLI's structured output (its events shown in `stream`, the answer and what the turn spent taken from
    # them); a built-in that says one also has the argv flags that ask its CLI for it.
    output_format: str = "text"
    # For a CLI that can cap what one run spends (Claude Code's --max-budget-usd): words appended to the run's
    # argv when the session's budgets leave it a sum of money, {budget_usd} the dollars left; nothing without one.
    budget_argv: list[str] | None = None
    description: str = ""

    _argv = field_validator("argv", "resume_argv", "conversation_argv")(_check_argv)

    @field_validator("output_format")
    @classmethod
    def _known_format(cls, name: str) -> str:
        if name not in OUTPUT_FORMATS:
            raise ValueError(f"unknown output_format {name!r}; known: {', '.join(sorted(OUTPUT_FORMATS))}")
        return name

    @field_validator("budget_argv")
    @classmethod
    def _budget(cls, words: list[str] | None) -> list[str] | None:
        if words is None:
            return None
        found = placeholders(words)
        if found != {"budget_usd"}:
            wrong = f"has {{{sorted(found - {'budget_usd'})[0]}}}" if found - {"budget_usd"} else "lacks {budget_usd}"
            raise ValueError(f"{wrong}: budget_argv takes the dollars left as {{budget_usd}} and nothing else, "
                             'e.g. ["--max-budget-usd", "{budget_usd}"]')
        return words

    @field_validator("conversation_pattern", "error_pattern", "reason_pattern", "missing_conversation_pattern")
    @classmethod
    def _pattern(cls, pattern: str) -> str:
        try:
            groups = re.compile(pattern).groups
        except re.error as exc:
            raise ValueError(f"not a regular expression: {exc}") from None
        if groups > 1:
            raise ValueError("use at most one group (the part to take); make others (?:...)")
        return pattern

    @model_validator(mode="after")
    def _conversation_lookup(self):
        if self.conversation_argv and not self.conversation_pattern:
            raise ValueError("conversation_argv needs conversation_pattern, the regex that finds the id in its output")
        if self.conversation_argv and "prompt" in placeholders(self.conversation_argv):
            raise ValueError("conversation_argv runs after the turn: it cannot have {prompt}")
        if self.conversation_argv and not self.restart_after_failed_first_turn:
            raise ValueError("restart_after_failed_first_turn = false needs the id in the failed turn's own stderr "
                             "(conversation_pattern alone): after a failed turn, conversation_argv's latest "
                             "conversation may be another's")
        return self

    @model_validator(mode="after")
    def _prompt_placement(self):
        for argv in filter(None, (self.argv, self.resume_argv)):  # conversation_argv: checked above
            has = "prompt" in placeholders(argv)
            if self.prompt == "argument" and not has:
                raise ValueError('prompt = "argument" needs {prompt} in argv')
            if self.prompt == "stdin" and has:
                raise ValueError('{prompt} in argv needs prompt = "argument"')
        return self


class TmuxBackendConfig(_Strict):
    """An interactive program in a tmux window; prompts are typed in."""

    kind: Literal["tmux"]
    argv: list[str]
    resume_argv: list[str] | None = None  # a program started again once its conversation had a prompt
    turn_end: Literal["hook", "quiet"] = "hook"  # hook: the agent writes await to status
    quiet_seconds: float = Field(default=5.0, gt=0)  # quiet: pane unchanged this long ends a turn
    ready_seconds: float = Field(default=2.0, ge=0)  # time the program gets to start before the first prompt
    env: dict[str, str] = {}
    mcp: bool = False  # as a command backend's
    # where a turn's usage is read: "claude-transcript" (Claude Code's conversation file,
    # backends/claude_transcript.py); "" none (each turn unpriced, no tokens)
    usage: Literal["", "claude-transcript"] = ""
    description: str = ""

    _argv = field_validator("argv", "resume_argv")(_check_argv)


class OpenAIBackendConfig(_Strict):
    """An OpenAI-compatible chat-completions endpoint, streamed."""

    kind: Literal["openai"]
    url: str  # base URL, e.g. http://127.0.0.1:11434/v1
    model: str = ""  # default model when the session gives none
    api_key_env: str = ""  # name of the environment variable holding the key
    system: str = ""
    timeout: float = Field(default=600.0, gt=0)
    description: str = ""

    @field_validator("url")
    @classmethod
    def _url(cls, url: str) -> str:
        if not url.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return url.rstrip("/")


class SimBackendConfig(_Strict):
    """The simulated agent (answers say so)."""

    kind: Literal["sim"]
    step_delay: float = Field(default=0.02, ge=0)
    description: str = ""


class ExternalBackendConfig(_Strict):
    """A session whose owner outside anvilfs (a conductor) is the agent: anvilfs starts nothing."""

    kind: Literal["external"]
    description: str = ""


BackendConfig = Annotated[
    CommandBackendConfig | TmuxBackendConfig | OpenAIBackendConfig | SimBackendConfig | ExternalBackendConfig,
    Field(discriminator="kind"),
]


class LimitsConfig(_Strict):
    max_sessions: int = Field(default=256, ge=1)
    max_prompt_bytes: int = Field(default=1 << 20, ge=1)
    max_inbox: int = Field(default=1000, ge=1)  # unacknowledged messages per participant
    max_mail_bytes: int = Field(default=64 << 10, ge=256)  # one message as written to `mail`


class MailConfig(_Strict):
    """Notices and approval reminders."""

    notice: str = ("{count} new message{s}: {list}\n"
                   "Read them with `cat inbox/ID.json` in your anvilfs directory; `rm` one to acknowledge it.")
    # to a session whose agent has anvilfs's tools (a backend with mcp = true): the tools, not files
    tools_notice: str = ("{count} new message{s}: {list}\n"
                         "Read each with the anvilfs tool read_message (mcp__anvilfs__read_message), act on it, then "
                         "acknowledge it with ack (mcp__anvilfs__ack).")
    approval_reminder: float = Field(default=3600.0, ge=0)  # seconds; 0: never announced again

    @field_validator("notice", "tools_notice")
    @classmethod
    def _placeholders(cls, notice: str) -> str:
        unknown = placeholders([notice]) - {"count", "s", "list"}
        if unknown:
            raise ValueError(f"unknown placeholder {{{sorted(unknown)[0]}}}; known: {{count}} {{s}} {{list}}")
        return notice


class RestartConfig(_Strict):
    """How sessions whose agent crashed are restarted (not ephemeral ones)."""

    enabled: bool = True
    first_delay: float = Field(default=1.0, gt=0)  # seconds before the first restart
    max_delay: float = Field(default=60.0, gt=0)  # the backoff doubles up to this
    max_restarts: int = Field(default=5, ge=0)  # in a row, without a turn that worked


class Config(_Strict):
    backends: dict[str, BackendConfig] = {}
    limits: LimitsConfig = LimitsConfig()
    restart: RestartConfig = RestartConfig()
    mail: MailConfig = MailConfig()
    repos: dict[str, RepoConfig] = {}  # by normalised path (repos.py)
    _repo_index: dict[str, RepoConfig] = PrivateAttr(default_factory=dict)  # and by real path, read at load

    _repo_paths = field_validator("repos", mode="before")(_repos.check_paths)
    _repo_names = field_validator("repos")(_repos.normalised)

    def model_post_init(self, _context: object) -> None:
        self._repo_index = _repos.index(self.repos)

    def merge_config(self, repo: str) -> MergeConfig:
        """The merge settings of the repository at the absolute path repo: its [repos."PATH"] table, found by
        the path as given or its real path; the defaults for a repository the file does not name."""
        if not os.path.isabs(repo):
            raise ValueError(f"merge_config takes an absolute path, not {repo!r}")
        from ..worktrees.model import MergeConfig  # noqa: PLC0415 - the engine's package loads trio

        table = self._repo_index.get(os.path.normpath(repo))
        if table is None:
            table = self._repo_index.get(os.path.realpath(repo))
        return table.merge_config() if table is not None else MergeConfig()

    @field_validator("backends")
    @classmethod
    def _names(cls, backends: dict) -> dict:
        for name in backends:
            if not _NAME.match(name):
                raise ValueError(f"backend name {name!r}: use letters, digits, '.', '_' or '-'")
        return backends

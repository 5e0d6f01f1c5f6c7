"""The per-turn command backend: every prompt runs a configured program.

    [backends.claude]
    kind = "command"
    argv = ["claude", "-p", "--session-id", "{conversation}"]
    resume_argv = ["claude", "-p", "--resume", "{conversation}"]

The first turn of a conversation runs `argv`, later ones `resume_argv` (when
set), and `budget_argv` after either while the session's budgets leave the
turn a sum of money ({budget_usd}: Claude Code's --max-budget-usd). The
prompt goes on stdin, or as one argv element for {prompt}; it is data and
never reaches a shell. stdout is the answer, streamed as it comes, or a
CLI's structured output, read by its reader (output_format:
output_formats.py); stderr goes to the transcript only. Each turn's process leads its own
process group, so an interrupt takes its children with it.

A CLI that names its conversations itself (llm, codex) is configured with
conversation_pattern (and conversation_argv): after the turn that began a
conversation, its id is read from stderr or that command's output
(conversation.py) and is {conversation} from then on.

How a turn ends:
    exit 0                      the answer is complete, unless the end of stdout matches
                                error_pattern: TurnFailed(the match), for a CLI that
                                exits 0 after reporting a failure (aider)
    exit N                      TurnFailed("exit status N: <last stderr line>"), or the
                                last stdout line when stderr said nothing (Claude
                                Code prints its API errors on stdout); with
                                reason_pattern, its last match in stderr if any
    a signal not sent by us     AgentExited("killed by signal SIGSEGV")
    config.timeout passed       TurnFailed("timed out after N s"), process killed
    cancelled (interrupt/stop)  process group killed, trio.Cancelled goes on

A first turn that failed or was cut short (interrupted, timed out):
    restart_after_failed_first_turn = true (the default)
                                the next turn begins a new conversation under a
                                new id, the role sent again. For a CLI that keeps
                                no such turn: Gemini CLI drops a failed prompt
                                from its session, and then will neither resume
                                the id nor start it.
    ... = false                 the next turn resumes it (the id learnt from the
                                failed turn's stderr, for a CLI that names its
                                own), for a CLI that saves the prompt as it goes:
                                Claude Code, codex and aider keep it, and a new
                                id would orphan that conversation, which has
                                the role already: it is not sent again. Cut
                                short as it started, such a CLI may have saved
                                nothing; that resume then fails saying so in its
                                stderr (missing_conversation_pattern): the turn
                                raises NothingToResume, and the runner runs the
                                prompt again at once, with argv and the role,
                                beginning it.
begins_conversation (the session's role goes before the prompt) is true
while the next run is argv's.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import uuid
from collections.abc import Callable

import trio

from ..config.model import CommandBackendConfig, placeholders
from ..sessions.backend import Agent, AgentExited, AgentFailed, Backend, NothingToResume, Output, SessionInfo, TurnFailed
from .conversation import TurnGate, found_in, look_up
from .agent_tools import Wiring, wire, wiring_for, with_tools
from .command_pipes import Tail, feed, killpg, pump, reap, signal_name
from .output_formats import OutputReader, names_conversations, reader_for

DRAIN_GRACE = 1.0  # seconds to finish reading after exit (a leftover child may hold the pipes)
STDERR_KEEP = 64 * 1024  # bytes of stderr kept for the transcript
STDOUT_KEEP = 4096  # bytes of stdout's end kept to explain a failure that stderr does not

# What to set when a placeholder has no value; cwd and name always have one.
_HINTS = {
    "model": "give the session a model (model=NAME when creating it)",
    "conversation": "the session has no conversation id",
}


def _missing(config: CommandBackendConfig) -> str | None:
    """Why the program cannot be run, or None."""
    program = config.argv[0]
    if placeholders([program]):
        return None  # only a session can fill it in; the turn will tell
    # subprocess searches the PATH of the child's environment, so check that one
    path = config.env.get("PATH", os.environ.get("PATH", os.defpath))
    if shutil.which(program, path=path) is None:
        return f"missing: {program} not found on PATH"
    return None


class CommandBackend(Backend):
    kind = "command"
    per_turn = True

    def __init__(self, name: str, config: CommandBackendConfig):
        super().__init__(name)
        self.config = config
        self.description = config.description
        self.gate = TurnGate()  # shared by this backend's agents
        self.gives_tools = config.mcp and wiring_for(config.argv[0]) is not None

    def availability(self) -> str:
        return _missing(self.config) or "ready"

    def agent(self, session: SessionInfo, saved: dict | None = None) -> Agent:
        return CommandAgent(session, self.config, saved or {}, self.gate)


class CommandAgent(Agent):
    def __init__(self, session: SessionInfo, config: CommandBackendConfig, saved: dict, gate: TurnGate | None = None):
        self.session = session
        self.config = config
        self.gate = gate or TurnGate()
        self.turns = int(saved.get("turns", 0))  # turns run in this conversation
        # clear() needs a fresh id (claude refuses a reused --session-id), so the
        # agent owns the id from here on and keeps it in saved().
        self.conversation = saved.get("conversation") or session.conversation or str(uuid.uuid4())
        self.pid: int | None = None
        self._process: trio.Process | None = None
        self._signalled = ""  # the signal stop()/kill() sent to the running turn
        self._stderr = Tail(STDERR_KEEP)  # the last run's
        # the first turn failed and its conversation was kept (restart_after_failed_first_turn = false):
        # the CLI may have saved it, or not (cut short as it started)
        self.unsure = bool(saved.get("unsure"))
        self._wiring: Wiring | None = None
        # what the output's reader keeps for the conversation's next run (output_formats.py: reader.memory)
        self.memory: dict = dict(saved.get("memory") or {})
        self._reader: OutputReader | None = None  # the last run's

    async def start(self) -> None:
        why = _missing(self.config)
        if why:
            raise AgentFailed(why)

    def clear(self) -> None:
        self.turns = 0
        self.conversation = str(uuid.uuid4())
        self.unsure = False
        self.memory = {}

    def saved(self) -> dict:
        return ({"turns": self.turns, "conversation": self.conversation} | ({"unsure": True} if self.unsure else {})
                | ({"memory": self.memory} if self.memory else {}))

    async def stop(self) -> None:
        self._signal(signal.SIGTERM)

    async def kill(self) -> None:
        self._signal(signal.SIGKILL)

    def _signal(self, sig: signal.Signals) -> None:
        if self._process is not None and self._process.returncode is None:
            self._signalled = sig.name
            killpg(self._process, sig)

    # ------------------------------------------------------------ a turn

    async def turn(self, prompt: str, output: Output) -> None:
        learning = self._names_its_own and not self.turns
        # "the latest conversation" is this turn's only if no other turn of the backend ends meanwhile
        alone = self.config.one_at_a_time or (learning and self.config.conversation_argv)
        gate = self.gate.alone() if alone else self.gate.together()
        async with gate:
            await self._attempt(prompt, output)

    @property
    def begins_conversation(self) -> bool:
        """The next turn runs argv (not resume_argv): the session's role goes with it.

        After a first turn that failed, only if the CLI keeps no such turn (restart_after_failed_first_turn);
        one that does had the role in it, unless it saved nothing: then the resume raises NothingToResume and
        the prompt runs again, beginning the conversation.
        """
        return not self.turns

    async def _attempt(self, prompt: str, output: Output) -> None:
        """One run of the program for the prompt; after a first turn, the id learnt, or what its failure leaves."""
        first = not self.turns  # this run begins a conversation
        try:
            await self._run(prompt, output)
        except BaseException:
            if first:
                self._after_failed_first_turn()
            raise
        if first and self._names_its_own:
            await self._learn_conversation(output)

    @property
    def _names_its_own(self) -> bool:
        """The CLI names its conversations: in its stderr or elsewhere (conversation_pattern), or in its output."""
        return bool(self.config.conversation_pattern) or names_conversations(self.config.output_format)

    def _after_failed_first_turn(self) -> None:
        """A new conversation next, or (restart_after_failed_first_turn = false) this one resumed: see the docstring."""
        if self.config.restart_after_failed_first_turn or not self.turns:  # not self.turns: nothing ran
            return self.clear()
        if self._names_its_own:  # in the output or the header it printed, if it got that far
            try:
                self.conversation = self._told_conversation("stderr")
            except ValueError:
                return self.clear()
        self.unsure = True

    async def _learn_conversation(self, output: Output) -> None:
        pattern = self.config.conversation_pattern
        try:
            if self.config.conversation_argv and not _named_conversation(self._reader):
                argv = self._fill(self.config.conversation_argv, "")
                env = {**self.config.env, **self.session.env}
                self.conversation = await look_up(argv, pattern, cwd=self.session.cwd, env=env)
            else:
                self.conversation = self._told_conversation(f"the stderr of {self.config.argv[0]}")
        except ValueError as exc:
            self.turns = 0
            output.note(f"cannot learn the id of the conversation this turn began: {exc}; "
                        "the next turn begins a new conversation")

    def _told_conversation(self, where: str) -> str:
        """The id of the conversation the last run began, as its output named it, or its stderr (where); else
        ValueError."""
        if named := _named_conversation(self._reader):
            return named
        if not self.config.conversation_pattern:
            raise ValueError(f"the output of {self.config.argv[0]} named none")
        return found_in(self._stderr.text(), self.config.conversation_pattern, where)

    async def _run(self, prompt: str, output: Output) -> Tail:
        """One run of the program for the prompt; its stderr (kept for the transcript).

        The first resume after a failed first turn that runs to its end tells whether the CLI had saved that
        conversation: NothingToResume if it says it had not (missing_conversation_pattern), and the next run
        begins it.
        """
        argv = self._argv(prompt) + self._budget(output)
        process = await self._spawn(argv)
        # The CLI may have recorded the conversation even if the turn fails: unless the turn was the first
        # (_after_failed_first_turn), it is resumed from now on rather than started again.
        self.turns += 1
        stderr = self._stderr = Tail(STDERR_KEEP)
        stdout = Tail(STDOUT_KEEP)
        reader = self._reader = reader_for(self.config.output_format, output)
        if hasattr(reader, "memory"):
            reader.memory = dict(self.memory)

        def write(text: str) -> None:
            stdout.keep_text(text)
            reader.feed(text)

        try:
            with trio.move_on_after(self.config.timeout or float("inf")) as timer:
                await self._communicate(process, prompt, write, stderr)
        finally:
            with trio.CancelScope(shield=True):
                await reap(process)
            self.pid = self._process = None
            reader.close()
            self.memory = dict(getattr(reader, "memory", self.memory))
            if stderr.text():
                output.note(stderr.text())
        if timer.cancelled_caught:
            raise TurnFailed(f"timed out after {self.config.timeout:g} s")
        if self.unsure and not self._signalled:  # a resume that ran to its end (stop() cut it short)
            self.unsure = False
            if process.returncode and self._says_nothing_saved(stderr):
                self.turns = 0
                output.note(f"{argv[0]} has no conversation {self.conversation} to resume (its first turn was cut "
                            "short before it saved one): the prompt runs again with argv, beginning the conversation")
                raise NothingToResume(f"{argv[0]} has no conversation {self.conversation} to resume")
        self._judge(process.returncode, stderr, stdout, reader.failure())
        return stderr

    def _argv(self, prompt: str) -> list[str]:
        argv = self._fill(self.config.resume_argv if self.turns and self.config.resume_argv else self.config.argv,
                          prompt)
        return with_tools(argv, self._tools())

    def _budget(self, output: Output) -> list[str]:
        """budget_argv with the dollars the session's budgets leave (none: no words), so that the CLI stops
        a run that would spend more."""
        if not self.config.budget_argv or output.budget_usd_left is None:
            return []
        left = output.budget_usd_left
        if not left > 0:  # the runner starts no turn once a budget is spent: this one began as it ran out
            raise TurnFailed(f"budget spent: the session's budgets leave ${left:.6f}, and "
                             f"{self.config.argv[0]} takes a cap above 0")
        return [word.format(budget_usd=repr(float(left))) for word in self.config.budget_argv]

    def _tools(self) -> Wiring:
        """anvilfs's tools for the CLI (agent_tools.py), worked out at the first run."""
        if self._wiring is None:
            self._wiring = wire(self.config.argv[0], self.session, self.config.env) if self.config.mcp else Wiring()
        return self._wiring

    def _fill(self, template: list[str], prompt: str) -> list[str]:
        values = {
            "prompt": prompt,
            "model": self.session.model,
            "cwd": self.session.cwd,
            "name": self.session.name,
            "conversation": self.conversation,
        }
        for needed in sorted(placeholders(template) - {"prompt"}):
            if not values[needed]:
                raise TurnFailed(f"backend needs {{{needed}}} but it is empty: {_HINTS.get(needed, 'set it')}")
        return [word.format_map(values) for word in template]

    async def _spawn(self, argv: list[str]) -> trio.Process:
        env = {**os.environ, **self.config.env, **self.session.env, **self._tools().env}
        stdin = subprocess.PIPE if self.config.prompt == "stdin" else subprocess.DEVNULL
        try:
            process = await trio.lowlevel.open_process(
                argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                cwd=self.session.cwd, env=env, start_new_session=True,
            )
        except (OSError, ValueError) as exc:  # ValueError: a NUL byte in an argument
            raise TurnFailed(f"cannot run {argv[0]} in {self.session.cwd}: {getattr(exc, 'strerror', None) or exc}") from exc
        self._process, self._signalled, self.pid = process, "", process.pid
        return process

    async def _communicate(self, process: trio.Process, prompt: str, write: Callable[[str], None], stderr: Tail) -> None:
        async with trio.open_nursery() as nursery:
            if process.stdin is not None:
                nursery.start_soon(feed, process.stdin, prompt.encode("utf-8", "surrogateescape"))
            nursery.start_soon(pump, process.stdout, write)
            nursery.start_soon(stderr.collect, process.stderr)
            await process.wait()
            # A child the command left running can hold the pipes open forever.
            nursery.cancel_scope.deadline = trio.current_time() + DRAIN_GRACE

    def _judge(self, status: int | None, stderr: Tail, stdout: Tail, said: str = "") -> None:
        """Raise if the turn failed. `said`: the failure as a structured output told it (output_formats.py)."""
        if status is None or status == 0:
            if said:
                raise TurnFailed(said)
            return self._judge_output(stdout)
        if status < 0:
            name = signal_name(-status)
            if self._signalled:
                raise TurnFailed(f"killed by {name}: the session was stopped")
            raise AgentExited(f"killed by signal {name}")
        # a structured output's last line is an event (JSON), no reason: its failure is `said`, or none
        plain = stdout.last_line() if self.config.output_format == "text" else ""
        line = said or self._named_error(stderr) or stderr.last_line() or plain
        raise TurnFailed(f"exit status {status}: {line}" if line else f"exit status {status}")

    def _judge_output(self, stdout: Tail) -> None:
        found = self.config.error_pattern and re.search(self.config.error_pattern, stdout.text())
        if found:
            said = " ".join(found.group(found.re.groups).split())  # one line, however the CLI wrapped it
            raise TurnFailed(said or f"the output matched error_pattern {self.config.error_pattern!r}")

    def _says_nothing_saved(self, stderr: Tail) -> bool:
        pattern = self.config.missing_conversation_pattern
        return bool(pattern) and re.search(pattern, stderr.text()) is not None

    def _named_error(self, stderr: Tail) -> str:
        """The failure's text by config.reason_pattern: its last match in stderr; "" without one."""
        if not self.config.reason_pattern:
            return ""
        found = list(re.finditer(self.config.reason_pattern, stderr.text()))
        return (found[-1].group(found[-1].re.groups and 1) or "").strip() if found else ""


# ---------------------------------------------------------------- helpers


def _named_conversation(reader: OutputReader | None) -> str:
    """The conversation id the last run's output named (a reader's conversation(), output_formats.py); ""."""
    conversation = getattr(reader, "conversation", None)
    return conversation() if conversation is not None else ""

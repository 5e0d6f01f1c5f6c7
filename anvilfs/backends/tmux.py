"""Interactive agents in tmux windows: prompts are typed in, the hook hands in the answer.

One tmux session per anvilfs namespace (named by the caller), one window
per anvilfs session, on the default tmux server, so a person can
`tmux attach -t <session>` to watch an agent or take over from it.

    start      new-window (new-session the first time) running argv ({model}
               {name} {cwd} {conversation} filled in; resume_argv, if set,
               once a prompt was typed into the session's conversation) in
               the session's cwd, with config.env + session.env; then
               ready_seconds for the program to come up
    turn       load-buffer (prompt on stdin) + paste-buffer + send-keys Enter;
               what the pane gains from the cursor's row at the moment of
               typing (echoed prompt included) streams a line at a time. A
               person resizing the window during a turn can shift it.
               Before typing, that row is kept in the pane itself (the
               option @anvilfs-turn, with the turn's number), so a server
               that stops mid-turn loses none of it.
               turn_end = "hook": the agent's hook ends the turn, handing in
               its answer (`anvilfs hook await` writes it to `out`: the
               session takes it and tells the agent, sessions/owned.py), or
               with no answer writing `await` to status: then the answer is
               the pane's text. turn_end = "quiet": the turn ends when the
               pane has been unchanged for quiet_seconds; the pane's text is
               the answer. With hooks, the first prompt after the program
               started whose Enter the hook's `running` has not answered in
               time gets Enter again, a few times at most, and only while the
               cursor's line still ends with the prompt's last line
               (tmux_enter.py says when and why).
    follow     a turn the previous server left running: from its marked
               row, to the hook's answer or `await`, or to quiet. A hook
               that found no server leaves `await` in the pane's option
               @anvilfs-hook (hooks/anvilfs-status) and the answer in the
               tmux buffer anvilfs-answer-PANE (anvilfs hook keeps it there
               before it connects), which is then the turn's answer (else
               the pane's text). PromptNotSent (queued again) if its prompt
               was never typed
    usage      with usage = "claude-transcript", read from Claude Code's transcript
               at the turn's end (claude_transcript.py); a followed turn has none
    interrupt  Ctrl-C into the pane
    stop       Ctrl-C, then kill-window; kill: kill-window
    pid        the pane's program while it runs; None once stopped, killed, or
               seen gone or dead (pane.pid, kept apart, tells its pane)

tmux is only ever run with argv lists, never through a shell: the prompt is
data. A cancelled turn leaves the program alone (the server may be shutting
down; the agent outlives it), and a restarted server finds the pane again
through ``adopt`` with what ``saved`` returned.
"""

from __future__ import annotations

import os
import shutil

import trio

from ..config.model import TmuxBackendConfig, placeholders
from ..hookwords import ANSWER_BUFFER, AWAIT, RUNNING  # what the hook's client and script say and keep
from ..sessions.backend import Agent, AgentExited, AgentFailed, Backend, Output, PromptNotSent, SessionInfo
from ..sessions.turns import Outcome
from .tmuxpane import (HOOK_OPTION, PANE_FORMAT, Pane, Tmux, TurnStart, forget_answer, kept_word, last_line,
                       pane_lines, write_lines)
from .agent_tools import Wiring, wire, wiring_for, with_tools
from .claude_transcript import TurnSpending, transcript_dir
from .tmux_enter import Unheard

POLL = 0.1  # seconds between looks at the pane during a turn
EXIT_POLL = 0.5  # seconds between looks for a pane that went away
STOP_GRACE = 1.0  # seconds a stopped agent gets after Ctrl-C before its window is killed
ANCHOR_ROWS = 3  # rows above a turn's start that find it again after the history was trimmed
TURN_OPTION = "@anvilfs-turn"  # pane option: where the current turn began (JSON), set before its prompt is typed


class TmuxBackend(Backend):
    kind = "tmux"

    def __init__(self, name: str, config: TmuxBackendConfig, *, tmux_session: str, tmux_socket: str | None = None):
        super().__init__(name)
        self.config = config
        self.hook_driven = config.turn_end == "hook"
        self.description = config.description
        self.tmux_session = tmux_session
        self.tmux = Tmux(tmux_socket)
        self.gives_tools = config.mcp and wiring_for(config.argv[0]) is not None

    def availability(self) -> str:
        missing = [] if shutil.which("tmux") else ["tmux"]
        program = self.config.argv[0]
        path = self.config.env.get("PATH", os.environ.get("PATH", os.defpath))  # as the agent will see it
        if not placeholders([program]) and not shutil.which(program, path=path):
            missing.append(program)
        return "missing: " + "; ".join(f"{name} not found on PATH" for name in missing) if missing else "ready"

    def agent(self, session: SessionInfo, saved: dict | None = None) -> TmuxAgent:
        # a previous agent's pane is not reused (start() makes a new one), but its conversation is
        return TmuxAgent(self, session, begun=bool((saved or {}).get("begun")))

    async def adopt(self, session: SessionInfo, saved: dict) -> TmuxAgent | None:
        pane = await self.tmux.pane(str(saved.get("pane", "")))
        if pane is None or pane.dead or pane.pid != saved.get("pid"):
            return None  # gone, or a new tmux server reused the pane id for something else
        return TmuxAgent(self, session, pane, hook_await=int(saved.get("hook_await", 0)), begun=bool(saved.get("begun")))


class TmuxAgent(Agent):
    def __init__(self, backend: TmuxBackend, session: SessionInfo, pane: Pane | None = None, *, hook_await: int = 0,
                 begun: bool = False):
        self.backend = backend
        self.session = session
        self.config = backend.config
        self.tmux = backend.tmux
        self.pane = pane  # its pid (pane.pid) is how this agent's pane is told from another that took its id
        self.pid = pane.pid if pane else None  # shown in `pid`: None once the program is known to be gone
        self._turn_done: trio.Event | None = None  # while a hook-ended turn runs: set by hook("await")
        self._turn_number = 0  # the turn being followed
        self._await_for = hook_await  # the turn whose hook said await (kept in saved(): a new server follows it no more)
        self.begun = begun  # a prompt went into the conversation: a new program resumes it (resume_argv)
        self._fresh = False  # the program was started here and no prompt has gone in yet: its input may not be ready
        self._unheard: Unheard | None = None  # the Enters the hook's running has not answered
        self._spending: tuple[TurnSpending, Output] | None = None  # the turn's usage, read as it goes (config usage)

    # ------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        if not os.path.isdir(self.session.cwd):
            raise AgentFailed(f"cwd {self.session.cwd} is not a directory")
        self.pane = await self._spawn()
        self.pid = self.pane.pid
        self._fresh = True
        await trio.sleep(self.config.ready_seconds)
        if await self._gone():
            ready = self.config.ready_seconds
            raise AgentFailed(f"{self.config.argv[0]} ended within ready_seconds ({ready:g}s) of starting")

    def _argv(self, tools: Wiring) -> list[str]:
        values = {"model": self.session.model, "cwd": self.session.cwd, "name": self.session.name,
                  "conversation": self.session.conversation}
        argv = self.config.resume_argv if self.begun and self.config.resume_argv else self.config.argv
        for needed in sorted(placeholders(argv)):
            if needed == "prompt":
                raise AgentFailed("a tmux agent's prompts are typed in: take {prompt} out of its argv")
            if not values[needed]:
                raise AgentFailed(f"argv needs {{{needed}}}, which session {self.session.name} does not have")
        return with_tools([word.format_map(values) for word in argv], tools)

    async def _spawn(self) -> Pane:
        # anvilfs's tools for the program (agent_tools.py), worked out once a start: a wiring writes files
        tools = wire(self.config.argv[0], self.session, self.config.env) if self.config.mcp else Wiring()
        env = {**self.config.env, **self.session.env, **tools.env}
        # Through env(1) rather than tmux's -e: tmux 3.3 ignores -e PATH (the
        # client's PATH wins), and env makes even a lone word an exec'd
        # argv (tmux gives a single word to the shell). env execs, so the
        # pane's pid is the program's.
        argv = ["env", *(f"{key}={value}" for key, value in env.items()), *self._argv(tools)]
        window = ["-d", "-n", self.session.name, "-c", self.session.cwd, "-P", "-F", PANE_FORMAT, "--", *argv]
        tmux_session = self.backend.tmux_session
        result = await self.tmux.open_window(tmux_session, window)
        pane = Pane.parse(result.stdout.decode()) if result.returncode == 0 else None
        if pane is None:
            raise AgentFailed(f"tmux could not open a window in session {tmux_session}: "
                              f"{result.stderr.decode().strip() or 'no pane reported'}")
        return pane

    async def wait_exit(self) -> str:
        while not (reason := await self._gone()):
            await trio.sleep(EXIT_POLL)
        return reason

    async def interrupt(self) -> None:
        if self.pane is not None:
            await self.tmux.run("send-keys", "-t", self.pane.id, "C-c")

    async def stop(self) -> None:
        await self.interrupt()
        with trio.move_on_after(STOP_GRACE):
            while not await self._gone():
                await trio.sleep(POLL)
        await self.kill()

    async def kill(self) -> None:
        pane = await self.tmux.pane(self.pane.id) if self.pane else None
        if pane is not None and pane.pid == self.pane.pid:  # ours, even dead (its shown pid is cleared by then)
            await self.tmux.run("kill-window", "-t", pane.window, ";", *forget_answer(pane.id))  # the window it is in now
        self.pid = None  # killed with its window, or gone before

    def saved(self) -> dict:
        saved: dict = {"begun": True} if self.begun else {}  # kept without a pane too: a restart resumes
        if self.pane is None:
            return saved
        saved |= {"pane": self.pane.id, "window": self.pane.window, "pid": self.pane.pid}
        if self._await_for:
            saved["hook_await"] = self._await_for
        return saved

    async def _gone(self) -> str:
        """Why the agent is gone, or "" while it runs."""
        return self._reason(await self.tmux.pane(self.pane.id) if self.pane else None)

    def _reason(self, pane: Pane | None) -> str:
        """Why the agent is gone, by this look at its pane, or "" while it runs; once gone, it shows no pid."""
        if pane is None or pane.pid != self.pane.pid:  # a new tmux server may give the id to another pane
            self.pid = None
            return f"its tmux pane {self.pane.id if self.pane else '(none)'} is gone"
        if pane.dead:
            self.pid = None
            return f"{self.config.argv[0]} exited with status {pane.status or '?'} (its tmux pane {pane.id} remains)"
        return ""

    # ------------------------------------------------------------ turns

    def hook(self, word: str) -> bool:
        """The agent's side of sessions/turns.py's AGENT rows: quiet agents take no hook words (HOOKLESS);
        `await` while a turn is armed (the RUNNER phase) ends it (AGENT_ENDS); any word means the program has
        taken a prompt (HEARD, or a person's typed turn, BEGIN, which the session records)."""
        if self.config.turn_end != "hook":
            return False
        self.begun = self.begun or word == RUNNING  # a person's prompt begins the conversation too
        self._fresh = False  # the program took a prompt (a person's, maybe): its input is ready
        self._unheard = None  # the prompt was taken (running), or the turn is over (await)
        if word == AWAIT and self._turn_done is not None:
            self._report_spending()  # now: an answer handed in through `out` ends the turn as this returns
            self._turn_done.set()
            self._await_for = self._turn_number
        return True

    async def turn(self, prompt: str, output: Output) -> None:
        """Mark where the turn begins, type the prompt, and follow the pane to the turn's end."""
        pane, rows = await self._snapshot()
        rows += [""] * (pane.row - len(rows))  # blank rows at the end come without text
        start = TurnStart(pane.row, pane.history, rows[max(pane.row - ANCHOR_ROWS, 0):pane.row])
        self.begun = True  # from here on the program may have the prompt (saved with the turn's start)
        # Before typing, so that whenever the server stops, a prompt in the pane has its turn's start beside
        # it, and no word or answer an earlier turn's hook kept there.
        await self._run("set-option", "-p", "-t", pane.id, TURN_OPTION, start.marker(output.number),
                        ";", "set-option", "-p", "-u", "-t", pane.id, HOOK_OPTION, ";", *forget_answer(pane.id))
        # Armed before typing: a quick agent's hook may say await before the typing commands return,
        # and an await that came while no turn was armed would be taken for a person's (lost).
        self._arm(output.number)
        if self._fresh and prompt.strip() and self._turn_done is not None:
            self._unheard = Unheard(trio.current_time(), last_line(prompt))  # before typing: running may come first
        self._fresh = False
        if self.config.usage == "claude-transcript":  # before typing: the turn's lines come after this
            env = {**os.environ, **self.config.env, **self.session.env}
            self._spending = (TurnSpending(transcript_dir(env), self.session.conversation), output)
        try:
            await self._type(pane.id, prompt)
        except BaseException:
            self._turn_done = None
            self._spending = None
            raise
        await self._follow_turn(start, output)

    def _report_spending(self) -> None:
        """What the turn spent, to its output: once, before the session ends the turn (see claude_transcript.py)."""
        if self._spending is not None:
            spending, output = self._spending
            self._spending = None
            spending.report(output)

    async def follow(self, output: Output) -> None:
        """The turn the previous server left running: its whole text, from where that server marked its start."""
        self._arm(output.number)  # first: a hook's answer or await that comes while the marker is read ends it
        try:
            start = await self._marked_start(output.number)
        except BaseException:
            self._turn_done = None
            raise
        await self._follow_turn(start, output)

    async def _marked_start(self, number: int) -> TurnStart:
        pane_id = self.pane.id if self.pane else "(none)"
        marker = await self.tmux.run("show-options", "-p", "-v", "-t", pane_id, TURN_OPTION)
        start = TurnStart.from_marker(marker.stdout.decode(errors="replace"), number)
        if start is None:
            if await self._gone():
                raise AgentExited(await self._gone())
            raise PromptNotSent("the server stopped before it typed this prompt into the agent: it did not run, "
                                "and is queued again")
        return start

    def _arm(self, number: int) -> None:
        """From here on, the hook's await ends turn `number`."""
        self._turn_number = number
        self._turn_done = trio.Event() if self.config.turn_end == "hook" else None
        self._unheard = None
        if self._turn_done is not None and self._await_for == number:
            self._turn_done.set()  # the old server took this turn's await and was killed before it ended the turn

    async def _follow_turn(self, start: TurnStart, output: Output) -> None:
        try:
            await self._follow(start, output)
        finally:
            self._turn_done = None  # cancelled or not, the program is left alone (see interrupt)
            self._report_spending()  # if the hook did not end it (quiet, interrupted, or no server had the await)

    async def _type(self, pane_id: str, prompt: str) -> None:
        text = prompt.rstrip("\r\n")
        if text:
            buffer = f"anvilfs-{pane_id}"
            await self._run("load-buffer", "-b", buffer, "-", stdin=text.encode())
            # -p: bracketed paste where the program asked for it, so a multi-line prompt is one prompt
            await self._run("paste-buffer", "-p", "-d", "-b", buffer, "-t", pane_id)
        await self._run("send-keys", "-t", pane_id, "Enter")

    async def _follow(self, start: TurnStart, output: Output) -> None:
        """Stream what the pane gains until the turn ends, then write the rest."""
        written = 0
        last: list[str] | None = None
        quiet_since = trio.current_time()
        while True:
            pane, lines = await self._gained(start)
            written = write_lines(output, lines[:-1], written)  # the cursor's line may still change
            if self._spending is not None:
                self._spending[0].look()  # a bounded piece at a time, so the turn's end has little left to read
            if self._turn_done is not None:
                # The hook's word (or answer) reached us, or only the pane (no server was there to take it).
                if self._turn_done.is_set() or kept_word(pane) is Outcome.AGENT_ENDS:
                    if not self._turn_done.is_set():
                        await self._take_kept_answer(pane.id, output)
                    break  # after one more look, taken once the hook had fired
                await self._enter_again_if_unheard(pane, lines[-1] if lines else "", output)
                with trio.move_on_after(POLL):
                    await self._turn_done.wait()
                continue
            if lines != last:
                last, quiet_since = lines, trio.current_time()
            elif trio.current_time() - quiet_since >= self.config.quiet_seconds:
                break
            await trio.sleep(POLL)
        write_lines(output, pane_lines("\n".join(lines)), written)

    async def _enter_again_if_unheard(self, pane: Pane, cursor_line: str, output: Output) -> None:
        """Enter again when tmux_enter.py says it is due for the turn's unheard prompt."""
        if self._unheard is None:
            return
        due = self._unheard.due(pane, cursor_line, trio.current_time())
        if due is None:
            self._unheard = None
        elif due:
            await self._run("send-keys", "-t", pane.id, "Enter")
            output.note(self._unheard.note())

    async def _take_kept_answer(self, pane_id: str, output: Output) -> None:
        """The answer the hook kept in tmux when no server took it (client/hook.py) is the turn's, if there is one."""
        kept = await self.tmux.run("show-buffer", "-b", ANSWER_BUFFER + pane_id)
        if kept.returncode == 0:
            output.answer(kept.stdout.decode(errors="replace"))

    async def _gained(self, start: TurnStart) -> tuple[Pane, list[str]]:
        """The pane (as first seen), and its lines from the start row to the cursor's row (wrapped lines joined).

        Every line but the last (the cursor's) is complete.
        """
        for _ in range(5):  # if output scrolls between the two looks, the start moved: look again
            pane, rows = await self._snapshot()
            top = start.find(pane, rows) - pane.history  # 0 is the first visible row, history is negative
            first = str(top) if top > -pane.history else "-"  # the start may have left the history
            cursor = str(pane.row - pane.history)
            answer = await self._run("capture-pane", "-p", "-J", "-t", pane.id, "-S", first, "-E", cursor,
                                     ";", "display-message", "-p", "-t", pane.id, "#{history_size}")
            text, _, history = answer.rstrip("\n").rpartition("\n")
            if history == str(pane.history):
                break
        return pane, text.split("\n")

    async def _snapshot(self) -> tuple[Pane, list[str]]:
        """The pane and all its rows (history, then screen), seen at one moment; AgentExited if it is gone."""
        pane_id = self.pane.id if self.pane else "(none)"
        result = await self.tmux.run("display-message", "-p", "-t", pane_id, PANE_FORMAT,
                                     ";", "capture-pane", "-p", "-t", pane_id, "-S", "-", "-E", "-")
        line, _, text = result.stdout.decode(errors="replace").partition("\n")
        pane = Pane.parse(line) if result.returncode == 0 else None
        if reason := self._reason(pane):
            raise AgentExited(reason)
        return pane, pane_lines(text)

    async def _run(self, *args: str, stdin: bytes = b"") -> str:
        result = await self.tmux.run(*args, stdin=stdin)
        if result.returncode != 0:
            raise AgentExited(await self._gone() or f"tmux {args[0]}: {result.stderr.decode().strip()}")
        return result.stdout.decode(errors="replace")

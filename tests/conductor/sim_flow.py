"""Small workflows for the tests of `run`'s options and output, and a conductor read as it goes.

    path = prompted(base, {"a": "claude"})          # session a (declared on claude) prompted once, waited for
    proc = Watched(argv)                            # a conductor process whose stderr is read line by line
    proc.until("trying again")                      # the first stderr line holding it (with a deadline)
    status, out, err = proc.finish()                # its end, with a deadline

The sessions are made on the server's built-in `sim` backend through
`--backend`, or on the fakes of review_cycle.py's config.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from pathlib import Path

from harness.server import REPO_ROOT
from review_cycle import TIMEOUT


def prompted(base: Path, sessions: dict[str, str], *, name: str = "one", cwd: str = ".", steps: str = "") -> Path:
    """Workflow `name`: each of `sessions` (name: backend, in `cwd`, relative to the file) prompted once, all
    waited for, then `steps`."""
    declared = "".join(f'[sessions.{s}]\nbackend = "{b}"\ncwd = "{cwd}"\n' for s, b in sessions.items())
    path = base / f"{name}.toml"
    path.write_text(f'''name = "{name}"
{declared}
[[steps]]
id = "ask"
kind = "prompt"
to = {json.dumps(list(sessions))}
text = "Say something."
[[steps]]
id = "answered"
kind = "wait"
sessions = {json.dumps(list(sessions))}
{steps}''')
    return path


def session_file(srv, name: str, file: str) -> str:
    with srv.connect("test", timeout=TIMEOUT) as client:
        return client.read_file(f"{name}/{file}").decode()


class Watched:
    """A conductor process; its stderr lines are read by a thread into a queue, so a test can wait for one."""

    def __init__(self, argv: list[str]):
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO_ROOT)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.lines.put(line)
        self.lines.put(None)

    def until(self, text: str) -> str:
        """The first stderr line from here on that holds `text`; fails after TIMEOUT s, or if stderr ends."""
        while True:
            try:
                line = self.lines.get(timeout=TIMEOUT)
            except queue.Empty:
                raise AssertionError(f"no {text!r} on the conductor's stderr within {TIMEOUT}s:\n"
                                     + "".join(self.seen)) from None
            if line is None:
                raise AssertionError(f"the conductor's stderr ended without {text!r}:\n" + "".join(self.seen))
            self.seen.append(line)
            if text in line:
                return line

    def finish(self, timeout: float = TIMEOUT) -> tuple[int, str, str]:
        """(exit status, stdout, all of stderr) once it ends; killed and failed after `timeout` s, with what it
        said on stderr so far."""
        try:
            out = self.proc.stdout.read() if self.proc.wait(timeout=timeout) is not None else ""
        except subprocess.TimeoutExpired:
            self.proc.kill()
            while not self.lines.empty() and (line := self.lines.get_nowait()) is not None:
                self.seen.append(line)
            raise AssertionError(f"the conductor did not end within {timeout}s:\n" + "".join(self.seen)) from None
        while (line := self.lines.get(timeout=TIMEOUT)) is not None:
            self.seen.append(line)
        return self.proc.returncode, out, "".join(self.seen)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=TIMEOUT)

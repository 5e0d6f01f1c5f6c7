"""A lanes workflow for the conductor's tests: three developers, each in its own lane, one shared reviewer.

    path = write_workflow(base, hold=fifo)     # dev3's gate of round 1 waits for a line in the fifo, if given
    expected_prompts()                         # what each session's log must hold, each prompt once

Lane devN runs rounds until its gate passes, in round N (the gate reads
CONDUCTOR_LANE and CONDUCTOR_ROUND), then reports to the shared reviewer,
waits for it, and ends with a check whose `finish` ends the lane before a
step that must never be sent. When all three lanes are done, dev1 is
told so. The agents are the fake ones of review_cycle.py.
"""

from __future__ import annotations

from pathlib import Path

from review_cycle import RUN

DEVS = ["dev1", "dev2", "dev3"]
NAMES = [*DEVS, "rev"]


def workflow_text(cwd: Path, hold: Path | None = None) -> str:
    sessions = "".join(f'[sessions.{n}]\nbackend = "developer"\ncwd = "{cwd}"\n' for n in DEVS)
    held = f'[ "$CONDUCTOR_LANE$CONDUCTOR_ROUND" != dev31 ] || read x < {hold}; ' if hold else ""
    return f'''name = "lanes"
{sessions}
[sessions.rev]
backend = "reviewer"
cwd = "{cwd}"
[groups]
devs = {DEVS!r}

[[steps]]
id = "work"
kind = "each"
sessions = ["devs"]
  [[steps.steps]]
  id = "rounds"
  kind = "repeat"
  max_rounds = 4
    [[steps.steps.steps]]
    id = "ask"
    kind = "prompt"
    to = ["{{session}}"]
    text = """
Work round {{round}}, {{session}}. You said: {{out.{{session}}}}
"""
    [[steps.steps.steps]]
    id = "answered"
    kind = "wait"
    sessions = ["{{session}}"]
    [[steps.steps.steps]]
    id = "tests"
    kind = "gate"
    run = ["sh", "-c", '{held}test "$CONDUCTOR_ROUND" -ge "${{CONDUCTOR_LANE#dev}}"']
    then = "break"
    else = "next"
  [[steps.steps]]
  id = "report"
  kind = "prompt"
  to = ["rev"]
  text = """
Review the work of {{session}}:
{{out.{{session}}}}
"""
  [[steps.steps]]
  id = "reviewed"
  kind = "wait"
  sessions = ["rev"]
  [[steps.steps]]
  id = "verdict"
  kind = "check"
  any = ["{{session}}"]
  contains = "Fixed"
  then = "finish"
  [[steps.steps]]
  id = "never"
  kind = "prompt"
  to = ["{{session}}"]
  text = "a finished lane sends nothing more"

[[steps]]
id = "all"
kind = "prompt"
to = ["dev1"]
text = "All lanes are done."
[[steps]]
id = "told"
kind = "wait"
sessions = ["dev1"]
'''.replace("'devs'", '"devs"').replace("'dev1', 'dev2', 'dev3'", '"dev1", "dev2", "dev3"')


def write_workflow(base: Path, hold: Path | None = None) -> Path:
    (base / "work").mkdir(exist_ok=True)
    path = base / "lanes.toml"
    path.write_text(workflow_text(base / "work", hold))
    return path


def expected_prompts() -> dict[str, list[str]]:
    """devN: rounds 1 to N, each once; rev: each lane's report once (in the order the lanes finish: sorted)."""
    head = f"[conductor lanes run {RUN}"
    want = {dev: [f"{head} lane {dev} round {r} step ask]" for r in range(1, int(dev[3:]) + 1)] for dev in DEVS}
    want["dev1"].append(f"{head} step all]")
    return want | {"rev": sorted(f"{head} lane {dev} step report]" for dev in DEVS)}


def sorted_rev(prompts: dict[str, list[str]]) -> dict[str, list[str]]:
    return prompts | {"rev": sorted(prompts["rev"])}

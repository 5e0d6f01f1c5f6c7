"""Bad workflow files each give an error that names the line and the field, and says how to fix it.

Each case is a small workflow with one mistake; the error must give the line
the mistake is on (counted in the text below) and the words that explain it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conductor.loading import WorkflowError, load, parse

HEAD = '''name = "t"
[sessions.a]
[sessions.b]
[groups]
both = ["a", "b"]
'''  # 5 lines: the steps below start at line 6

CASES = {
    "unknown session": ('[[steps]]\nid = "p"\nkind = "prompt"\nto = ["a", "zed"]\ntext = "hi"\n',
                        9, "steps[0].to: unknown session or group 'zed'"),
    "step with no target": ('[[steps]]\nid = "p"\nkind = "prompt"\ntext = "hi"\n',
                            6, "steps[0].to: to is required"),
    "empty target list": ('[[steps]]\nid = "p"\nkind = "prompt"\nto = []\ntext = "hi"\n',
                          9, "steps[0].to: List should have at least 1 item"),
    "loop with no bound": ('[[steps]]\nid = "loop"\nkind = "repeat"\n'
                           '  [[steps.steps]]\n  id = "c"\n  kind = "check"\n  any = ["a"]\n  contains = "x"\n',
                           6, "steps[0].max_rounds: max_rounds is required"),
    "loop with no exit": ('[[steps]]\nid = "loop"\nkind = "repeat"\nmax_rounds = 3\n'
                          '  [[steps.steps]]\n  id = "p"\n  kind = "prompt"\n  to = ["both"]\n  text = "go {round}"\n',
                          6, "repeat 'loop' has no exit"),
    "unknown step kind": ('[[steps]]\nid = "p"\nkind = "promt"\nto = ["a"]\n',
                          6, "unknown step kind 'promt'"),
    "bad placeholder": ('[[steps]]\nid = "p"\nkind = "prompt"\nto = ["a"]\ntext = "see {outt.a}"\n',
                        10, "steps[0].text: unknown placeholder {outt.a}"),
    "out of an unknown session": ('[[steps]]\nid = "p"\nkind = "prompt"\nto = ["a"]\ntext = """\nsee\n{out.c}\n"""\n',
                                  10, "{out.c}: unknown session 'c'"),
    "round outside a loop": ('[[steps]]\nid = "p"\nkind = "prompt"\nto = ["a"]\ntext = "round {round}"\n',
                             10, "{round} outside a repeat"),
    "unknown key": ('[[steps]]\nid = "w"\nkind = "wait"\nsessions = ["a"]\nuntill = ["await"]\n',
                    10, "steps[0].untill: unknown key 'untill'"),
    "second step, nested": ('[[steps]]\nid = "w"\nkind = "wait"\nsessions = ["a"]\n'
                            '[[steps]]\nid = "loop"\nkind = "repeat"\nmax_rounds = 2\n'
                            '  [[steps.steps]]\n  id = "c"\n  kind = "check"\n  every = ["a"]\n  contains = "x"\n'
                            '  [[steps.steps]]\n  id = "g"\n  kind = "gate"\n  run = ["true"]\n  then = "nowhere"\n',
                            23, "steps[1].steps[1].then: Input should be 'next', 'break', 'finish' or 'fail'"),
    "break outside a loop": ('[[steps]]\nid = "g"\nkind = "gate"\nrun = ["true"]\nthen = "break"\n',
                             10, "'break' outside a repeat"),
    "two ids the same": ('[[steps]]\nid = "w"\nkind = "wait"\nsessions = ["a"]\n'
                         '[[steps]]\nid = "w"\nkind = "wait"\nsessions = ["b"]\n',
                         11, "step id 'w' is used twice"),
    "check without a set": ('[[steps]]\nid = "g"\nkind = "gate"\nrun = ["true"]\n'
                            '[[steps]]\nid = "c"\nkind = "check"\ncontains = "x"\n',
                            13, "needs exactly one of every, any or none"),
    "not TOML": ('[[steps]]\nid = "p"\nkind = = "prompt"\n', 8, "not valid TOML"),
    "lane session outside an each": ('[[steps]]\nid = "p"\nkind = "prompt"\nto = ["{session}"]\ntext = "hi"\n',
                                     9, "steps[0].to: {session} outside an each"),
    "lane placeholder outside an each": ('[[steps]]\nid = "p"\nkind = "prompt"\nto = ["a"]\ntext = "hi {session}"\n',
                                         10, "steps[0].text: {session} outside an each"),
    "lane out outside an each": ('[[steps]]\nid = "p"\nkind = "prompt"\nto = ["a"]\ntext = "{out.{session}}"\n',
                                 10, "{out.{session}}: {session} outside an each"),
    "lane check outside an each": ('[[steps]]\nid = "c"\nkind = "check"\nany = ["{session}"]\ncontains = "x"\n'
                                   'then = "finish"\n', 9, "steps[0].any: {session} outside an each"),
    "lane session not declared": ('[[steps]]\nid = "e"\nkind = "each"\nsessions = ["a", "zed"]\n'
                                  '  [[steps.steps]]\n  id = "w"\n  kind = "wait"\n  sessions = ["{session}"]\n',
                                  9, "steps[0].sessions: unknown session or group 'zed'"),
    "each in an each": ('[[steps]]\nid = "outer"\nkind = "each"\nsessions = ["both"]\n'
                        '  [[steps.steps]]\n  id = "inner"\n  kind = "each"\n  sessions = ["a"]\n'
                        '    [[steps.steps.steps]]\n    id = "w"\n    kind = "wait"\n    sessions = ["{session}"]\n',
                        12, "steps[0].steps[0].kind: each 'inner' is inside each 'outer'"),
    "break in a lane outside its repeat": ('[[steps]]\nid = "e"\nkind = "each"\nsessions = ["both"]\n'
                                           '  [[steps.steps]]\n  id = "g"\n  kind = "gate"\n  run = ["true"]\n'
                                           '  then = "break"\n',
                                           14, "'break' in each 'e' outside a repeat of the lane"),
    "bead claim with no session": ('[[steps]]\nid = "c"\nkind = "bead"\naction = "claim"\nbead = "x-001"\n',
                                   6, "bead claim needs session"),
    "base without a worktree": ('[[steps]]\nid = "w"\nkind = "wait"\nsessions = ["a"]\n'
                                '[sessions.c]\nbackend = "sim"\ncwd = "."\nbase = "main"\n',
                                13, "sessions.c.base: session 'c' has a base but no worktree"),
    "worktree without a backend": ('[[steps]]\nid = "w"\nkind = "wait"\nsessions = ["a"]\n'
                                   '[sessions.c]\nworktree = true\n',
                                   11, "sessions.c.worktree: session 'c' asks for a worktree but has no backend"),
    "merge with no bead": ('[[steps]]\nid = "m"\nkind = "merge"\n', 6, "steps[0].bead: bead is required"),
    "merge breaking outside a loop": ('[[steps]]\nid = "m"\nkind = "merge"\nbead = "x-001"\nelse = "break"\n',
                                      10, "'break' outside a repeat"),
    "no_change on a claim": ('[[steps]]\nid = "c"\nkind = "bead"\naction = "claim"\nbead = "x-001"\n'
                             'session = "a"\nno_change = "nothing"\n', 12, "no_change goes with action = \"complete\""),
    "worktree of an unknown session": ('[[steps]]\nid = "p"\nkind = "prompt"\nto = ["a"]\n'
                                       'text = "look in {worktree.c}"\n', 10, "{worktree.c}: unknown session 'c'"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_bad_workflow_names_its_line_and_field(case: str, tmp_path: Path) -> None:
    steps, line, words = CASES[case]
    path = tmp_path / "bad.toml"
    path.write_text(HEAD + steps)
    with pytest.raises(WorkflowError) as caught:
        load(path)
    text = str(caught.value)
    assert f"{path}:{line}: " in text and words in text, f"{case}: wanted line {line} and {words!r} in:\n{text}"
    problem_line = (HEAD + steps).splitlines()[line - 1]
    assert problem_line.strip(), f"{case}: line {line} of the case is blank: the expectation is wrong"


def test_a_repeat_of_a_fixed_count_of_rounds_needs_no_exit() -> None:
    parse(HEAD + '[[steps]]\nid = "loop"\nkind = "repeat"\nmax_rounds = 3\nexhausted = "next"\n'
                 '  [[steps.steps]]\n  id = "p"\n  kind = "prompt"\n  to = ["a"]\n  text = "go {round}"\n')


def test_an_each_in_a_repeat_and_a_repeat_in_a_lane_are_fine() -> None:
    parse(HEAD + '''[[steps]]
id = "loop"
kind = "repeat"
max_rounds = 2
  [[steps.steps]]
  id = "e"
  kind = "each"
  sessions = ["both"]
    [[steps.steps.steps]]
    id = "inner"
    kind = "repeat"
    max_rounds = 3
      [[steps.steps.steps.steps]]
      id = "p"
      kind = "prompt"
      to = ["{session}"]
      text = "{session}: round {rounds}, {out.{session}}"
      [[steps.steps.steps.steps]]
      id = "c"
      kind = "check"
      any = ["{session}"]
      contains = "done"
  [[steps.steps]]
  id = "g"
  kind = "gate"
  run = ["true"]
  then = "break"
''')


def test_a_merge_step_may_be_a_repeat_s_exit() -> None:
    parse(HEAD + '[[steps]]\nid = "loop"\nkind = "repeat"\nmax_rounds = 3\n'
                 '  [[steps.steps]]\n  id = "m"\n  kind = "merge"\n  bead = "x-001"\n  then = "break"\n'
                 '  else = "next"\n')


def test_every_problem_is_reported_not_only_the_first() -> None:
    text = HEAD + '[[steps]]\nid = "p"\nkind = "prompt"\nto = ["x"]\ntext = "{round}"\n'
    with pytest.raises(WorkflowError) as caught:
        parse(text, "two.toml")
    lines = str(caught.value).splitlines()
    assert len(lines) == 2 and lines[0].startswith("two.toml:9: ") and lines[1].startswith("two.toml:10: "), lines


@pytest.mark.parametrize("example", sorted(p.name for p in (Path(__file__).parents[2] / "conductor" / "examples").glob("*.toml")))
def test_the_examples_load(example: str) -> None:
    loaded = load(Path(__file__).parents[2] / "conductor" / "examples" / example)
    assert loaded.workflow.steps and len(loaded.digest) == 64

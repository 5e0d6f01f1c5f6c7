"""KeptLines (anvilfs/fs/kept_lines.py): the same text as a whole render, each line made once per change."""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

from anvilfs.fs.kept_lines import KeptLines


@dataclass
class Thing:
    name: str
    state: str
    title: str


def whole(things: list[Thing]) -> str:
    return "".join(_line(t) for t in things)


def _line(t: Thing) -> str:
    return f"{t.name} {t.state} {t.title}\n"


def test_random_changes_give_the_whole_render_and_remake_only_what_changed():
    rng = random.Random(7)
    made: list[str] = []

    def line(t: Thing) -> str:
        made.append(t.name)
        return _line(t)

    lines = KeptLines(lambda t: (t.name, t.state, t.title), line)
    things = [Thing(f"t{i}", "new", f"title {i}") for i in range(50)]
    made_names: list[str] = []  # the names given to things added: a name is unique (KeptLines asks that)
    assert lines.text(things) == whole(things)
    assert len(made) == 50
    for step in range(2000):
        made.clear()
        changed: set[str] = set()
        for _ in range(rng.randrange(4)):
            kind = rng.randrange(5)
            if kind == 0 and things:  # changed in place
                t = rng.choice(things)
                t.state = rng.choice(["new", "running", "done"])
                changed.add(t.name)
            elif kind == 1 and things:  # replaced by a copy with a new title
                at = rng.randrange(len(things))
                things[at] = replace(things[at], title=f"title {step}")
                changed.add(things[at].name)
            elif kind == 2:  # added
                things.append(Thing(f"n{len(made_names)}", "new", "added"))
                made_names.append(things[-1].name)
                changed.add(things[-1].name)
            elif kind == 3 and things:  # removed
                things.pop(rng.randrange(len(things)))
            elif kind == 4 and len(things) > 1:  # moved: order is the objects' order, not the kept one's
                things.insert(rng.randrange(len(things)), things.pop(rng.randrange(len(things))))
        assert lines.text(things) == whole(things), f"step {step}"
        assert set(made) <= changed, f"step {step}: {sorted(set(made) - changed)} made again, unchanged"


def test_an_equal_replacement_keeps_its_line_and_a_removed_one_is_let_go():
    made: list[str] = []
    lines = KeptLines(lambda t: (t.name, t), lambda t: (made.append(t.name), _line(t))[1])
    things = [Thing("a", "new", "x"), Thing("b", "new", "y")]
    lines.text(things)
    made.clear()
    things[0] = replace(things[0])  # another object, equal
    assert lines.text(things) == whole(things) and made == []
    assert lines.text(things[1:]) == whole(things[1:])
    assert lines.text(things) == whole(things) and made == ["a"]  # dropped with the text that lacked it

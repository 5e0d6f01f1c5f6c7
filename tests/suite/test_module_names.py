"""Each test module's name is its own: the test directories have no __init__.py, so pytest imports a
module by its basename, and a second one of the same name fails the whole-suite run ("import file
mismatch") while each directory run alone passes."""

from __future__ import annotations

import collections
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_no_two_test_modules_share_a_name():
    where = collections.defaultdict(list)
    for path in TESTS.rglob("test_*.py"):
        where[path.name].append(str(path.relative_to(TESTS)))
    twice = {name: paths for name, paths in where.items() if len(paths) > 1}
    assert not twice, f"rename one of each: {twice}"

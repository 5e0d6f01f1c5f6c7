"""What the suite needs from the machine, and what to install when it is missing.

A test that needs a program calls ``require(program)`` (or is marked
``@pytest.mark.needs("tmux")``; ``vm`` tests need QEMU and busybox). A missing
program skips the test with a reason that says what to install, except in CI
(``CI=true``), where it fails: a broken ``.ci/run`` must be seen, not skipped.
"""

from __future__ import annotations

import os
import shutil

import pytest

PACKAGES = {  # program -> the Debian package that has it
    "tmux": "tmux",
    "diod": "diod",
    "qemu-system-x86_64": "qemu-system-x86",
    "busybox": "busybox-static",
    "rc": "9base",
    "sqlite3": "sqlite3",  # the recovery of a damaged database that docs/using.md gives
    "setsid": "util-linux",  # Essential on Debian, so .ci/run need not install it
}
# programs looked up in one place only: /usr/bin/rc may be another rc (Byron Rakitzis's), not Plan 9's
PLACES = {"rc": "/usr/lib/plan9/bin"}
VM_PROGRAMS = ("qemu-system-x86_64", "busybox")
SBIN = "/usr/local/sbin:/usr/sbin:/sbin"  # diod lives in sbin, which a user's PATH may lack


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def missing(reason: str) -> None:
    """Skip the test for ``reason``; under CI=true, fail it instead."""
    if in_ci():
        pytest.fail(f"{reason} (CI=true: a missing prerequisite fails the run)", pytrace=False)
    pytest.skip(reason)


def require(program: str) -> str:
    """The path of ``program``; if it is not installed, skip (or under CI fail) saying what to install."""
    if program in PLACES:
        found, where = shutil.which(program, path=PLACES[program]), f" in {PLACES[program]}"
    else:
        found, where = shutil.which(program) or shutil.which(program, path=SBIN), ""
    if found is None:
        missing(f"{program} not found{where}: apt-get install {PACKAGES.get(program, program)}")
    return found


def check(item: pytest.Item) -> None:
    """Require what ``item``'s markers say it needs (called before each test's setup)."""
    programs = [program for mark in item.iter_markers("needs") for program in mark.args]
    if item.get_closest_marker("vm") is not None:
        programs += VM_PROGRAMS
    for program in programs:
        require(program)

"""The suite's own rules: a missing program skips saying what to install (fails under CI),
and every test has a timeout backstop of the kind that suits it."""

from __future__ import annotations

import pytest

from harness import prerequisites
from harness.prerequisites import require

ABSENT = "anvilfs-no-such-program"


def test_a_missing_program_skips_saying_what_to_install(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setitem(prerequisites.PACKAGES, ABSENT, "anvilfs-some-package")
    with pytest.raises(pytest.skip.Exception, match=f"^{ABSENT} not found: apt-get install anvilfs-some-package$"):
        require(ABSENT)


def test_under_ci_a_missing_program_fails_instead(monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=f"{ABSENT} not found: apt-get install {ABSENT} .CI=true"):
        require(ABSENT)


def test_a_present_program_gives_its_path():
    assert require("sh").endswith("/sh")


def test_a_program_of_one_place_is_looked_for_there_alone(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setitem(prerequisites.PLACES, "sh", "/nonexistent/plan9/bin")  # sh is on PATH, not there
    with pytest.raises(pytest.skip.Exception, match="^sh not found in /nonexistent/plan9/bin: apt-get install sh$"):
        require("sh")
    assert prerequisites.PLACES["rc"] == "/usr/lib/plan9/bin" and prerequisites.PACKAGES["rc"] == "9base"


class _Item:
    """What check() reads of a pytest item: its markers."""

    def __init__(self, *marks: pytest.MarkDecorator):
        self.marks = [m.mark for m in marks]

    def iter_markers(self, name: str):
        return [m for m in self.marks if m.name == name]

    def get_closest_marker(self, name: str):
        return next(iter(self.iter_markers(name)), None)


def test_the_needs_and_vm_markers_require_their_programs(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    prerequisites.check(_Item(pytest.mark.needs("sh")))
    with pytest.raises(pytest.skip.Exception, match=f"^{ABSENT} not found"):
        prerequisites.check(_Item(pytest.mark.needs("sh", ABSENT)))
    monkeypatch.setattr(prerequisites, "VM_PROGRAMS", ("sh", ABSENT))
    with pytest.raises(pytest.skip.Exception, match=f"^{ABSENT} not found"):
        prerequisites.check(_Item(pytest.mark.vm))


def test_a_sync_test_has_the_signal_timeout(request):
    assert request.config.getini("timeout") == "120"
    assert request.node.get_closest_marker("timeout").kwargs == {"method": "signal"}


async def test_a_trio_test_has_the_thread_timeout(request):
    assert request.node.get_closest_marker("timeout").kwargs == {"method": "thread"}


def test_vm_and_clients_tests_get_longer(request):
    for item in request.session.items:
        if item.get_closest_marker("vm") or item.get_closest_marker("clients"):
            assert item.get_closest_marker("timeout").args[0] == 1200, item.nodeid

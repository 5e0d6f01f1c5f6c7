"""A stop or an interrupt from outside (written to the conductor's session's ctl), and where it may cut in.

    control = Control()
    control.check()                    # between steps: raises Halted once one came
    with control.abandonable():        # around a step that only looks (wait, gate)
        ...                            # cancelled by a halt, then Halted is raised

A halt never cuts into an action (a prompt, a bead, a mail, a record):
those finish, and the halt takes effect before the next step. Only steps
that only look are abandoned in the middle, since such a step, not recorded
done, is simply done again when the run resumes: so a halt keeps the
exactly-once record whole.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import trio


class Halted(Exception):
    """The run was stopped or interrupted from outside; `how` is 'stop' or 'interrupt'."""

    def __init__(self, how: str, why: str):
        super().__init__(why)
        self.how, self.why = how, why

    @property
    def outcome(self) -> str:
        return {"stop": "stopped", "interrupt": "interrupted"}[self.how]


class Control:
    def __init__(self) -> None:
        self.halted: Halted | None = None
        self._scopes: set[trio.CancelScope] = set()

    def halt(self, how: str, why: str) -> None:
        if self.halted is None:
            self.halted = Halted(how, why)
        for scope in self._scopes:
            scope.cancel()

    def check(self) -> None:
        if self.halted is not None:
            raise Halted(self.halted.how, self.halted.why)

    @contextlib.contextmanager
    def abandonable(self) -> Iterator[None]:
        self.check()
        with trio.CancelScope() as scope:
            self._scopes.add(scope)
            try:
                yield
            finally:
                self._scopes.discard(scope)
        if scope.cancelled_caught:
            self.check()

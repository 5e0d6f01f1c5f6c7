"""Background writes that may wait a moment, coalesced and ordered.

What must be on disk before a request is answered is written at once
(PrivateDir). Everything else is put here: the latest ``replace`` for a key
wins, ``append``s for a key are joined, and one task writes them soon after,
so a burst of changes costs one write per file, not one per change.

Writes run in stages, lowest first, so a domain can say what must reach the
disk before what: sessions append their transcript (stage 0) before they
replace the file that says a turn ended (stage 2), so that file never
claims an answer the transcript does not have. A write the disk refuses is
kept for the next flush and reported through ``on_error``; it is never
dropped, and never fatal.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

import trio


@dataclass(slots=True)
class _Pending:
    stage: int
    write: Callable[[], None] | None = None  # a replace
    append: Callable[[str], None] | None = None
    parts: list[str] = field(default_factory=list)  # joined for `append`

    def run(self) -> None:
        if self.append is not None:
            self.append("".join(self.parts))
        else:
            self.write()


class SaveQueue:
    """Pending writes by key; ``flush`` writes them; ``run`` flushes soon after each change."""

    def __init__(self, on_error: Callable[[Hashable, OSError], None] = lambda key, exc: None):
        self.on_error = on_error
        self._pending: dict[Hashable, _Pending] = {}
        self._wanted = trio.Event()

    def replace(self, key: Hashable, write: Callable[[], None], *, stage: int = 1) -> None:
        """`write()` replaces a whole file; only the latest one for `key` runs."""
        self._pending[key] = _Pending(stage, write=write)
        self._wanted.set()

    def append(self, key: Hashable, text: str, write: Callable[[str], None], *, stage: int = 0) -> None:
        """`write(all appended text)` adds to a file; texts for `key` are joined in order."""
        pending = self._pending.get(key)
        if pending is None or pending.append is None:
            pending = self._pending[key] = _Pending(stage, append=write)
        pending.parts.append(text)
        self._wanted.set()

    def discard(self, key: Hashable) -> None:
        """Forget a pending write (its object is gone, or was just written another way)."""
        self._pending.pop(key, None)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._pending

    def __len__(self) -> int:
        return len(self._pending)

    def flush(self, only: Callable[[Hashable], bool] | None = None) -> list[Hashable]:
        """Write everything pending (or the keys `only` picks), stage by stage; what fails stays pending.

        Returns the keys that are still pending because their write (or an earlier stage's) failed.
        """
        if only is None:
            pending, self._pending = self._pending, {}
        else:
            pending = {key: self._pending.pop(key) for key in [k for k in self._pending if only(k)]}
        failed_stage, failed = None, []
        for key, item in sorted(pending.items(), key=lambda kv: kv[1].stage):
            if failed_stage is not None and item.stage > failed_stage:
                self._keep(key, item)  # a later stage never lands before an earlier one that failed
                failed.append(key)
                continue
            try:
                item.run()
            except OSError as exc:
                failed_stage = item.stage
                self._keep(key, item)
                failed.append(key)
                self.on_error(key, exc)
        return failed

    def _keep(self, key: Hashable, item: _Pending) -> None:
        newer = self._pending.get(key)
        if newer is None:
            self._pending[key] = item
        elif item.append is not None and newer.append is not None:
            newer.parts[:0] = item.parts  # the failed text goes before what came since
        # else a newer replace supersedes the failed one

    async def run(self) -> None:
        """Flush soon after every change, for ever; a clean stop should flush once more."""
        while True:
            await self._wanted.wait()
            self._wanted = trio.Event()
            await trio.sleep(0)  # let the other woken tasks add their changes to this flush
            self.flush()
            if self._pending:  # the disk refused: try again later, not in a busy loop
                await trio.sleep(1)
                self._wanted.set()

"""`anvilfs web`: the tree in a browser, for the human — a client of the files, like the conductor.

Sessions (status, role, queue, spending, last event; one at a time with
its out, its live stream and why it is in error), beads in waves with their
claims and spending, convoys with their progress and spending, human's
inbox and the approval requests waiting, with approve and reject. Live: the page follows
`events` through server-sent events; nothing polls. Only the files, through
anvilfs.aioclient (tests/suite/test_layers.py); the web libraries come with
the `web` extra (pip install 'anvilfs[web]'), so that the server and the
client commands never load them. docs/web.md says more.
"""

from __future__ import annotations

import sys

EXTRA = "pip install 'anvilfs[web]'"


def main(args) -> int:
    """Run `anvilfs web` with the command line's options (anvilfs/cli.py); its exit status."""
    try:
        import hypercorn  # noqa: F401, PLC0415 - only to say what to install
        import starlette  # noqa: F401, PLC0415
    except ModuleNotFoundError as exc:
        print(f"anvilfs: web needs {exc.name}, of the web extra: {EXTRA}", file=sys.stderr)
        return 1
    from .serve import run  # noqa: PLC0415 - trio and the web libraries, for this command alone

    return run(args)

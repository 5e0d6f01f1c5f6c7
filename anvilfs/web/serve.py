"""`anvilfs web`: connect to the server, follow its events, serve the page on loopback, print the login link."""

from __future__ import annotations

import os
import sys
from functools import partial

import trio
from hypercorn.config import Config
from hypercorn.trio import serve

from ..aioclient import AddressError, AsyncClient, ConnectionLost, ServerError
from ..aioclient.dial import target_of
from ..client.credentials import attach_aname
from .app import build
from .guard import Keys
from .live import Live

HOST = "127.0.0.1"  # loopback only: the page drives your agents' approvals
EXIT_INTERRUPTED = 130  # as the client commands: Ctrl-C


def run(args) -> int:
    """The command: its exit status (1 with a one-line reason when the server cannot be reached or goes away)."""
    address = args.address or "agent"
    _be_nicer(args.nice)
    try:
        trio.run(partial(web, address, args.port, aname=args.aname, token_file=args.token_file))
    except BaseException as exc:  # noqa: BLE001 - sorted out below; what is not ours is raised again
        return _ending(exc, address, args.port)
    return 0


def _be_nicer(by: int) -> None:
    """The page is for watching: on a machine whose cores the server and its agents use, each view it reads
    after a burst of events must not take a core from them when they want it (issue 32: with 10,000 beads a
    view is milliseconds of CPU, right after each change, exactly when the server and its clients work)."""
    if by > 0:
        try:
            os.nice(by)
        except OSError as exc:  # refused (a sandbox's seccomp, say): the page works as it is
            print(f"anvilfs: web: --nice {by}: {exc.strerror or exc}; running at the shell's priority",
                  file=sys.stderr)


def _ending(exc: BaseException, address: str, port: int) -> int:
    leaves = list(_leaves(exc))
    if any(isinstance(leaf, KeyboardInterrupt) for leaf in leaves):
        return EXIT_INTERRUPTED
    for leaf in leaves:
        if isinstance(leaf, (AddressError, ConnectionLost, ServerError)):
            print(f"anvilfs: web: {address}: {leaf}", file=sys.stderr)
            return 1
        if isinstance(leaf, OSError):  # the listener: a port in use, say
            print(f"anvilfs: web: cannot listen on {HOST}:{port}: {leaf.strerror or leaf}; try another --port",
                  file=sys.stderr)
            return 1
    raise exc


def _leaves(exc: BaseException):
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc


async def web(address: str, port: int, *, aname: str | None = None, token_file: str | None = None,
              out=sys.stdout) -> None:
    """Run until cancelled, or until the server goes away (ConnectionLost)."""
    aname = attach_aname(target_of(address), aname=aname, token_file=token_file)
    async with await AsyncClient.connect(address, aname=aname) as fs, trio.open_nursery() as nursery:
        live, keys = Live(fs), Keys()
        await nursery.start(live.run)
        binds = await nursery.start(partial(serve, build(live, keys), _config(port)))
        keys.port = int(binds[0].rpartition(":")[2])
        print(keys.login_url(), file=out, flush=True)
        print("anvilfs web: open the link above (it works once: it sets a cookie in that browser); "
              "Ctrl-C ends", file=sys.stderr, flush=True)


def _config(port: int) -> Config:
    config = Config()
    config.bind = [f"{HOST}:{port}"]
    config.loglevel = "WARNING"  # not hypercorn's "Running on http://..." line: that address alone lets no one in
    config.accesslog = None
    config.graceful_timeout = 1.0  # seconds for open pages' event streams at Ctrl-C
    return config

"""Run anvilfs: listeners, connections, the app's tasks, and clean shutdown."""

from __future__ import annotations

import errno
import functools
import gc
import itertools
import logging
import os
import signal
import sqlite3
import sys
from dataclasses import dataclass

import trio

from ..app import App, MailSettings
from ..backends import build_backends, tmux_session_for
from ..config import ConfigError, load_config
from ..roles import Roles
from ..mail import MailLimits
from ..sessions import RestartPolicy, SessionLimits
from ..storage import StorageError, damaged, damaged_text
from .connection import Connection
from .dispatch import Limits
from ..places import default_namespace, mount_commands
from .listen import ListenError, prepare_namespace, tcp_listeners, unix_listener
from . import attrs, stalls
from .refusal import refuse
from .token import Token, TokenError, load_or_create

log = logging.getLogger("anvilfs.server")


@dataclass(frozen=True, slots=True)
class ServerOptions:
    namespace: str
    state_dir: str
    listen: tuple[str, ...] = ()  # extra addresses: tcp!host!port
    allow_remote: bool = False
    token: bool = True  # TCP attaches must present the state directory's token (--no-token: off)
    trace: bool = False
    config_path: str | None = None  # default $XDG_CONFIG_HOME/anvilfs/config.toml
    tmux_socket: str | None = None  # tmux -L name for tmux agents (default: the user's tmux server)
    max_connections: int = 256
    limits: Limits = Limits()
    paused: bool = False  # per-turn sessions come back exited, not where they were (docs/using.md)

    @property
    def socket_path(self) -> str:
        return os.path.join(self.namespace, "agent")


class Server:
    """Accepts connections and serves each with a Connection over the app's tree."""

    def __init__(self, app: App, options: ServerOptions):
        self.app = app
        app.warm = attrs.warm  # the first listing after a start finds its records encoded (issue 32)
        # what build_ahead made lives as long as its session, bead or convoy, like what the start made: out of
        # the collector's care too (a full collection over it, 10,000 beads, was a 35 ms stall after a start),
        # and the collector stays off until it is made: on a loaded machine build_ahead ran for seconds after
        # the socket was up, and young collections over the directories it was making took 50-100 ms each
        app.built = self._start_done
        self._start_steps = 2  # build_ahead and listening: the collector is settled once both are done
        self.options = options
        self.connections = 0
        self.refusing = 0  # refused connections still being told why
        self._ids = itertools.count(1)

    def _start_done(self) -> None:
        """One of the two steps of a start done (build_ahead, listening); after both, the collector settles."""
        self._start_steps -= 1
        if self._start_steps == 0:
            _settle_garbage_collector()

    def _trace(self, line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    async def handle(self, stream: trio.abc.Stream, token: Token | None = None) -> None:
        name = f"c{next(self._ids)}"
        limit = self.options.max_connections
        if self.connections >= limit:
            self.app.record_error(name, f"refused: already {self.connections} connections, the most allowed")
            if self.refusing >= limit:  # a flood of them: no time for words
                await trio.aclose_forcefully(stream)
                return
            self.refusing += 1
            try:
                await refuse(stream, f"too many connections: at most {limit} at once (--max-connections); close one first", errno.EUSERS)
            finally:
                self.refusing -= 1
            return
        self.connections += 1
        try:
            conn = Connection(
                stream, self.app.root, limits=self.options.limits, name=name,
                trace=self._trace if self.options.trace else None, token=token,
                on_error=lambda where, text: self.app.record_error(f"{name} {where}", text),
            )
            await conn.serve()
        except Exception:  # a bug in one connection must never reach serve_listeners
            log.exception("%s: connection failed", name)
            self.app.record_error(name, "connection closed after an internal error (see the server's log)")
        finally:
            self.connections -= 1

    async def listeners(self) -> tuple[trio.SocketListener, list[trio.SocketListener]]:
        """The unix socket's listener, and the TCP ones. The TCP ones first: whoever waits for the
        socket file to appear (scripts, the test harness) may use the TCP address as soon as it does."""
        prepare_namespace(self.options.namespace)
        tcp = []
        for address in self.options.listen:
            _warn_about(address, token=self.options.token, remote=self.options.allow_remote)
            tcp += await tcp_listeners(address, allow_remote=self.options.allow_remote)
        unix = await unix_listener(self.options.socket_path)
        return unix, tcp

    def tcp_token(self) -> Token | None:
        if not self.options.listen or not self.options.token:
            return None
        token = load_or_create(self.options.state_dir)
        log.info("TCP attaches must give the token in %s as their aname", token.path)
        return token

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        # Catch SIGINT/SIGTERM before the socket exists: a client that sees the
        # socket may stop the server at once, and that must be a clean stop.
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            token = self.tcp_token()
            unix, tcp = await self.listeners()
            try:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._stop_on_signal, signals, nursery.cancel_scope)
                    await nursery.start(self.app.run)
                    await nursery.start(trio.serve_listeners, self.handle, [unix])
                    if tcp:
                        await nursery.start(trio.serve_listeners, functools.partial(self.handle, token=token), tcp)
                    self._say_where(token)
                    self._start_done()
                    task_status.started(self.options.socket_path)
            finally:
                _unlink_quietly(self.options.socket_path)

    def _say_where(self, token: Token | None) -> None:
        """The exact addresses, and the commands that reach them, so nobody has to guess a path."""
        path = self.options.socket_path
        log.info("serving unix!%s", path)
        for address in self.options.listen:
            log.info("serving %s (%s)", address, f"aname: the token in {token.path}" if token else "no token")
        log.info("try: anvilfs read %s   (plan9port: 9p %s ls)", _client_name(path), f"-a 'unix!{path}'")
        kernel, fuse = mount_commands(path)
        log.info("mount: %s   (no 9p in the kernel: %s)", kernel, fuse)

    async def _stop_on_signal(self, signals, scope: trio.CancelScope) -> None:
        async for signum in signals:
            log.info("%s: shutting down", signal.Signals(signum).name)
            scope.cancel()
            return


def _warn_about(address: str, *, token: bool, remote: bool) -> None:
    if not token:
        who = "anyone who reaches it" if remote else "every local user"
        log.warning("listening on %s without a token (--no-token): %s can drive your agents", address, who)
    elif remote:
        log.warning("listening on %s beyond this host: the token travels in clear text; prefer ssh -L", address)


def _client_name(socket_path: str) -> str:
    """What to give `anvilfs read`: agent/list when the socket is where the client looks, else -a."""
    if os.path.dirname(socket_path) == default_namespace() and os.path.basename(socket_path) == "agent":
        return "agent/list"
    return f"-a 'unix!{socket_path}' list"


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def build_app(options: ServerOptions) -> App:
    """The app a server serves: backends, limits and roles from the configuration."""
    loaded = load_config(options.config_path)
    config = loaded.config
    tmux_session = tmux_session_for(options.namespace)
    address = f"unix!{options.socket_path}"

    def agent_env(name: str) -> dict[str, str]:
        return {"ANVILFS_SESSION": name, "ANVILFS_ADDRESS": address, "NAMESPACE": options.namespace}

    log.info("configuration: %s%s", loaded.path, "" if loaded.found else " (not there: built-in backends only)")
    backends = build_backends(config, tmux_session=tmux_session, tmux_socket=options.tmux_socket)
    if any(backend.kind == "tmux" for backend in backends.values()):
        attach = f"tmux {'-L ' + options.tmux_socket + ' ' if options.tmux_socket else ''}attach -t {tmux_session}"
        log.info("tmux agents run in tmux session %s (watch them: %s)", tmux_session, attach)
    return App(
        backends=backends,
        limits=SessionLimits(max_sessions=config.limits.max_sessions, max_prompt_bytes=config.limits.max_prompt_bytes),
        mail=MailSettings(MailLimits(config.limits.max_inbox, config.limits.max_mail_bytes),
                          config.mail.notice, config.mail.approval_reminder, config.mail.tools_notice),
        restart=RestartPolicy(**config.restart.model_dump()),
        state_dir=options.state_dir, roles=Roles(loaded.directory / "roles"), agent_env=agent_env,
        paused=options.paused, merge_config=config.merge_config,
    )


def run_server(options: ServerOptions) -> int:
    """Serve until SIGINT or SIGTERM; the exit status for the command line."""
    gc.disable()  # for the start: see _settle_garbage_collector
    try:
        server = Server(build_app(options), options)
        trio.run(server.run, instruments=stalls.from_environment())
    except _ENDINGS as exc:
        if not _said(exc):
            raise
        print(f"anvilfs: {_ending_text(exc, options)}", file=sys.stderr)
        return 1
    except BaseExceptionGroup as group:  # raised inside trio's nurseries: the same errors, wrapped
        said, rest = group.split(_said)
        if said is None or rest is not None:
            raise
        for exc in _leaves(said):
            print(f"anvilfs: {_ending_text(exc, options)}", file=sys.stderr)
        return 1
    finally:
        gc.enable()  # on for whoever goes on after a start that failed
    return 0


# What ends the server said in a line, not as a traceback: what stops a start (a socket in use, a bad
# configuration, a state directory refused) and a database SQLite says is damaged, whenever it is met (any
# other sqlite3 error is a bug's, and keeps its traceback)
_ENDINGS = (ListenError, ConfigError, StorageError, TokenError, sqlite3.DatabaseError)


def _said(exc: BaseException) -> bool:
    return isinstance(exc, _ENDINGS) and (not isinstance(exc, sqlite3.DatabaseError) or damaged(exc))


def _ending_text(exc: BaseException, options: ServerOptions) -> str:
    if isinstance(exc, sqlite3.DatabaseError):
        return damaged_text(exc, os.path.join(os.path.abspath(options.state_dir), "anvilfs.db"))  # as Database's
    return str(exc)


def _settle_garbage_collector() -> None:
    """Keep the collector's pauses out of the answers: what the start made (the modules, every restored
    session) lives as long as the server, so it leaves the collector's care (gc.freeze), and the young
    generation is collected less often. Before this, with 1,000 sessions, full and young collections
    came in the middle of serving (benchmarks/history.md).

    The collector is off for the start itself (run_server), build_ahead's included: with 10,000 beads it ran
    three full collections there, 0.1-0.2 s of a 1.1 s restart, over objects that were all going to be frozen
    here. What that
    leaves is the cycles the start made and dropped (a traceback, a finished task): frozen with the rest, kept
    for the server's life, once; 2,700 objects on that tree (a full collection here would find them, at the
    0.13 s it was meant to save)."""
    gc.freeze()
    gc.set_threshold(10_000, 20, 20)
    gc.enable()


def _leaves(group: BaseExceptionGroup):
    for exc in group.exceptions:
        yield from _leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc]

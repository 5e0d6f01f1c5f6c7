"""The `anvilfs` command: `serve`, and a client that behaves like plan9port's 9p.

    anvilfs serve [--namespace DIR] [--state DIR] [--listen tcp!HOST!PORT] [--allow-remote] [--trace]
    anvilfs [-a ADDRESS] [-A ANAME] [--token-file FILE] read|write|ls|stat|rdwr ... NAME
    anvilfs [-a ADDRESS] notify|inbox|approve|reject|mail ...   (anvilfs/client/mailcmds.py)
    anvilfs [-a ADDRESS] top [--once]                         (anvilfs/client/top.py)
    anvilfs [-a ADDRESS] web [--port N]                       (anvilfs/web: the `web` extra)
    anvilfs [-a ADDRESS] hook running|await                   (anvilfs/client/hook.py)

Without -a, NAME is service/path: `agent/list` is /list on the server at
unix!$NAMESPACE/agent. With -a (unix!/path or tcp!host!port), NAME is the
path on that server.

Only `serve` imports the server (trio, the backends, httpx, pydantic): the
client commands are what shell loops and agents' hooks run, many times a
second, so they load only the blocking client and the protocol package.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import NoReturn

from . import __version__
from .client import (
    COMMANDS,
    AddressError,
    Client,
    CommandError,
    ConnectionLost,
    ServerError,
    attach_aname,
    attach_uname,
    dial,
    resolve,
)
from .client import hook, mailcmds, mountline, top
from .client.commands import whole
from .ninep import RemoteProtocolError
from .places import default_state_dir

# commands that name no file: they work from the tree's root, agent/ (or / of the server at -a)
ROOT_PARSERS = {**mailcmds.PARSERS, **top.PARSERS, **hook.PARSERS}
ROOT_COMMANDS = {**mailcmds.COMMANDS, **top.COMMANDS, **hook.COMMANDS}

EXIT_INTERRUPTED = 128 + 2  # SIGINT, as a shell reports a process that Ctrl-C ended
EXIT_PIPE_CLOSED = 128 + 13  # SIGPIPE: the reader of our output went away (`| head -1`)

DESCRIPTION = ("A 9P file server that presents LLM coding-agent sessions as files, and a client for it "
               "that works like plan9port's 9p. Start the server once, then read and write its files "
               "from any shell.")

EXAMPLES = """\
examples:
  anvilfs serve                                  start the server (Ctrl-C stops it)
  anvilfs write agent/ctl 'new sim /tmp name=bot1'
  echo hello | anvilfs write agent/bot1/in       send a prompt
  anvilfs read agent/bot1/wait                   block until the turn ends
  anvilfs read agent/bot1/out                    the answer
  anvilfs ls -l agent                            the files and sessions
  anvilfs -a 'tcp!127.0.0.1!5640' read list      a server on TCP (sends the token)

NAME is service/path (agent/list is /list on unix!$NAMESPACE/agent); with
-a it is the path on that server. `anvilfs COMMAND --help` says more."""

CLIENT_COMMANDS = {
    "read": ("print a file's contents until its end",
             "A blocking file (events, stream, wait) is followed until it ends or Ctrl-C (exit 130).",
             ["anvilfs read agent/list", "anvilfs read agent/events | grep bot1"]),
    "write": ("write TEXT, or else standard input, to a file",
              "Input goes in whole lines per write where they fit, since ctl files act per write.",
              ["anvilfs write agent/ctl 'new sim /tmp name=bot1'", "echo hello | anvilfs write agent/bot1/in",
               "printf 'stop\\nrestart\\n' | anvilfs write -l agent/bot1/ctl"]),
    "ls": ("list a directory's entries (or name a file)", None,
           ["anvilfs ls agent", "anvilfs ls -l agent/bot1", "anvilfs ls -ld agent"]),
    "stat": ("print a file's 9P stat record, as 9p stat does", None, ["anvilfs stat agent/list"]),
    "rm": ("remove files: acknowledge a message (inbox/ID.json), remove a session (its directory)",
           "As 9p rm: the names are removed in order; the first refusal stops it (exit 1).",
           ["anvilfs rm agent/human/inbox/m-3f2a.json", "anvilfs rm agent/bot1"]),
    "rdwr": ("open a file read-write: print a read, write a line of input, repeat",
             "As 9p rdwr: ends when standard input ends.",
             ["echo 'new sim /tmp' | anvilfs rdwr agent/ctl    # prints the new session's name"]),
}


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Wraps descriptions to the terminal, but keeps the lines of an examples epilog as written."""

    def __init__(self, prog: str, **kwargs) -> None:
        # argparse makes a formatter for every add_argument, and its own asks
        # shutil for the width: importing shutil (and zlib, bz2, lzma with it)
        # was a tenth of a client command's start.
        kwargs.setdefault("width", _terminal_columns() - 2)
        super().__init__(prog, **kwargs)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith("examples:"):
            return super()._fill_text(text, width, indent)
        return argparse.HelpFormatter._fill_text(self, text, width, indent)


def _terminal_columns() -> int:
    """As shutil.get_terminal_size: $COLUMNS, else the terminal's width, else 80."""
    try:
        if (columns := int(os.environ["COLUMNS"])) > 0:
            return columns
    except (KeyError, ValueError):
        pass
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns
    except (AttributeError, ValueError, OSError):
        return 80


def _client_options(parser: argparse.ArgumentParser, *, top: bool) -> None:
    # Below a command, an option not given must not overwrite the one given
    # before it (`anvilfs -a X read NAME`): argparse.SUPPRESS leaves it out.
    default = None if top else argparse.SUPPRESS
    parser.add_argument("-a", dest="address", metavar="ADDRESS", default=default,
                        help="the server's address: unix!/path/to/socket or tcp!HOST!PORT "
                             "(default: unix!$NAMESPACE/SERVICE, from NAME)")
    parser.add_argument("-A", dest="aname", metavar="ANAME", default=default,
                        help="attach with this aname, as 9p -A does (for TCP, instead of the token)")
    parser.add_argument("--token-file", metavar="FILE", default=default,
                        help="for a tcp! address, read the token from FILE (default: $ANVILFS_TOKEN, "
                             "else $XDG_STATE_HOME/anvilfs/token if readable)")


def _add_client_command(sub, name: str) -> argparse.ArgumentParser:
    return _add_command(sub, name, *CLIENT_COMMANDS[name])


def _add_command(sub, name: str, summary: str, detail: str | None, examples: list[str]) -> argparse.ArgumentParser:
    epilog = "examples:\n" + "\n".join(f"  {line}" for line in examples)
    description = f"{summary[0].upper()}{summary[1:]}. {detail or ''}".strip()
    p = sub.add_parser(name, help=summary, description=description, epilog=epilog, formatter_class=_Formatter)
    _client_options(p, top=False)
    return p


def _add_serve(sub) -> None:
    serve = sub.add_parser(
        "serve", help="run the file server", formatter_class=_Formatter,
        description="Run the file server on the unix socket `agent` in the namespace directory, "
                    "until Ctrl-C or SIGTERM.",
        epilog="examples:\n  anvilfs serve\n  anvilfs serve --listen 'tcp!127.0.0.1!5640' --trace    # quoted: ! is special to bash\n"
               "  anvilfs serve --namespace /tmp/ns.test --state /tmp/anvil-state")
    serve.add_argument("--namespace", default=None, metavar="DIR",
                       help="directory for the `agent` socket (default $NAMESPACE or /tmp/ns.$USER.$DISPLAY)")
    serve.add_argument("--state", default=None, metavar="DIR",
                       help="directory for persistent state (default $XDG_STATE_HOME/anvilfs)")
    serve.add_argument("--listen", action="append", default=[], metavar="tcp!HOST!PORT",
                       help="also listen on TCP, e.g. tcp!127.0.0.1!5640 (repeatable; loopback unless --allow-remote)")
    serve.add_argument("--allow-remote", action="store_true",
                       help="allow a non-loopback --listen address (anyone who reaches it drives your agents)")
    serve.add_argument("--no-token", action="store_true",
                       help="TCP attaches need no token (every local user can then drive your agents; warned about)")
    serve.add_argument("--config", default=None, metavar="FILE",
                       help="configuration file (default $XDG_CONFIG_HOME/anvilfs/config.toml)")
    serve.add_argument("--tmux-socket", default=None, metavar="NAME",
                       help="run tmux agents on this tmux server (tmux -L NAME)")
    serve.add_argument("--trace", action="store_true", help="print every 9P message to standard error")
    serve.add_argument("--paused", action="store_true",
                       help="bring back every per-turn session (command, sim, openai) exited, its queue kept, "
                            "instead of going on where it was: `restart` on its ctl runs it")
    serve.add_argument("--msize", type=int, default=None, metavar="BYTES",
                       help="largest message size offered to clients (default: the server's limit, 1048576)")
    serve.add_argument("--max-connections", type=int, default=256, metavar="N",
                       help="connections served at once; more are refused (default %(default)s)")


def _add_web(sub) -> None:
    web = _add_command(sub, "web", "show the sessions, beads, convoys and human's mail in a browser",
                       "Serves a live page on 127.0.0.1 and prints a one-time login link; needs the web extra "
                       "(pip install 'anvilfs[web]'). docs/web.md says more.",
                       ["anvilfs web", "anvilfs web --port 8641", "anvilfs -a 'tcp!127.0.0.1!5640' web"])
    web.add_argument("--port", type=int, default=0, metavar="N", help="the loopback port (default: one the system picks)")
    web.add_argument("--nice", type=int, default=10, metavar="N",
                     help="run N nicer than the shell (default %(default)s: the page yields the CPU to the server and "
                          "its agents; 0 keeps the shell's priority)")


def _add_mcp(sub) -> None:
    _add_command(sub, "mcp", "serve this session's tools to its agent CLI (Model Context Protocol, stdio)",
                 "Run by an agent CLI that anvilfs started, never by hand: it acts as $ANVILFS_SESSION on the server "
                 "at $ANVILFS_ADDRESS, which the server sets for its agents. docs/bots.md lists the tools.",
                 ["anvilfs mcp   # in a CLI's MCP configuration: {\"command\": \"anvilfs\", \"args\": [\"mcp\"]}"])


def _parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="anvilfs", description=DESCRIPTION, epilog=EXAMPLES, formatter_class=_Formatter)
    top.add_argument("--version", action="version", version=f"anvilfs {__version__}")
    _client_options(top, top=True)
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND",
                             help="one of these (`anvilfs COMMAND --help` for its options)")
    _add_serve(sub)
    service = sub.add_parser(
        "install-service", help="install a systemd user unit that runs `anvilfs serve`", formatter_class=_Formatter,
        description="Write ~/.config/systemd/user/anvilfs.service, which runs this anvilfs's `serve` with the "
                    "options given after --, restarts it if it dies, and never kills the tmux agents when it stops.",
        epilog="examples:\n  anvilfs install-service\n  anvilfs install-service --print -- --listen 'tcp!127.0.0.1!5640'")
    service.add_argument("--print", dest="print_only", action="store_true", help="print the unit instead of writing it")
    service.add_argument("serve_args", nargs="*", metavar="SERVE-OPTION", help="options for `anvilfs serve`, after --")
    commands = {name: _add_client_command(sub, name) for name in CLIENT_COMMANDS}
    for name, (summary, detail, examples, add_arguments) in ROOT_PARSERS.items():
        add_arguments(_add_command(sub, name, summary, detail, examples))
    _add_web(sub)
    _add_mcp(sub)
    for name, (summary, detail, examples, add_arguments) in mountline.PARSERS.items():
        add_arguments(_add_command(sub, name, summary, detail, examples))
    for name in ("read", "stat", "rdwr"):
        commands[name].add_argument("name", metavar="NAME", help="the file, e.g. agent/list")
    commands["rm"].add_argument("names", nargs="+", metavar="NAME", help="a file to remove, e.g. agent/bot1/inbox/ID.json")
    write = commands["write"]
    write.add_argument("-l", dest="lines", action="store_true", help="write each line of input with its own write")
    write.add_argument("name", metavar="NAME", help="the file, e.g. agent/ctl")
    write.add_argument("text", nargs="*", metavar="TEXT", help="text to write (words joined by spaces, a newline added); standard input if none")
    ls = commands["ls"]
    ls.add_argument("-l", dest="long", action="store_true", help="long form: mode, owner, group, length, time, name")
    ls.add_argument("-d", dest="itself", action="store_true", help="the directory itself, not its entries")
    ls.add_argument("name", metavar="NAME", help="the directory or file, e.g. agent")
    return top


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    return _dispatch(parser, parser.parse_args(argv))


def run() -> NoReturn:
    """The `anvilfs` command (the console script, `python -m anvilfs`): main, and a quick end for a client.

    A client command's process ends with os._exit once its output is flushed:
    the interpreter's teardown (every module and object freed one by one) is a
    noticeable part of an `anvilfs read`, and does nothing a client needs
    (it holds no file but its socket, closed by then, stdout and stderr, and
    registers no atexit work). The server ends the usual way, and so does a
    client run under a profiler or tracer, whose report is written at exit."""
    parser = _parser()
    args = parser.parse_args()
    status = _dispatch(parser, args)
    if args.command in _SERVER_COMMANDS or sys.getprofile() or sys.gettrace():
        sys.exit(status)  # a profiler or tracer (cProfile, trace, coverage) writes its report at exit
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:  # a reader that went away after the command's own flush: as main's BrokenPipeError
        status = status or EXIT_PIPE_CLOSED
    os._exit(status)


_SERVER_COMMANDS = ("serve", "install-service", "web", "mcp")


def _dispatch(parser: argparse.ArgumentParser, args) -> int:
    if args.command == "serve":
        return _serve(parser, args)
    if args.command == "install-service":
        from .service import install  # noqa: PLC0415 - only this command needs it

        return install(args.serve_args, print_only=args.print_only)
    _take_sigint()
    if args.command == "mountline":  # names the socket; no connection
        try:
            return mountline.mountline(args)
        except AddressError as exc:
            return _fail(str(exc))
    if args.command == "web":
        if args.nice < 0:
            parser.error(f"--nice {args.nice}: give 0 or more (a priority above the shell's is root's to give)")
        from .web import main as web  # noqa: PLC0415 - trio and the web libraries, for this command alone

        return web(args)
    if args.command == "mcp":
        from .mcpserver.serve import main as mcp  # noqa: PLC0415 - the MCP SDK, for this command alone

        return mcp(args)
    try:
        status = _run_client_command(args)
        sys.stdout.flush()  # here, so a closed pipe is seen now and not at exit
        return status
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # only standard output: the client's own socket raises ConnectionLost
        _silence_stdout()
        return EXIT_PIPE_CLOSED


def _take_sigint() -> None:
    """Ctrl-C ends a client even when it was started with SIGINT ignored (a job started with `&`).

    Python leaves an inherited SIG_IGN alone, so a blocking read from a
    background job could not be interrupted at all; the server takes SIGINT
    back the same way (trio's signal receiver)."""
    import _signal  # noqa: PLC0415 - the C module: `signal` would import enum for a client's every start

    _signal.signal(_signal.SIGINT, _signal.default_int_handler)


PINNED = "ANVILFS_PINNED"  # set in an agent's environment (backends/agent_tools.py): its anvilfs is its server's


def _run_client_command(args) -> int:
    if os.environ.get(PINNED) and (getattr(args, "address", None) not in (None, os.environ.get("ANVILFS_ADDRESS"))
                                   or any(getattr(args, key, None) is not None for key in ("aname", "token_file"))):
        return _fail("an agent's anvilfs talks to its own server only (-a other than $ANVILFS_ADDRESS, -A and "
                     f"--token-file are refused where {PINNED} is set); name the file as agent/PATH")
    if args.command in ROOT_COMMANDS:
        args.name = "/" if args.address else "agent/"
    elif args.command == "rm":
        args.name = args.names[0]
    try:
        if before := getattr(args, "before_connecting", None):
            before(args)  # hook: what must be done even if no server answers
        target = resolve(args.name, args.address)
        aname = attach_aname(target, aname=args.aname, token_file=args.token_file)

        def connect() -> Client:  # top follows events on a second connection
            return Client(dial(target), uname=attach_uname(), aname=aname)

        args.connect = connect
        with connect() as client:
            try:
                return {**COMMANDS, **ROOT_COMMANDS}[args.command](client, target.path, args)
            except ServerError as exc:  # plan9port's 127 bytes of it: the whole text is in `errors`
                raise ServerError(whole(client, target.path, str(exc))) from None
    except ServerError as exc:
        return _fail(f"{args.name}: {exc}")
    except (AddressError, CommandError) as exc:
        return _fail(str(exc))
    except ConnectionLost as exc:
        return _fail(f"{args.name}: {exc}")
    except RemoteProtocolError as exc:  # e.g. -a names some other kind of server
        return _fail(f"{args.name}: the server's reply is not 9P ({exc}); is that an anvilfs server?")


def _fail(text: str) -> int:
    print(f"anvilfs: {text}", file=sys.stderr)
    return 1


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that Python's flush at exit does not report the closed pipe again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _serve(parser: argparse.ArgumentParser, args) -> int:
    import logging  # noqa: PLC0415 - here, so that the client commands never load the server

    from .ninep.dialect import MIN_MSIZE  # noqa: PLC0415
    from .server import Limits, ServerOptions, default_namespace, run_server  # noqa: PLC0415

    msize = args.msize if args.msize is not None else Limits().max_msize
    if msize < MIN_MSIZE:
        parser.error(f"--msize {msize} is too small: at least {MIN_MSIZE}")
    logging.basicConfig(level=logging.INFO, format="anvilfs: %(message)s")
    options = ServerOptions(
        namespace=args.namespace or default_namespace(),
        state_dir=args.state or default_state_dir(),
        listen=tuple(args.listen), allow_remote=args.allow_remote, trace=args.trace,
        config_path=args.config, tmux_socket=args.tmux_socket, token=not args.no_token,
        max_connections=args.max_connections, limits=Limits(max_msize=msize), paused=args.paused,
    )
    return run_server(options)


if __name__ == "__main__":
    run()

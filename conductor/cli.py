"""The command line: `anvilfs-conductor run WORKFLOW.toml`, `check WORKFLOW.toml` (or `python -m conductor`)."""

from __future__ import annotations

import argparse
import gc
import os
import re
import sys
from pathlib import Path

import trio

from .access import Access
from .engine import Engine
from .journal import Journal, JournalError
from .loading import WorkflowError, load
from .model import STEP_ID, Workflow
from .overrides import OverrideError, apply, backends
from .report import SessionReporter
from .ninetree import NinePTree
from .tree import MountTree, Unavailable

EPILOG = """examples:
  anvilfs-conductor check conductor/examples/review.toml
  anvilfs-conductor run conductor/examples/review.toml              # unix!$NAMESPACE/agent
  anvilfs-conductor run --backend sim conductor/examples/review.toml   # every session on sim
  anvilfs-conductor run --backend claude=codex review.toml          # claude's sessions on codex
  anvilfs-conductor run -a unix!/tmp/ns.me.:0/agent review.toml
  anvilfs-conductor run --mount /mnt/agent --poll 1 review.toml
Killed and run again with the same --state and --name, it resumes where it was
(with the same --backend: a run resumed with others is refused). A finished run
run again only says how it ended; --again starts a new one.
It shows itself as session conductor-NAME (kind external; --session to choose):
`anvilfs read agent/conductor-review/status` or `.../wait`; `stop` or `interrupt`
on its ctl halts it.
exit status: 0 done, 1 failed, 2 a bad workflow, --backend, record or session, 3 stopped,
4 interrupted."""

EXIT = {"done": 0, "failed": 1, "refused": 2, "stopped": 3, "interrupted": 4}


async def _run(tree, engine: Engine) -> tuple[str, str]:
    async with tree:
        return await engine.run()


def default_state() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "anvilfs-conductor"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="anvilfs-conductor", description="Run workflows over the anvilfs tree.",
                                epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="validate a workflow file and exit")
    check.add_argument("workflow")
    run = sub.add_parser("run", help="run (or resume) a workflow", epilog=EPILOG,
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_argument("workflow")
    where = run.add_mutually_exclusive_group()
    where.add_argument("-a", "--address", help="the server's 9P address (unix!PATH or tcp!HOST!PORT)")
    where.add_argument("--mount", help="a mounted agent tree instead of a 9P connection")
    run.add_argument("--state", type=Path, default=default_state(),
                     help="where the conductor keeps its record (default: %(default)s)")
    run.add_argument("--name", help="this conductor's name (default: the workflow's name)")
    run.add_argument("--run", dest="run_id", help="the run id in the prompts' first lines (default: made up)")
    run.add_argument("--again", action="store_true", help="start a new run over a finished one, or over a record of another "
                     "version of the workflow file or other --backend values (an unfinished run of this version goes on)")
    run.add_argument("--backend", action="append", default=[], metavar="NAME|OLD=NEW",
                     help="make the workflow's sessions on backend NAME instead of the ones it declares; or, "
                     "repeatable, those declared on OLD on NEW (e.g. --backend sim, --backend claude=codex). "
                     "Sessions that exist already keep theirs: one on another backend is refused. A run "
                     "resumed with other backends than it began with is refused (the same, or --again)")
    run.add_argument("--poll", type=float, metavar="SECONDS", help="poll status every SECONDS instead of blocking")
    shown = run.add_mutually_exclusive_group()
    shown.add_argument("--session", metavar="NAME",
                       help="the session (kind external) it shows itself as (default: conductor-NAME, NAME its --name)")
    shown.add_argument("--no-session", action="store_true", help="show itself in no session")
    run.add_argument("--retry-for", type=float, default=300, metavar="SECONDS",
                     help="how long to keep trying an unavailable server (default: %(default)s): a line on "
                     "stderr when it goes, a notice every 30 s (or quarter of SECONDS) and when it is back")
    return p


def _settle_garbage_collector() -> None:
    """As the server does (server/serve.py): what the start made leaves the collector's care, and the
    young generation is collected less often. In a conductor of 100 lanes, full collections held up
    every lane before this (benchmarks/history.md)."""
    gc.freeze()
    gc.set_threshold(10_000, 20, 20)


class Usage(Exception):
    """Options of `run` that do not fit; the text says which and how (exit 2)."""


def _options(args: argparse.Namespace, declared: Workflow) -> tuple[Workflow, str | None]:
    """The workflow with --backend applied, and the conductor's session (None: --no-session)."""
    if args.run_id is not None and not re.fullmatch(STEP_ID, args.run_id):
        raise Usage(f"--run {args.run_id!r}: a run id is 1-64 letters, digits, - and _, beginning with a letter "
                    "or digit (it is one word of the prompts' first lines and of the session's status)")
    if args.poll is not None and args.poll <= 0:
        raise Usage("--poll needs a positive number of seconds")
    workflow = apply(declared, args.backend)
    name = args.name or workflow.name
    session = None if args.no_session else (args.session or f"conductor-{name}")
    if session in workflow.sessions:
        raise Usage(f"the conductor's own session would be {session!r}, which the workflow declares as one of "
                    "its sessions: give --session OTHER (or --name OTHER)")
    return workflow, session


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        loaded = load(args.workflow)
    except WorkflowError as exc:
        print(exc, file=sys.stderr)
        return 2
    if args.command == "check":
        print(f"{args.workflow}: workflow {loaded.workflow.name!r} is valid")
        return 0
    try:
        workflow, session = _options(args, loaded.workflow)
    except (Usage, OverrideError) as exc:
        print(f"anvilfs-conductor: {exc}", file=sys.stderr)
        return 2
    name = args.name or workflow.name
    try:
        tree = MountTree(args.mount) if args.mount else NinePTree(args.address)
        journal = Journal.open(args.state, name, loaded.digest, run=args.run_id, again=args.again,
                               backends=backends(workflow), override=args.backend)
    except (Unavailable, JournalError) as exc:
        print(f"anvilfs-conductor: {exc}", file=sys.stderr)
        return 2
    try:
        access = Access(tree, poll=args.poll, retry_for=args.retry_for)
        if journal.resumed_from:
            access.say(f"resuming a run that was {journal.resumed_from['outcome']}: {journal.resumed_from['why']}")
        reporter = None if session is None else SessionReporter(
            access, session, loaded.path.parent.resolve(), workflow.name, journal.run, journal.replaced_run)
        engine = Engine(workflow, loaded.path.parent, access, journal, reporter, override=args.backend)
        _settle_garbage_collector()
        outcome, why = trio.run(_run, tree, engine)
    except KeyboardInterrupt:
        return 130
    finally:
        journal.close()
    print(f"{outcome}: {why}")
    return EXIT[outcome]

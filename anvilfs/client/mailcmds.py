"""The mail commands of `anvilfs`: notify, inbox, approve, reject, mail (only files; nothing of the server).

    anvilfs notify [--all] [COMMAND [ARG ...]]   for each message to human waiting at its start or new
                                                 (by default only approval and review requests, and
                                                 re-announced approvals), run
                                                 COMMAND ARG... SENDER TYPE SUBJECT (no shell); default
                                                 notify-send where it exists, else a line on stderr
    anvilfs inbox [PARTICIPANT]                  one line per unacknowledged message: id from type subject
    anvilfs approve ID                           ID: a waiting request's id, or a bead's id
    anvilfs reject ID REASON ...
    anvilfs mail TO TYPE SUBJECT                 body on standard input; from $ANVILFS_SESSION, else human

Each takes the address options of the other client commands (-a, -A, --token-file).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator

from ..ninep import consts as c
from ..ninep import messages as m
from .client import Client, ServerError
from .commands import CommandError
from .ctlwords import ctl_line

HUMAN = "human"
TOLD_BY_DEFAULT = ("APPROVAL_REQUEST", "REVIEW_REQUEST")
ANSWERED = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")  # what approve|reject answer: a request's id or a bead's
# an `events` line about mail: TIME mail:ID TYPE [waiting since T] from SENDER to TO [bead B]: SUBJECT
_MAIL_LINE = re.compile(r"\S+ mail:(?P<id>\d{16}) (?P<type>[A-Z_]+)(?P<again> waiting since \S+)? "
                        r"from (?P<sender>\S+) to (?P<to>\S+)(?: bead \S+)?: (?P<subject>.*)\Z")


# name -> (summary, detail, examples, how to add its arguments): the command line (anvilfs/cli.py) adds
# each with the client's own options; each runs as COMMANDS[name](client, root, args).
def _notify_args(p) -> None:
    p.add_argument("--all", action="store_true", help="every message, not only approval and review requests")
    p.add_argument("argv", nargs="*", metavar="COMMAND", help="the command and its first arguments "
                   "(default: notify-send, else a line on stderr); SENDER TYPE SUBJECT are added")


def _inbox_args(p) -> None:
    p.add_argument("participant", nargs="?", default=HUMAN, metavar="PARTICIPANT", help="whose inbox (default human)")


def _approve_args(p) -> None:
    p.add_argument("id", metavar="ID", help="a waiting request's id, or its bead's id")


def _reject_args(p) -> None:
    _approve_args(p)
    p.add_argument("reason", nargs="+", metavar="REASON", help="why, for the one who asked")


def _mail_args(p) -> None:
    p.add_argument("to", metavar="TO", help="a session's name, or human")
    p.add_argument("type", metavar="TYPE", help="PROMPT, QUERY, REVIEW or APPROVAL, each _REQUEST or _RESPONSE")
    p.add_argument("subject", metavar="SUBJECT", help="one line")


PARSERS = {
    "notify": ("run a command for each new message to human",
               "Blocks on agent/events (no polling); the command runs without a shell.",
               ["anvilfs notify", "anvilfs notify --all notify-send -u critical", "anvilfs notify /usr/local/bin/page-me"],
               _notify_args),
    "inbox": ("list the unacknowledged mail of human (or of PARTICIPANT)", "One line each: id from type subject.",
              ["anvilfs inbox", "anvilfs inbox bot1"], _inbox_args),
    "approve": ("approve a waiting approval request (its id, or its bead's)", None,
                ["anvilfs approve 0001733050000000", "anvilfs approve research-auth-001"], _approve_args),
    "reject": ("reject a waiting approval request, saying why", "The requester gets the reason in its inbox.",
               ["anvilfs reject research-auth-001 no test for the fix"], _reject_args),
    "mail": ("send a message, its body on standard input", "From $ANVILFS_SESSION if set, else from human.",
             ["echo 'please review' | anvilfs mail bot1 REVIEW_REQUEST 'auth change'"], _mail_args),
}


def _join(root: str, path: str) -> str:
    return f"{root.strip('/')}/{path}".lstrip("/")


def send(client: Client, root: str, sender: str, message: dict) -> str:
    """Write one message to SENDER/mail; the id the read-back answers, or ServerError with why not."""
    import json  # here, not at the top: every `anvilfs read` imports this module, few of them send mail

    return sent_id(client.read_back(_join(root, f"{sender}/mail"), json.dumps(message).encode()).decode().strip())


def notify(client: Client, root: str, args) -> int:
    import shutil  # noqa: PLC0415 - here: it loads zlib, bz2 and lzma, which every other client command would pay for

    argv = args.argv or (["notify-send", "--"] if shutil.which("notify-send") else [])
    fid = client.open(_join(root, "events"), c.OREAD)  # first: what arrives from now on is in events
    seen = _tell_waiting(client, root, argv, args.all)
    told = "all messages" if args.all else "approval and review requests"
    # said once the waiting ones are told: what comes after this line is told as new
    print(f"anvilfs: notify: watching events for {told} to human", file=sys.stderr, flush=True)
    offset, pending = 0, b""
    while True:
        data = client.read_chunk(fid, offset)  # blocks until there is an event: no polling
        if not data:
            return 0
        offset += len(data)
        *lines, pending = (pending + data).split(b"\n")
        for line in lines:
            found = _MAIL_LINE.match(line.decode(errors="replace"))
            if found is not None and (found["again"] or found["id"] not in seen):
                _tell(found, argv, args.all)


def _tell_waiting(client: Client, root: str, argv: list[str], everything: bool) -> set[str]:
    """Announce what waits in human's inbox already (a request is missed otherwise); the ids told."""
    waiting = {line.split(" ", 1)[0] for line in client.read_file(_join(root, "human/approvals")).decode().splitlines()}
    seen = set()
    for message in inbox_messages(client, root, HUMAN):
        if message["type"] == "APPROVAL_REQUEST" and message["id"] not in waiting:
            continue  # answered already
        seen.add(message["id"])
        _tell({"id": message["id"], "to": HUMAN, "type": message["type"], "sender": message["from"],
               "subject": message["subject"], "again": " waiting"}, argv, everything)
    return seen


def inbox_messages(client: Client, root: str, who: str) -> Iterator[dict]:
    """The messages in WHO's inbox, oldest first, each read as it comes. One acknowledged between the
    listing and its read is left out without a word: it is no longer in the inbox, which is what
    `inbox` and `notify` tell of. Only that is passed over: a read that fails otherwise raises."""
    import json  # as in send()

    where = _join(root, f"{who}/inbox")
    for entry in client.list_dir(where):
        try:
            fid = client.walk(f"{where}/{entry.name}")
        except ServerError:
            continue  # the walk found no such entry any more: acknowledged since the listing
        try:
            client.rpc(m.Topen(tag=0, fid=fid, mode=c.OREAD))
            data = b"".join(client.read_chunks(fid))
        finally:
            client.clunk(fid)
        yield json.loads(data)


def _tell(found, argv: list[str], everything: bool) -> None:
    """Run the command (or print a line) for one message to human, if it is one to tell."""
    if found["to"] != HUMAN or not (everything or found["type"] in TOLD_BY_DEFAULT):
        return
    sender, kind, subject = found["sender"], found["type"], found["subject"]
    if found["again"]:
        subject = f"still waiting: {subject}"
    if not argv:
        print(f"anvilfs: mail {found['id']} {kind} from {sender}: {subject}", file=sys.stderr, flush=True)
        return
    import subprocess  # noqa: PLC0415 - only `notify` runs commands: the other client commands need not load it

    try:
        subprocess.run([*argv, sender, kind, subject], check=False, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        print(f"anvilfs: notify: {argv[0]}: {exc}", file=sys.stderr, flush=True)


def inbox(client: Client, root: str, args) -> int:
    for message in inbox_messages(client, root, args.participant):
        print(f"{message['id']} {message['from']} {message['type']} {message['subject']}")
    return 0


def answer_plan(approvals: str, wanted: str, approved: bool, reason: str,
                as_session: bool = False) -> tuple[str, dict | str, str]:
    """How to answer WANTED (a waiting request's id, or its bead's), given the text of human/approvals:
    ("mail", the APPROVAL_RESPONSE human sends) when a request waits, else ("ctl", the line for
    beads/WANTED/ctl, the reason quoted as one word). `anvilfs approve|reject` and `anvilfs web` both
    answer this way; CommandError for an id that names no request or bead. The third value is the bead
    whose ctl takes a "ctl" answer. AS_SESSION (the writer is a session's agent, which the server lets
    write no mail but its own): a bead's request is answered on the bead's ctl, as that session."""
    if not ANSWERED.match(wanted):
        raise CommandError(not_an_id(wanted))
    for line in approvals.splitlines():
        request_id, sender, bead, _subject = (line.split(" ", 3) + [""])[:4]
        if wanted in (request_id, bead):
            if as_session and bead != "-":  # a session answers on the bead's ctl as itself, never as human
                return "ctl", ctl_line("approve") if approved else ctl_line("reject", reason), bead
            first = reason.strip().splitlines()[0] if reason.strip() else reason
            first = "".join(ch if ch.isprintable() else " " for ch in first)  # a subject is one plain line
            subject = "approved" if approved else f"rejected: {first}"  # the body has all of the reason
            return "mail", {"to": sender, "type": "APPROVAL_RESPONSE", "subject": subject[:200], "body": reason,
                            "re": request_id}, ""
    # a bead that waits for approval without a request in human/approvals (its convoy's coordinator was asked)
    return "ctl", ctl_line("approve") if approved else ctl_line("reject", reason), wanted


def not_an_id(wanted: str) -> str:
    """Why WANTED cannot be answered: it is no request's or bead's id (and would be walked as a path)."""
    return f"{wanted!r} is no request or bead id: give a waiting request's id (human/approvals) or its bead's"


def not_answerable(wanted: str, exc: ServerError) -> ServerError:
    return ServerError(f"{wanted} is neither a waiting request (human/approvals) nor a bead that can take it: {exc}")


def sent_id(answer: str) -> str:
    """The id a `mail` read-back answers, or ServerError with why the message was refused."""
    if answer.startswith("error: ") or not answer:
        raise ServerError(answer.removeprefix("error: ") or "the server answered nothing")
    return answer


def _answer(client: Client, root: str, wanted: str, approved: bool, reason: str) -> int:
    """As human, or run by a session's agent ($ANVILFS_SESSION: the server lets no session write human's mail)
    on the bead's ctl as itself; its answer closes human's request all the same."""
    approvals = client.read_file(_join(root, "human/approvals")).decode()
    kind, what, bead = answer_plan(approvals, wanted, approved, reason,
                                   as_session=bool(os.environ.get("ANVILFS_SESSION")))
    if kind == "mail":
        print(send(client, root, HUMAN, what))
        return 0
    try:
        client.write_file(_join(root, f"beads/{bead}/ctl"), what.encode())
    except ServerError as exc:
        raise not_answerable(wanted, exc) from None
    return 0


def approve(client: Client, root: str, args) -> int:
    return _answer(client, root, args.id, True, "approved")


def reject(client: Client, root: str, args) -> int:
    return _answer(client, root, args.id, False, " ".join(args.reason))


def mail(client: Client, root: str, args) -> int:
    sender = os.environ.get("ANVILFS_SESSION") or HUMAN
    body = sys.stdin.read()
    print(send(client, root, sender, {"to": args.to, "type": args.type, "subject": args.subject, "body": body}))
    return 0


COMMANDS = {"notify": notify, "inbox": inbox, "approve": approve, "reject": reject, "mail": mail}

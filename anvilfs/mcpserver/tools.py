"""The tools a session's agent gets, each a few reads and writes of tree files, as the session.

    ready         beads/ready.<role>                    claim       beads/ID/ctl claim
    my_work       my status, the beads I hold, inbox    bead        beads/ID/* (one bead's fields)
    result        beads/ID/result                       complete    beads/ID/ctl complete [result]
    fail          beads/ID/ctl fail REASON              new_bead    beads/ctl new ... (read-back: the id)
    add_to_convoy convoys/ID/ctl add_bead BEAD          send_mail   ME/mail (read-back: the id)
    inbox         ME/inbox/                             read_message ME/inbox/ID.json
    ack           rm ME/inbox/ID.json                   request_approval  ME/mail, an APPROVAL_REQUEST to human
    read, list    any file or directory (not the blocking ones)
  a conductor session also:
    prompt        SESSION/in                            new_session agent/ctl new (cwd inside mine)
    wait          SESSION/wait

Writes go only through these typed tools, each to the one file it names,
and the server checks each as it checks the same write from a shell: a
refusal is the file's own text. No tool writes another session's files
(but a conductor's `prompt`), human's mail, or agent/ctl (but a conductor's
`new_session`). Arguments are checked first (arguments.py: types, ids,
paths), so a model's mistake is answered with what to write instead.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass

from ..client import spent
from ..client.ctlwords import ctl_line
from .arguments import MAX_LINE, A, B, N, S, check_arguments, given_name, given_text, tree_path
from .tree import SessionTree, ToolError

__all__ = ["TOOLS", "Tool", "ToolError", "call", "offered"]

BLOCKING = frozenset({"events", "wait", "stream", "next"})  # files a read would hold: `wait` has its own tool
INBOX_SHOWN = 50  # messages listed by `inbox` (the count says how many there are)
# s: a `wait` ends by then (a CLI gives up on a tool call of its own accord: codex after 60 s by default)
WAIT_DEFAULT, WAIT_LONGEST = 50, 600
RESULT_LONGEST = 64 << 10  # characters of a tool's answer: a log of megabytes would flood the model's context


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    description: str
    params: dict[str, tuple[str, str]]  # name -> (type, description); "string", "array", "boolean" or "integer"
    required: tuple[str, ...]
    run: Callable[[SessionTree, dict], str]
    conductor: bool = False  # offered only to a session made with the `conductor` option
    own_connection: bool = False  # waits on a connection of its own: runs beside other calls, may be abandoned

    def schema(self) -> dict:
        """As small as says it all: the list goes into every request (Gemini CLI adds 260 bytes a tool of its own),
        so a parameter whose name says what it is has no description, and arguments the tool does not take are
        refused by check_arguments rather than by a schema's additionalProperties."""
        properties = {}
        for name, (kind, description) in self.params.items():
            properties[name] = {"type": kind} | ({"description": description} if description else {})
            if kind == "array":
                properties[name]["items"] = {"type": "string"}
        return {"type": "object", "properties": properties} | ({"required": list(self.required)} if self.required else {})


# ------------------------------------------------------------ beads

def _ready(tree: SessionTree, args: dict) -> str:
    role = given_name(args, "role", "role") if args.get("role") else tree.read(f"{tree.me}/role").strip()
    text = tree.read(f"beads/ready.{role}" if role else "beads/ready")
    if not text:
        return f"no bead is ready{' for role ' + role if role else ''} now (pending, with every dependency completed)"
    return "id status role assigned_to title\n" + text


def _claim(tree: SessionTree, args: dict) -> str:
    if args.get("bead"):
        bead = given_name(args, "bead", "bead")
        tree.ctl(f"beads/{bead}/ctl", "claim")
        return f"claimed {bead} for {tree.me}; `bead` shows what it asks, `complete` ends it"
    role = tree.read(f"{tree.me}/role").strip()
    refused = []
    for line in tree.read(f"beads/ready.{role}" if role else "beads/ready").splitlines():
        bead = line.split(" ", 1)[0]
        try:
            tree.ctl(f"beads/{bead}/ctl", "claim")
        except ToolError as exc:  # another session was quicker: try the next
            refused.append(f"{bead}: {exc}")
            continue
        return f"claimed {bead} for {tree.me}: {line.split(' ', 4)[-1]}"
    return ("nothing to claim: no bead is ready" + (f" for role {role}" if role else "")
            + ("".join(f"\n{why}" for why in refused)))


def _held(tree: SessionTree) -> list[list[str]]:
    rows = [line.split(" ", 4) for line in tree.read("beads/list").splitlines()]
    return [row for row in rows if len(row) == 5 and row[3] == tree.me and row[1] in ("in_progress", "pending_approval")]


def _field(tree: SessionTree, bead: str, name: str) -> str:
    try:
        return tree.read(f"beads/{bead}/{name}").strip()
    except ToolError:
        return ""  # a file this server does not have (branch, before worktrees)


BEAD_FIELDS = ("status", "title", "role", "assigned_to", "depends_on", "convoy", "branch", "description", "result",
               "context")


def _bead(tree: SessionTree, args: dict) -> str:
    bead = given_name(args, "bead", "bead")
    tree.read(f"beads/{bead}/status")  # a bead that does not exist: its refusal, said once
    lines = [f"id: {bead}"]
    for name in BEAD_FIELDS:
        value = _field(tree, bead, name)
        if value:
            lines.append(f"{name}:" + ("\n" + value if "\n" in value or name in ("description", "result", "context")
                                      else " " + value))
    return "\n".join(lines)


def _my_work(tree: SessionTree, args: dict) -> str:
    me = tree.me
    lines = [f"session {me}: {tree.read(f'{me}/status').splitlines()[0]}; role "
             f"{tree.read(f'{me}/role').strip() or '(none)'}; cwd {tree.read(f'{me}/cwd').strip()}"]
    lines.append(_spent(tree, me))
    held = _held(tree)
    lines.append(f"beads held: {len(held)}" + ("" if held else " (`ready` lists what you can claim)"))
    for bead, status, role, _, title in held:
        lines.append(f"- {bead} {status} ({role}): {title}")
        for name in ("branch", "convoy", "context"):
            value = _field(tree, bead, name)
            if value:
                lines.append(f"  {name}: " + value.replace("\n", "\n    "))
    waiting = [name for name, _ in tree.entries(f"{me}/inbox")]
    lines.append(f"inbox: {len(waiting)} message{'s' * (len(waiting) != 1)}"
                 + (" (`inbox` lists them)" if waiting else ""))
    return "\n".join(lines)


def _spent(tree: SessionTree, me: str) -> str:
    """What the session spent and may spend (its `usage`, docs/usage.md), on one line."""
    usage = dict(line.split(" ", 1) for line in tree.read(f"{me}/usage").splitlines() if " " in line)
    budgets = [f"${usage['budget_usd']}" if usage.get("budget_usd", "none") != "none" else "",
               f"{usage['token_budget']} tokens" if usage.get("token_budget", "none") != "none" else ""]
    budget = " and ".join(b for b in budgets if b) or "none"
    return (f"spent: {usage.get('turns', '0')} turns, {spent.tokens(usage)} tokens, cost_usd {usage.get('cost_usd', 'unknown')}"
            f"; budget: {budget}")


def _result(tree: SessionTree, args: dict) -> str:
    bead = given_name(args, "bead", "bead")
    tree.write(f"beads/{bead}/result", given_text(args, "text"))
    return f"{bead}'s result is written"


def _complete(tree: SessionTree, args: dict) -> str:
    bead = given_name(args, "bead", "bead")
    result = args.get("result", "")
    if result and len(ctl_line("complete", result).encode()) > MAX_LINE:
        tree.write(f"beads/{bead}/result", result)  # too long for the ctl line: the file holds it
        result = ""
    tree.ctl(f"beads/{bead}/ctl", "complete", *([result] if result else []))
    return f"{bead}: {_field(tree, bead, 'status') or 'completed'}"


def _fail(tree: SessionTree, args: dict) -> str:
    bead = given_name(args, "bead", "bead")
    tree.ctl(f"beads/{bead}/ctl", "fail", given_text(args, "reason"))
    return f"{bead}: failed"


NEW_BEAD_OPTIONS = ("requires_approval", "convoy", "owns")  # beads/ctl's `new` takes a word KEY=... as an option


def _new_bead(tree: SessionTree, args: dict) -> str:
    words = [given_text(args, "title"), given_text(args, "role"), given_text(args, "description")]
    for key, word in zip(("title", "role", "description"), words):
        if word.partition("=")[0] in NEW_BEAD_OPTIONS:
            raise ToolError(f"{key}: {word!r} would be read as the option {word.partition('=')[0]}=; reword it "
                            "(a word before the = will do)")
    words += [given_name({"dep": dep}, "dep", "bead") for dep in args.get("depends_on", [])]
    words += [f"owns={glob}" for glob in args.get("owns", [])]
    if args.get("requires_approval"):
        words.append("requires_approval=true")
    if args.get("convoy"):
        words.append("convoy=" + given_name(args, "convoy", "convoy"))
    size = len(ctl_line("new", *words).encode())
    if size > MAX_LINE:
        raise ToolError(f"new_bead: shorten the description ({len(words[2].encode())} bytes): title, role and "
                        f"description fit in {MAX_LINE} bytes in all, and they are {size}")
    bead = tree.ctl("beads/ctl", "new", *words, answer=True)
    return f"made bead {bead}"


def _add_to_convoy(tree: SessionTree, args: dict) -> str:
    convoy, bead = given_name(args, "convoy", "convoy"), given_name(args, "bead", "bead")
    tree.ctl(f"convoys/{convoy}/ctl", "add_bead", bead)
    return f"{bead} is in convoy {convoy}"


# ------------------------------------------------------------ mail

def _send(tree: SessionTree, message: dict) -> str:
    answer = tree.rdwr(f"{tree.me}/mail", json.dumps(message))
    if answer.startswith("error: ") or not answer:
        raise ToolError(answer.removeprefix("error: ") or "the server answered nothing to the message")
    return answer


def _send_mail(tree: SessionTree, args: dict) -> str:
    message = {key: args[key] for key in ("to", "type", "subject", "body", "re", "bead") if key in args}
    return f"sent {_send(tree, message)} to {args['to']}"


def _request_approval(tree: SessionTree, args: dict) -> str:
    # No "bead" field: an answer to a request that names a bead acts on the bead (approves its completion),
    # and a bead that requires approval asks for it itself at `complete`. This is a question of the bot's own.
    sent = _send(tree, {"to": "human", "type": "APPROVAL_REQUEST", "subject": args["subject"], "body": args["body"]})
    return (f"sent {sent} to human; end your turn: the APPROVAL_RESPONSE comes to your inbox "
            "(read_message, then ack)")


def _inbox(tree: SessionTree, args: dict) -> str:
    names = sorted(name for name, _ in tree.entries(f"{tree.me}/inbox") if name.endswith(".json"))
    if not names:
        return "your inbox is empty"
    lines = [f"{len(names)} message{'s' * (len(names) != 1)} (oldest first; read_message ID, then ack ID):"]
    for name in names[:INBOX_SHOWN]:
        try:
            message = json.loads(tree.read(f"{tree.me}/inbox/{name}"))
        except ToolError:
            continue  # acknowledged meanwhile
        lines.append(f"{message['id']} from {message['from']} {message['type']}: {message['subject']}")
    return "\n".join(lines)


def _read_message(tree: SessionTree, args: dict) -> str:
    return tree.read(f"{tree.me}/inbox/{given_name(args, 'id', 'message')}.json")


def _ack(tree: SessionTree, args: dict) -> str:
    message = given_name(args, "id", "message")
    tree.remove(f"{tree.me}/inbox/{message}.json")
    return f"{message} acknowledged"


# ------------------------------------------------------------ any file

def _read(tree: SessionTree, args: dict) -> str:
    path = tree_path(args["path"])
    if path.rsplit("/", 1)[-1] in BLOCKING:
        raise ToolError(f"{path} blocks until something happens; a tool does not wait on it"
                        + (" (a conductor's `wait` tool does)" if path.endswith("wait") else ""))
    return tree.read(path)


def _list(tree: SessionTree, args: dict) -> str:
    return "\n".join(name + "/" * is_dir for name, is_dir in tree.entries(tree_path(args.get("path", ""))))


# ------------------------------------------------------------ a conductor's

def _session(args: dict) -> str:
    return given_name(args, "session", "session")


def _prompt(tree: SessionTree, args: dict) -> str:
    session = _session(args)
    tree.write(f"{session}/in", given_text(args, "text"))
    return f"prompt queued for {session}; `wait` waits for its answer"


def _inside(path: str, directory: str) -> bool:
    path, directory = os.path.realpath(path), os.path.realpath(directory)
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def _new_session(tree: SessionTree, args: dict) -> str:
    mine = tree.read(f"{tree.me}/cwd").strip()
    cwd = os.path.join(mine, args.get("cwd", "."))
    if not _inside(cwd, mine):
        raise ToolError(f"cwd: {args.get('cwd')!r} is outside your own directory {mine}; give one inside it")
    # the path as checked, links resolved: a link swapped after the check cannot lead the session out
    words = [given_name(args, "backend", "backend"), os.path.realpath(cwd)]
    words += [f"{key}={given_name(args, key, kind)}" for key, kind in (("name", "session"), ("role", "role")) if args.get(key)]
    if args.get("model"):
        words.append(f"model={args['model']}")  # quoted whole; the server checks it
    name = tree.ctl("ctl", "new", *words, answer=True)
    return f"made session {name}"


def _wait(tree: SessionTree, args: dict) -> str:
    session = _session(args)
    timeout = args.get("timeout", WAIT_DEFAULT)
    if not 1 <= timeout <= WAIT_LONGEST:
        raise ToolError(f"timeout: give whole seconds from 1 to {WAIT_LONGEST} (default {WAIT_DEFAULT}); "
                        "call wait again to wait longer")
    state = tree.wait(f"{session}/wait", timeout)
    if state is None:
        return f"{session} is still busy after {timeout} s; call wait again to wait longer"
    return f"{session}: {state.strip()}; its answer is in {session}/out (read)"


BEAD = ("bead", (S, ""))
TOOLS: tuple[Tool, ...] = (
    Tool("ready", "Beads you can claim now (default: your role's)", {"role": (S, "")}, (), _ready),
    Tool("claim", "Claim a bead for yourself: the one named, else the first ready for your role", dict([BEAD]), (),
         _claim),
    Tool("my_work", "Your live state: status, the beads you hold (branch, convoy context), inbox count", {}, (),
         _my_work),
    Tool("bead", "One bead's fields", dict([BEAD]), ("bead",), _bead),
    Tool("result", "Write a bead's result", dict([BEAD, ("text", (S, ""))]), ("bead", "text"), _result),
    Tool("complete", "Complete a bead you hold", dict([BEAD, ("result", (S, "if not written"))]), ("bead",), _complete),
    Tool("fail", "Fail a bead you hold", dict([BEAD, ("reason", (S, ""))]), ("bead", "reason"), _fail),
    Tool("new_bead", "Make a bead; returns its id",
         {"title": (S, "one line"), "role": (S, "who should do it"), "description": (S, "what to do"),
          "depends_on": (A, "bead ids first"), "requires_approval": (B, ""), "owns": (A, "path globs it edits"),
          "convoy": (S, "")}, ("title", "role", "description"), _new_bead),
    Tool("add_to_convoy", "Add a bead to a convoy", {"convoy": (S, ""), **dict([BEAD])}, ("convoy", "bead"),
         _add_to_convoy),
    Tool("send_mail", "Send mail from you. type: PROMPT, QUERY, REVIEW or APPROVAL, + _REQUEST or _RESPONSE",
         {"to": (S, "session or human"), "type": (S, ""), "subject": (S, ""), "body": (S, ""), "re": (S, "id answered"),
          "bead": (S, "")}, ("to", "type", "subject", "body"), _send_mail),
    Tool("inbox", "Your unacknowledged messages", {}, (), _inbox),
    Tool("read_message", "One message of your inbox", {"id": (S, "")}, ("id",), _read_message),
    Tool("ack", "Acknowledge a message (it leaves your inbox)", {"id": (S, "")}, ("id",), _ack),
    Tool("request_approval", "Ask human to approve a step of yours; the answer comes as mail. (A bead that "
         "requires approval asks at complete.)", {"subject": (S, ""), "body": (S, "")}, ("subject", "body"),
         _request_approval),
    Tool("read", "Read a file of the tree, e.g. beads/list, convoys/ID/context", {"path": (S, "")}, ("path",), _read),
    Tool("list", "List a directory of the tree", {"path": (S, "default: the root")}, (), _list),
    Tool("prompt", "Queue a prompt for a session", {"session": (S, ""), "text": (S, "")}, ("session", "text"), _prompt,
         conductor=True),
    Tool("new_session", "Start a session working inside your directory; returns its name",
         {"backend": (S, "as `read backends`"), "cwd": (S, "relative to yours"), "name": (S, ""), "role": (S, ""),
          "model": (S, "")}, ("backend",), _new_session, conductor=True),
    Tool("wait", "Wait until a session is no longer busy; its state", {"session": (S, ""),
         "timeout": (N, f"seconds, at most {WAIT_LONGEST} (default {WAIT_DEFAULT})")}, ("session",), _wait,
         conductor=True, own_connection=True),
)
_BY_NAME = {tool.name: tool for tool in TOOLS}


def offered(conductor: bool) -> list[Tool]:
    return [tool for tool in TOOLS if conductor or not tool.conductor]


def call(tree: SessionTree, name: str, args: dict | None) -> str:
    """Run one tool as the tree's session: its text, or ToolError with the refusal the model is to see."""
    tool = _BY_NAME.get(name)
    if tool is None or (tool.conductor and not tree.identity.conductor):
        raise ToolError(f"no tool {name!r} here; the tools are {', '.join(t.name for t in offered(tree.identity.conductor))}")
    text = tool.run(tree, check_arguments(tool.name, tool.params, tool.required, args or {}))
    if len(text) > RESULT_LONGEST:
        cut = len(text) - RESULT_LONGEST
        text = text[:RESULT_LONGEST] + f"\n[... {cut} more characters not shown: the answer is cut at {RESULT_LONGEST}]"
    return text

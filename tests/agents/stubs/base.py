"""A local stand-in for the hosted model APIs the agent CLIs call (stdlib only).

    with StubModels() as stub:                    # 127.0.0.1, a free port, a thread
        env = {"ANTHROPIC_BASE_URL": stub.url}    # each CLI pointed at it
        ... run the CLI ...
        stub.requests("anthropic")                # every request, parsed and raw

One server speaks every dialect, told apart by path (a dialect module each:
anthropic.py, openai_chat.py, openai_responses.py, gemini.py). It is a mock
of a hosted LLM, the one thing that cannot run here; its text answers say
"[stub ...]" so that no test can take one for a real model's.

What it answers is a script: ``stub.script`` is a function from a
``Request`` (the conversation, parsed the same way for every dialect) to a
reply: ``Text``, ``ToolCall``, ``Failure`` (an HTTP error with the API's own
error body) or ``Hang`` (headers, then nothing until the client goes or the
stub stops). The default script, ``directives``, reads the last user text:

    stub:fail STATUS     Failure(STATUS)  (e.g. stub:fail 500, stub:fail 429)
    stub:hang            Hang()
    anything else        Text("[stub DIALECT] turn N: you said PROMPT"),
                         N the number of user texts in the request, so a
                         second turn that resumed its conversation says 2

and answers a request whose last message is a tool's result with
Text("[stub DIALECT] tool done: RESULT"). Every request is logged before it
is answered, and ``stub.wait_for`` waits (with a deadline) for one.
"""

from __future__ import annotations

import itertools
import json
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class ToolCall:
    name: str  # the tool's name as the CLI offered it
    arguments: dict
    text: str = ""  # said before the call


@dataclass(frozen=True)
class Failure:
    status: int
    message: str = ""

    def text(self) -> str:
        return self.message or f"stub model server: HTTP {self.status} as the script said"


@dataclass(frozen=True)
class Hang:
    pass


Reply = Text | ToolCall | Failure | Hang


@dataclass
class Request:
    """One request, parsed: the conversation as (role, text) pairs, roles "user", "assistant", "tool"."""

    dialect: str
    path: str
    body: dict
    headers: dict
    messages: list[tuple[str, str]] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)  # names of the tools offered
    model: str = ""
    stream: bool = False
    usage: dict = field(default_factory=dict)  # the usage the stub's answer reported, in the dialect's own keys

    @property
    def users(self) -> list[str]:
        return [text for role, text in self.messages if role == "user"]

    @property
    def prompt(self) -> str:
        """The last user text."""
        return self.users[-1] if self.users else ""

    @property
    def after_tool(self) -> bool:
        return bool(self.messages) and self.messages[-1][0] == "tool"

    def mentions(self, text: str) -> bool:
        """Whether any message of the conversation contains text."""
        return any(text in said for _, said in self.messages)


_spent = itertools.count(1)


def spent() -> int:
    """A number that differs for every answer (1, 2, ...): dialects derive the usage they report from it, so that
    a sum over a turn's requests tells which requests were counted. It starts at 1 with each StubModels (one per
    test), so what a test's requests cost does not depend on the tests that ran before it in the process (a
    budget test's two requests must cost what its figures say)."""
    return next(_spent)


def _count_afresh() -> None:
    global _spent
    _spent = itertools.count(1)


def directives(request: Request) -> Reply:
    """The default script (see the module's docstring)."""
    tag = f"[stub {request.dialect}]"
    if request.after_tool:
        return Text(f"{tag} tool done: {request.messages[-1][1][:200]}")
    words = request.prompt.split()
    if "stub:hang" in words:
        return Hang()
    for i, word in enumerate(words):
        if word == "stub:fail" and i + 1 < len(words) and words[i + 1].isdigit():
            return Failure(int(words[i + 1]))
    return Text(f"{tag} turn {len(request.users)}: you said {request.prompt.strip()}")


class Dialect:
    """One API: which paths are its own, how its requests read, how its replies are written."""

    name = ""

    def handles(self, method: str, path: str) -> bool:
        raise NotImplementedError

    def parse(self, path: str, body: dict, headers: dict) -> Request:
        raise NotImplementedError

    def answer(self, http: Handler, request: Request, reply: Reply) -> None:
        raise NotImplementedError

    def other(self, http: Handler, method: str, path: str) -> bool:
        """Answer a request that is not a model call (a model list, a token count); False if none."""
        return False


class StubModels:
    def __init__(self, script: Callable[[Request], Reply] = directives, dialects: list[Dialect] | None = None):
        _count_afresh()
        if dialects is None:
            from . import all_dialects
            dialects = all_dialects()
        self.script = script
        self.dialects = dialects
        self.log: list[Request] = []
        self.unknown: list[str] = []  # "METHOD PATH" of requests no dialect took
        self.changed = threading.Condition()
        self.stopping = threading.Event()
        self.server = _Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.stub = self
        self.thread = threading.Thread(target=self.server.serve_forever, name="stub-models", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> StubModels:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopping.set()  # lets hung replies go
        self.server.shutdown()
        self.server.server_close()

    def record(self, request: Request) -> None:
        with self.changed:
            self.log.append(request)
            self.changed.notify_all()

    def requests(self, dialect: str | None = None) -> list[Request]:
        with self.changed:
            return [r for r in self.log if dialect is None or r.dialect == dialect]

    def wait_for(self, predicate: Callable[[Request], bool], timeout: float = 60, what: str = "a request") -> Request:
        """The first logged request for which predicate holds, waiting up to timeout s for it."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                for request in self.log:
                    if predicate(request):
                        return request
                left = deadline - time.monotonic()
                if left <= 0:
                    seen = [f"{r.dialect} {r.path} prompt={r.prompt[:60]!r}" for r in self.log]
                    raise AssertionError(f"no {what} reached the stub in {timeout:g} s; it saw {seen}, "
                                         f"and unknown paths {self.unknown}")
                self.changed.wait(left)


class _Server(ThreadingHTTPServer):
    def handle_error(self, request, client_address) -> None:
        """A client that hung up (a CLI dropping a kept-alive connection after an error) is no error of the stub's."""
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ThreadingHTTPServer

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - BaseHTTPRequestHandler's name
        pass  # the log is StubModels.log

    @property
    def stub(self) -> StubModels:
        return self.server.stub  # type: ignore[attr-defined]

    def do_GET(self) -> None:
        self.route("GET", {})

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            return self.send_json(400, {"error": {"message": "stub: the body is not JSON"}})
        self.route("POST", body)

    def route(self, method: str, body: dict) -> None:
        path = self.path.split("?", 1)[0]
        for dialect in self.stub.dialects:
            if method == "POST" and dialect.handles(method, path):
                request = dialect.parse(self.path, body, dict(self.headers))
                self.stub.record(request)
                return dialect.answer(self, request, self.stub.script(request))
        for dialect in self.stub.dialects:
            if dialect.other(self, method, path):
                return
        with self.stub.changed:
            self.stub.unknown.append(f"{method} {self.path}")
        self.send_json(404, {"error": {"message": f"stub: no route {method} {self.path}", "type": "not_found"}})

    # ------------------------------------------------------------ writing

    def send_json(self, status: int, value: dict, headers: dict | None = None) -> None:
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, item in (headers or {}).items():
            self.send_header(key, item)
        self.end_headers()
        self.wfile.write(data)

    def start_events(self) -> None:
        """Begin a server-sent-events body (chunked, so the connection can be kept)."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def event(self, data: dict | str, name: str = "") -> None:
        text = data if isinstance(data, str) else json.dumps(data)
        self.chunk((f"event: {name}\n" if name else "") + f"data: {text}\n\n")

    def chunk(self, text: str) -> None:
        data = text.encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def end_events(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def hang(self) -> None:
        """Say nothing more until the client goes away or the stub stops."""
        self.close_connection = True
        while not self.stub.stopping.wait(0.2):  # each look at the client is bounded; the stop ends it at once
            try:
                if self.connection.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b"":
                    return  # the client closed its end
            except BlockingIOError:
                continue  # still there, saying nothing
            except OSError:
                return

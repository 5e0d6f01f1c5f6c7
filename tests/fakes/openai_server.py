"""A real OpenAI-compatible HTTP server for tests (stdlib only), run as a subprocess.

    python tests/fakes/openai_server.py --log requests.jsonl

It listens on 127.0.0.1 (a free port) and prints the port as the first line
of stdout. POST /v1/chat/completions answers "[fake openai] turn N: you said
PROMPT", where N is the number of user messages in the request (so a test can
see the conversation was kept), as server-sent events in the OpenAI chunk
format over chunked transfer encoding, then `data: [DONE]`. Asked for it
(stream_options.include_usage), a chunk with no choices before [DONE] has its
usage: different for each answer, cached tokens counted inside prompt_tokens,
as OpenAI's. Every request is appended to the --log file as one JSON line:
{"path", "authorization", "body", "usage"} (usage: what its answer reported, or null).

Directives in the last user message:
  fake:fail     HTTP 500 with an OpenAI-style JSON error body
  fake:drop     two chunks, then the connection is closed mid-body
  fake:nodone   two chunks, then the body ends properly but without [DONE]
  fake:hang     one chunk, then nothing until the client goes away
  fake:badjson  one chunk, then a data line that is not JSON, then [DONE]
  fake:errorevent  one chunk, then an error event (as vLLM and llama.cpp send), then [DONE]
"""

from __future__ import annotations

import argparse
import itertools
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FAIL_MESSAGE = "fake server error: the prompt said fake:fail"
_answers = itertools.count(1)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    log_path = ""
    log_lock = threading.Lock()

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        users = [m for m in body.get("messages", []) if m.get("role") == "user"]
        prompt = users[-1]["content"] if users else ""
        answered = self.path == "/v1/chat/completions" and "fake:fail" not in prompt
        usage = _usage() if answered and (body.get("stream_options") or {}).get("include_usage") else None
        self.record(body, usage)
        if self.path != "/v1/chat/completions":
            return self.send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
        if "fake:fail" in prompt:
            return self.send_json(500, {"error": {"message": FAIL_MESSAGE, "type": "server_error"}})
        self.stream(body.get("model", ""), len(users), prompt, usage)

    def record(self, body: dict, usage: dict | None) -> None:
        line = json.dumps({"path": self.path, "authorization": self.headers.get("Authorization"), "body": body,
                           "usage": usage})
        with self.log_lock, open(self.log_path, "a") as log:
            log.write(line + "\n")

    def send_json(self, status: int, value: dict) -> None:
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def stream(self, model: str, turn: int, prompt: str, usage: dict | None) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.event(chunk(model, {"role": "assistant", "content": ""}))
        pieces = [f"[fake openai] turn {turn}: ", "you said ", prompt]
        if "fake:drop" in prompt or "fake:nodone" in prompt:
            return self.cut_short(model, pieces[:2], properly="fake:nodone" in prompt)
        if "fake:hang" in prompt:
            self.event(chunk(model, {"content": pieces[0]}))
            return self.wait_for_client_to_leave()
        if "fake:badjson" in prompt:
            self.event(chunk(model, {"content": pieces[0]}))
            self.event('{"choices": [{"delta": {"content": "oops"')
        if "fake:errorevent" in prompt:
            self.event(chunk(model, {"content": pieces[0]}))
            self.event(json.dumps({"error": {"message": "fake error mid-stream", "type": "server_error"}}))
        for piece in pieces:
            self.event(chunk(model, {"content": piece}))
        self.event(chunk(model, {}, finish="stop"))
        if usage is not None:
            self.event(json.dumps({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": model,
                                   "choices": [], "usage": usage}))
        self.event("[DONE]")
        self.send_chunk(b"")

    def cut_short(self, model: str, pieces: list[str], properly: bool) -> None:
        for piece in pieces:
            self.event(chunk(model, {"content": piece}))
        if properly:
            self.send_chunk(b"")
        self.close_connection = True

    def wait_for_client_to_leave(self) -> None:
        self.close_connection = True
        while self.connection.recv(1024):
            pass

    def event(self, data: str) -> None:
        self.send_chunk(f"data: {data}\n\n".encode())

    def send_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()


def _usage() -> dict:
    n = next(_answers)
    cached = 10 * (n % 3)
    prompt, completion = 100 + 7 * n + cached, 20 + n
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached}}


def chunk(model: str, delta: dict, finish: str | None = None) -> str:
    return json.dumps({
        "id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    })


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", required=True, help="append each request as a JSON line here")
    args = parser.parse_args()
    Handler.log_path = args.log
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()

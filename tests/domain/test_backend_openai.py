"""OpenAIAgent driven directly under trio against a real HTTP server (tests/fakes/openai_server.py)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import tomlkit
import trio

from anvilfs.backends.openai import OpenAIBackend
from anvilfs.backends.openai_agent import OpenAIAgent, _report_usage
from anvilfs.config.model import OpenAIBackendConfig
from anvilfs.sessions.backend import AgentFailed, SessionInfo, TurnFailed
from anvilfs.usage import Usage
from harness.fakes import FakeOpenAI, fake_openai_server

GUARD = 20  # seconds: a broken agent fails the test instead of hanging it (not a timing assertion)
SYSTEM = "You are a test."


@dataclass
class Collected:
    """An Output that keeps the pieces and signals the first one."""

    pieces: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    first: trio.Event = field(default_factory=trio.Event)
    spent: list[Usage] = field(default_factory=list)  # each usage report

    def write(self, text: str) -> None:
        self.pieces.append(text)
        self.first.set()

    def note(self, text: str) -> None:
        self.notes.append(text)

    def usage(self, usage: Usage) -> None:
        self.spent.append(usage)

    @property
    def text(self) -> str:
        return "".join(self.pieces)


@pytest.fixture
def fake(tmp_path: Path) -> Iterator[FakeOpenAI]:
    with fake_openai_server(tmp_path) as server:
        yield server


def backend(url: str, **config) -> OpenAIBackend:
    config = {"kind": "openai", "url": url, "model": "fake-model", "system": SYSTEM} | config
    return OpenAIBackend("fakebot", OpenAIBackendConfig(**config))


def agent(url: str, *, session_model: str = "", saved: dict | None = None, **config) -> OpenAIAgent:
    session = SessionInfo(name="s1", cwd="/tmp", model=session_model)
    return backend(url, **config).agent(session, saved)


async def turn(a: OpenAIAgent, prompt: str) -> str:
    out = Collected()
    with trio.fail_after(GUARD):
        await a.turn(prompt, out)
    return out.text


async def failed_turn(a: OpenAIAgent, prompt: str) -> tuple[str, Collected]:
    out = Collected()
    with trio.fail_after(GUARD), pytest.raises(TurnFailed) as failure:
        await a.turn(prompt, out)
    return str(failure.value), out


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------ answers


async def test_answer_streams_in_pieces(fake):
    a = agent(fake.url)
    out = Collected()
    await a.start()
    with trio.fail_after(GUARD):
        await a.turn("hello", out)
    await a.kill()
    assert out.pieces == ["[fake openai] turn 1: ", "you said ", "hello"]
    [request] = fake.requests()
    assert request["path"] == "/v1/chat/completions"
    assert request["body"] == {
        "model": "fake-model", "stream": True, "stream_options": {"include_usage": True},
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "hello"}],
    }


async def test_two_turns_keep_the_conversation(fake):
    a = agent(fake.url)
    first = await turn(a, "one")
    second = await turn(a, "two")
    assert first == "[fake openai] turn 1: you said one"
    assert second == "[fake openai] turn 2: you said two"
    assert fake.messages() == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": first},
        {"role": "user", "content": "two"},
    ]


async def test_each_turn_reports_what_its_response_said_it_spent(fake):
    a = agent(fake.url)
    outputs = []
    for prompt in ("one", "two"):
        outputs.append(Collected())
        with trio.fail_after(GUARD):
            await a.turn(prompt, outputs[-1])
    for output, request in zip(outputs, fake.requests(), strict=True):
        usage = request["usage"]  # what the fake's answer reported, different for each
        cached = usage["prompt_tokens_details"]["cached_tokens"]
        assert output.spent == [Usage(input_tokens=usage["prompt_tokens"] - cached, cache_read_tokens=cached,
                                      output_tokens=usage["completion_tokens"])], (output.spent, usage)
    assert outputs[0].spent != outputs[1].spent


async def test_a_usage_that_cannot_be_read_is_noted_and_the_answer_kept():
    def spend(usage: object) -> tuple[list[Usage], list[str]]:
        output = Collected()
        _report_usage("http://x/v1/chat/completions", usage, output)
        return output.spent, output.notes

    assert spend({"prompt_tokens": 5, "completion_tokens": 2}) == ([Usage(input_tokens=5, output_tokens=2)], [])
    spent, notes = spend({"prompt_tokens": "many", "completion_tokens": 2})
    assert spent == [] and notes == ["http://x/v1/chat/completions sent a usage that cannot be read, not counted: "
                                     "prompt_tokens is 'many', not a count of tokens (in {'prompt_tokens': 'many', "
                                     "'completion_tokens': 2})"]


async def test_clear_forgets_all_but_the_system_message(fake):
    a = agent(fake.url)
    await turn(a, "one")
    a.clear()
    assert await turn(a, "again") == "[fake openai] turn 1: you said again"
    assert fake.messages() == [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "again"}]


async def test_saved_conversation_carries_on_in_a_new_agent(fake):
    a = agent(fake.url)
    first = await turn(a, "one")
    on_disk = tomlkit.loads(tomlkit.dumps(a.saved())).unwrap()  # saved() must be TOML-able
    b = agent(fake.url, saved=on_disk)
    assert await turn(b, "two") == "[fake openai] turn 2: you said two"
    assert fake.messages()[1:3] == [{"role": "user", "content": "one"}, {"role": "assistant", "content": first}]


async def test_session_model_overrides_the_backend_model(fake):
    await turn(agent(fake.url, session_model="session-model"), "hi")
    assert fake.requests()[0]["body"]["model"] == "session-model"


async def test_no_model_anywhere_fails_the_turn_without_a_request(fake):
    message, _ = await failed_turn(agent(fake.url, model=""), "hi")
    assert "model=" in message and "[backends.fakebot]" in message
    assert fake.requests() == []


# ------------------------------------------------------------ failures


async def test_http_error_quotes_the_server_message_and_keeps_nothing(fake):
    a = agent(fake.url)
    message, _ = await failed_turn(a, "fake:fail")
    assert "HTTP 500" in message and "fake server error: the prompt said fake:fail" in message
    assert a.saved() == {"messages": []}
    assert await turn(a, "after") == "[fake openai] turn 1: you said after"


@pytest.mark.parametrize("directive", ["fake:drop", "fake:nodone"])
async def test_stream_without_done_fails_and_keeps_nothing(fake, directive):
    a = agent(fake.url)
    message, out = await failed_turn(a, directive)
    assert out.text == "[fake openai] turn 1: you said "
    assert f"stream dropped after {len(out.text)} characters" in message
    assert a.saved() == {"messages": []}


async def test_malformed_event_fails_the_turn(fake):
    a = agent(fake.url)
    message, _ = await failed_turn(a, "fake:badjson")
    assert "not JSON" in message and '{"choices"' in message
    assert a.saved() == {"messages": []}


async def test_error_event_mid_stream_fails_the_turn_with_its_message(fake):
    a = agent(fake.url)
    message, _ = await failed_turn(a, "fake:errorevent")
    assert "error mid-answer: fake error mid-stream" in message
    assert a.saved() == {"messages": []}


async def test_connection_refused_names_the_url():
    url = f"http://127.0.0.1:{closed_port()}/v1"
    message, _ = await failed_turn(agent(url), "hi")
    assert f"cannot connect to {url}/chat/completions" in message


async def test_silence_past_the_timeout_fails_the_turn(fake):
    message, out = await failed_turn(agent(fake.url, timeout=0.3), "fake:hang")
    assert out.text == "[fake openai] turn 1: "
    assert f"stream dropped after {len(out.text)} characters" in message and "nothing came for 0.3s" in message


async def test_interrupting_a_hanging_turn_lets_cancellation_through(fake):
    a = agent(fake.url)
    await turn(a, "one")
    out = Collected()
    scope = trio.CancelScope()

    async def interrupt_after_first_piece():
        await out.first.wait()
        scope.cancel()

    with trio.fail_after(GUARD):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(interrupt_after_first_piece)
            with scope:
                await a.turn("fake:hang", out)
    assert scope.cancelled_caught
    assert out.text == "[fake openai] turn 2: "
    assert [m["content"] for m in a.saved()["messages"]] == ["one", "[fake openai] turn 1: you said one"]
    assert await turn(a, "after") == "[fake openai] turn 2: you said after"
    await a.kill()


# ------------------------------------------------------------ API key


async def test_api_key_is_sent_as_bearer_token(fake, monkeypatch):
    monkeypatch.setenv("ANVILFS_TEST_KEY", "sekrit")
    b = backend(fake.url, api_key_env="ANVILFS_TEST_KEY")
    assert b.availability() == "ready"
    a = b.agent(SessionInfo(name="s1", cwd="/tmp"))
    await a.start()
    await turn(a, "hi")
    await turn(agent(fake.url), "no key")
    assert [r["authorization"] for r in fake.requests()] == ["Bearer sekrit", None]


async def test_missing_api_key_is_reported_not_sent(fake, monkeypatch):
    monkeypatch.delenv("ANVILFS_TEST_KEY", raising=False)
    b = backend(fake.url, api_key_env="ANVILFS_TEST_KEY")
    assert b.availability() == "missing: set $ANVILFS_TEST_KEY"
    a = b.agent(SessionInfo(name="s1", cwd="/tmp"))
    with pytest.raises(AgentFailed, match=r"\$ANVILFS_TEST_KEY"):
        await a.start()
    message, _ = await failed_turn(a, "hi")
    assert "$ANVILFS_TEST_KEY" in message
    assert fake.requests() == []

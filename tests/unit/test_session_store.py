"""The session .toml's render: the [session] table is kept per Definition, and a new Definition shows at once."""

from __future__ import annotations

import dataclasses
import tomllib

from anvilfs.backends.sim import SimBackend
from anvilfs.sessions.backend import SessionInfo
from anvilfs.sessions.session import Definition, Prompt, Session, Turn
from anvilfs.sessions.store import SessionStore
from anvilfs.storage import PrivateDir


def _session(definition: Definition) -> Session:
    backend = SimBackend("sim")
    info = SessionInfo(name=definition.name, cwd=definition.cwd, role="", model="", conversation="", env={})
    agent = backend.agent(info)
    return Session(definition, backend, agent, on_change=lambda s: None, on_log=lambda s, t: None)


def _render(store: SessionStore, session: Session) -> dict:
    return tomllib.loads(store.state_file(session).data.decode())


def test_the_session_table_follows_a_new_definition(tmp_path):
    store = SessionStore(PrivateDir(tmp_path / "state"))
    session = _session(Definition(name="w1", backend="sim", cwd="/tmp", role="", conversation="c1", created="t0"))
    assert _render(store, session)["session"]["conversation"] == "c1"
    session.definition = dataclasses.replace(session.definition, conversation="c2", model='m "quoted"')
    got = _render(store, session)["session"]
    assert got == dataclasses.asdict(session.definition) and got["model"] == 'm "quoted"'


def test_a_removed_name_taken_again_renders_its_own_definition(tmp_path):
    store = SessionStore(PrivateDir(tmp_path / "state"))
    first = _session(Definition(name="w1", backend="sim", cwd="/tmp", conversation="old"))
    file = store.state_file(first)
    store.files.write_atomic(file.name, file.data)
    store.remove(first)
    again = _session(Definition(name="w1", backend="sim", cwd="/tmp", conversation="new", ephemeral=True))
    got = _render(store, again)["session"]
    assert got["conversation"] == "new" and got["ephemeral"] is True


def test_the_rest_of_the_file_changes_with_the_session(tmp_path):
    store = SessionStore(PrivateDir(tmp_path / "state"))
    session = _session(Definition(name="w1", backend="sim", cwd="/tmp"))
    assert _render(store, session)["queue"] == []
    session.turn_count, session.turn = 1, Turn(1, prompt=Prompt("hi\n", "glenda", "t1"), started="t1")
    session.queue.append(Prompt("next", "glenda", "t2"))
    got = _render(store, session)
    assert got["status"]["turns"] == 1 and got["turn"]["text"] == "hi\n"
    assert got["queue"] == [{"sender": "glenda", "at": "t2", "text": "next"}]

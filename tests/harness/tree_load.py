"""A mixed load through a real server's tree (prompts, bead changes, mail sent and acknowledged), and its checks.

    load = Load(srv, sessions=["s0", "s1"], tag="r1")   # writers in threads, one client each
    load.start(); load.wait_for(50); load.stop()          # every change noted once its write was answered
    lost = load.answered.missing(srv, state)              # after a restart: what an answer promised and is gone

Each writer notes a change only once the server answered it (a prompt's
Tclunk, a bead command's Twrite, a message's read-back id, an
acknowledgement's Tremove), and ends quietly when the server dies under it.
`missing` reads everything back through the tree (and `git log` for the
beads' history, SPEC section 6), so it holds whatever the server stores
them in.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from anvilfs.client import ServerError
from anvilfs.ninep import consts as c

from .server import AnvilServer

GONE = (OSError, ServerError, ConnectionError)  # the server died (or was killed) under a writer
STATUS_ORDER = ["pending", "in_progress", "completed"]


@dataclass
class Answered:
    prompts: list[tuple[str, str]] = field(default_factory=list)  # (session, text)
    beads: list[tuple[str, str, str]] = field(default_factory=list)  # (bead, status, its history message)
    mail: list[tuple[str, str, str]] = field(default_factory=list)  # (recipient, subject, id)
    acked: list[tuple[str, str]] = field(default_factory=list)  # (recipient, id) removed from its inbox

    def count(self) -> int:
        return len(self.prompts) + len(self.beads) + len(self.mail) + len(self.acked)

    def missing(self, srv: AnvilServer, state: Path) -> list[str]:
        """What was answered and is not there (or acknowledged and back), read through the tree and git."""
        return _lost_prompts(srv, self.prompts) + _lost_beads(srv, state, self.beads) + _lost_mail(srv, self)


def new_sessions(srv: AnvilServer, names: list[str]) -> None:
    with srv.connect("load", timeout=20) as client:
        for name in names:
            client.write_file("ctl", f"new sim /tmp name={name}\n".encode())


def restart_sessions(srv: AnvilServer, names: list[str]) -> None:
    """The sessions a killed server left exited, running again (and through their old queues)."""
    with srv.connect("load", timeout=20) as client:
        for name in names:
            client.write_file(f"{name}/ctl", b"restart\n")
        for name in names:
            client.read_file(f"{name}/wait")  # blocks while busy; the socket's timeout bounds it


class Load:
    """Writers of prompts (to `sessions`), bead changes and mail (among `sessions` and human), in threads.

    `limit`: how many changes each writer makes (a bead's is three: made, claimed, completed); `kinds`: which
    writers run, of "prompts", "beads", "mail" and "acks" (those remove the `acknowledge` messages).
    """

    KINDS = ("prompts", "beads", "mail", "acks")

    def __init__(self, srv: AnvilServer, sessions: list[str], tag: str, *, limit: int = 10**9,
                 acknowledge: list[tuple[str, str]] = (), kinds: tuple[str, ...] = KINDS):
        self.srv, self.sessions, self.tag, self.limit = srv, sessions, tag, limit
        self.acknowledge = list(acknowledge)  # (recipient, id) of mail to remove from inboxes
        self.answered = Answered()
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._guarded, args=(getattr(self, f"_{kind}"),), daemon=True)
                         for kind in kinds]

    def start(self) -> Load:
        for t in self._threads:
            t.start()
        return self

    def wait_for(self, count: int, timeout: float = 60) -> None:
        """Until `count` changes were answered in all (polling the writers' progress, with a deadline)."""
        deadline = time.monotonic() + timeout
        while self.answered.count() < count and any(t.is_alive() for t in self._threads):
            assert time.monotonic() < deadline, f"only {self.answered.count()} of {count} changes answered in {timeout} s"
            time.sleep(0.001)

    def stop(self, timeout: float = 30) -> None:
        """The writers end (at once if the server is dead; else after the change each has in flight)."""
        self._stop.set()
        for t in self._threads:
            t.join(timeout)
            assert not t.is_alive(), f"a writer did not end in {timeout} s"

    def join(self, timeout: float = 120) -> None:
        """Until every writer wrote its `limit` changes."""
        for t in self._threads:
            t.join(timeout)
            assert not t.is_alive(), f"a writer did not finish in {timeout} s"
        assert not self.failures, self.failures

    def _guarded(self, fn) -> None:
        try:
            with self.srv.connect("load", timeout=20) as client:
                fn(client)
        except GONE as exc:
            if self.srv.proc.poll() is None:  # the server still lives: a real failure
                self.failures.append(f"{fn.__name__}: {exc!r}")
        except Exception as exc:  # a wrong answer: seen by join(), not lost in a thread's traceback
            self.failures.append(f"{fn.__name__}: {exc!r}")

    def _more(self, i: int) -> bool:
        return i < self.limit and not self._stop.is_set()

    def _prompts(self, client) -> None:
        i = 0
        while self._more(i):
            name = self.sessions[i % len(self.sessions)]
            text = f"{self.tag}-{name}-{i} please"
            client.write_file(f"{name}/in", f"{text}\n".encode())
            self.answered.prompts.append((name, text))  # list.append is atomic across threads
            i += 1

    def _beads(self, client) -> None:
        ctl, i = client.open("beads/ctl", c.ORDWR), 0
        while self._more(i):
            title = f"{self.tag} task {i}"
            client.write_chunk(ctl, 0, f'new "{title}" worker "d"\n'.encode())
            bead = client.read_chunk(ctl, 0).decode().strip()
            self.answered.beads.append((bead, "pending", f"Created: {title} ({bead}"))
            fid = client.open(f"beads/{bead}/ctl", c.OWRITE)
            client.write_chunk(fid, 0, b"claim w lease=3600\n")
            self.answered.beads.append((bead, "in_progress", f"Claimed: {bead} by w"))
            client.write_chunk(fid, 0, b"complete\n")
            self.answered.beads.append((bead, "completed", f"Completed: {title} ({bead})"))
            client.clunk(fid)
            i += 1

    def _mail(self, client) -> None:
        people, i = ["human", *self.sessions], 0
        while self._more(i):
            sender, to, subject = people[i % len(people)], people[(i // 2) % len(people)], f"{self.tag}-mail-{i}"
            fid = client.open(f"{sender}/mail", c.ORDWR)
            client.write_all(fid, json.dumps({"to": to, "type": "QUERY_REQUEST", "subject": subject,
                                              "body": ""}).encode())
            answer = client.read_chunk(fid, 0).decode().strip()
            client.clunk(fid)
            if not answer.isdigit():
                raise AssertionError(f"{subject}: {answer}")
            self.answered.mail.append((to, subject, answer))
            i += 1

    def _acks(self, client) -> None:
        for n, (who, msg_id) in enumerate(self.acknowledge):
            if not self._more(n):
                return
            client.remove(f"{who}/inbox/{msg_id}.json")
            self.answered.acked.append((who, msg_id))


def inboxes(srv: AnvilServer, people: list[str]) -> dict[str, list[dict]]:
    with srv.connect("load", timeout=20) as client:
        return {who: [json.loads(client.read_file(f"{who}/inbox/{s.name}")) for s in client.list_dir(f"{who}/inbox")]
                for who in people}


def _lost_prompts(srv: AnvilServer, prompts: list[tuple[str, str]]) -> list[str]:
    with srv.connect("load", timeout=20) as client:
        seen = {name: queue_then_log(client, name) for name in {name for name, _ in prompts}}
    return [f"prompt {text!r} (to {name})" for name, text in prompts if text not in seen[name]]


def queue_then_log(client, name: str) -> str:
    """A session's queued prompts, then its transcript. In this order: the server just started runs the
    queued prompts, and a prompt leaves the queue as its turn's header enters the log, which only grows.
    Read the other way round, a prompt that moved between the two reads was in neither (a CI run of
    test_power_cuts: "prompt 'r0-s2-29 please' (to s2)" lost, while the server had it)."""
    return client.read_file(f"{name}/queue").decode() + client.read_file(f"{name}/log").decode()


def _lost_beads(srv: AnvilServer, state: Path, beads: list[tuple[str, str, str]]) -> list[str]:
    last: dict[str, str] = {}
    for bead, status, _ in beads:
        last[bead] = status
    lost = []
    with srv.connect("load", timeout=20) as client:
        for bead, status in last.items():
            try:
                got = client.read_file(f"beads/{bead}/status").decode().strip()
            except ServerError as exc:
                got = f"gone ({exc})"
            if got not in STATUS_ORDER or STATUS_ORDER.index(got) < STATUS_ORDER.index(status):
                lost.append(f"bead {bead} is {got}, answered {status}")
    history = git(state, "log", "--format=%B").stdout
    lost += [f"history message {message!r}" for _, _, message in beads if message not in history]
    return lost


def _lost_mail(srv: AnvilServer, answered: Answered) -> list[str]:
    people = sorted({who for who, _, _ in answered.mail} | {who for who, _ in answered.acked})
    found = inboxes(srv, people)
    held = [(who, msg["id"]) for who, msgs in found.items() for msg in msgs]
    acked = set(answered.acked)
    lost = [f"message {subject} (id {msg_id}, to {who})" for who, subject, msg_id in answered.mail
            if (who, msg_id) not in held and (who, msg_id) not in acked]
    lost += [f"message {msg_id} to {who} held {held.count((who, msg_id))} times" for who, msg_id in set(held)
             if held.count((who, msg_id)) > 1]
    return lost + [f"acknowledged message {msg_id} (to {who}) is back" for who, msg_id in acked & set(held)]


def git(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """git on the state directory's history, with nothing of the caller's configuration."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | {
        "GIT_DIR": str(state / ".git"), "GIT_WORK_TREE": str(state), "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null"}
    return subprocess.run(["git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", *args],
                          capture_output=True, text=True, env=env, timeout=60)

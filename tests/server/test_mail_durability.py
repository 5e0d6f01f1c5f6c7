"""No answered message lost or delivered twice: SIGKILL a real server after a burst of 1,000, twenty times.

Each round starts `anvilfs serve` on the same --state, and several clients
send 1,000 messages between the participants (sessions and human), each
counted once its read-back answered an id. The server gets SIGKILL 0-15 ms
after the last answer. The next server must show every answered message in
its recipient's inbox, exactly once; then they are acknowledged (rm), and
no acknowledged message may ever come back.
"""

from __future__ import annotations

import json
import random
import shutil
import signal
import tempfile
import threading
import time
from pathlib import Path

import pytest

from anvilfs.client import ServerError
from anvilfs.ninep import consts as c
from anvilfs.ninep import messages as m
from harness.server import AnvilServer, start_server

ROUNDS = 20
BURST = 1000
CLIENTS = 4
PARTICIPANTS = ["human"] + [f"p{i}" for i in range(5)]


def send_burst(srv: AnvilServer, plan: list[tuple[str, str, str]], answered: list, failures: list) -> None:
    try:
        with srv.connect("durability", timeout=20) as client:
            for sender, to, subject in plan:
                fid = client.open(f"{sender}/mail", c.ORDWR)
                client.write_all(fid, json.dumps({"to": to, "type": "QUERY_REQUEST", "subject": subject, "body": ""}).encode())
                answer = client.read_chunk(fid, 0).decode().strip()
                client.clunk(fid)
                if not answer.isdigit():
                    failures.append(f"{subject}: {answer}")
                    return
                answered.append((to, subject, answer))  # list.append is atomic across threads
    except (OSError, ServerError, ConnectionError) as exc:
        failures.append(repr(exc))


def inboxes(srv: AnvilServer) -> dict[str, list[dict]]:
    with srv.connect("durability", timeout=20) as client:
        found = {}
        for who in PARTICIPANTS:
            found[who] = [json.loads(client.read_file(f"{who}/inbox/{s.name}")) for s in client.list_dir(f"{who}/inbox")]
    return found


def ack_all(srv: AnvilServer, found: dict[str, list[dict]]) -> None:
    with srv.connect("durability", timeout=20) as client:
        for who, messages in found.items():
            for msg in messages:
                client.rpc(m.Tremove(tag=0, fid=client.walk(f"{who}/inbox/{msg['id']}.json")))


@pytest.mark.timeout(900)  # 20 server starts and 20,000 messages; under load more than the default backstop
def test_no_answered_message_is_lost_or_doubled_over_twenty_sigkills():
    base = Path(tempfile.mkdtemp(prefix="anvm.", dir="/tmp"))
    rng = random.Random(4321)
    acked_ids: set[str] = set()
    srv = None
    try:
        srv = start_server(base, trace=False)
        with srv.connect("durability", timeout=20) as client:
            for name in PARTICIPANTS[1:]:
                client.write_file("ctl", f"new sim /tmp name={name}\n".encode())
        for round_no in range(ROUNDS):
            plan = [(rng.choice(PARTICIPANTS), rng.choice(PARTICIPANTS), f"r{round_no}-{i}") for i in range(BURST)]
            answered: list = []
            failures: list = []
            senders = [threading.Thread(target=send_burst, args=(srv, plan[k::CLIENTS], answered, failures))
                       for k in range(CLIENTS)]
            for t in senders:
                t.start()
            for t in senders:
                t.join(timeout=120)
                assert not t.is_alive(), f"round {round_no}: a sender did not finish in 120 s"
            assert not failures and len(answered) == BURST, f"round {round_no}: {len(answered)} answered; {failures[:3]}"
            time.sleep(rng.uniform(0, 0.015))
            srv.stop(sig=signal.SIGKILL)
            srv = start_server(base, trace=False, log_name=f"server{round_no}.trace")
            found = inboxes(srv)
            seen = [(who, msg["subject"], msg["id"]) for who, msgs in found.items() for msg in msgs]
            assert sorted(seen) == sorted(answered), (
                f"round {round_no}: missing {sorted(set(answered) - set(seen))[:5]}, "
                f"unexpected {sorted(set(seen) - set(answered))[:5]}")
            assert not acked_ids & {i for _, _, i in seen}, f"round {round_no}: acknowledged mail came back"
            ack_all(srv, found)
            acked_ids |= {i for _, _, i in seen}
        srv.stop()
        print(f"{ROUNDS * BURST} answered messages over {ROUNDS} SIGKILLs: none lost, none twice")
    finally:
        if srv is not None and srv.proc.poll() is None:  # a failed round must not leave its server running
            srv.stop(sig=signal.SIGKILL)
        shutil.rmtree(base, ignore_errors=True)

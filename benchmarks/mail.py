"""Benchmark: mail sent and acknowledged through 9P, durability on (run by hand; prints numbers).

    .venv/bin/python benchmarks/mail.py [--messages 2000] [--clients 4]

Starts a real `anvilfs serve` on a fresh state directory (every message a
row of STATE/anvilfs.db, committed before its read-back is answered; every
ack an UPDATE of its row, committed before the Tremove is answered) and,
over the project's blocking client:

- sends N messages from one session to another (walk, open, write,
  read-back, clunk each): messages per second;
- acknowledges all N (Tremove of each inbox file): acks per second;
- the same from K connections at once (--clients, default 4), each its
  share: sends and acks per second when commits can be grouped;
- delivery latency: a second connection holds a blocked read on `events`;
  the time from the send's answer to that read being woken, median and p99
  (the read is the recipient's way to learn of mail without polling).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from anvilfs.client import Client
from anvilfs.ninep import consts as c
from anvilfs.ninep import messages as m


def start(base: Path) -> subprocess.Popen:
    env = os.environ | {"XDG_CONFIG_HOME": str(base / "xdg")}
    (base / "xdg" / "anvilfs").mkdir(parents=True)
    (base / "xdg" / "anvilfs" / "config.toml").write_text("[limits]\nmax_inbox = 1000000\n")
    proc = subprocess.Popen([sys.executable, "-m", "anvilfs", "serve", "--namespace", str(base / "ns"),
                             "--state", str(base / "state")], env=env, stderr=open(base / "server.log", "a"))
    deadline = time.monotonic() + 20
    while not (base / "ns" / "agent").exists():
        if time.monotonic() > deadline or proc.poll() is not None:
            raise SystemExit(f"server did not start: {(base / 'server.log').read_text()}")
        time.sleep(0.02)
    return proc


def connect(base: Path) -> Client:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(30)
    sock.connect(str(base / "ns" / "agent"))
    return Client(sock, uname="bench")


def send(client: Client, n: int) -> str:
    fid = client.open("a/mail", c.ORDWR)
    client.write_all(fid, json.dumps({"to": "b", "type": "QUERY_REQUEST", "subject": f"m{n}", "body": "x" * 200}).encode())
    answer = client.read_chunk(fid, 0).decode().strip()
    client.clunk(fid)
    assert answer.isdigit(), answer
    return answer


def latencies(base: Path, count: int) -> list[float]:
    """Send one message at a time; how long after its answer the blocked `events` read wakes."""
    watcher, sender = connect(base), connect(base)
    events = watcher.open("events", c.OREAD)
    offset, woke, out = 0, threading.Event(), []

    def watch() -> None:
        nonlocal offset
        for _ in range(count):
            data = watcher.read_chunk(events, offset)
            offset += len(data)
            out.append(time.perf_counter())
            woke.set()

    thread = threading.Thread(target=watch)
    thread.start()
    result = []
    for n in range(count):
        woke.clear()
        send(sender, n)
        answered = time.perf_counter()
        assert woke.wait(10), "events read not woken in 10 s"
        result.append(max(out[-1] - answered, 0.0))  # woken before our own answer was read: 0
    thread.join(10)
    return result


def at_once(base: Path, count: int, clients: int) -> tuple[float, float]:
    """`count` messages sent by `clients` connections in parallel, then acknowledged so: seconds for each."""
    conns = [connect(base) for _ in range(clients)]
    ids: list[list[str]] = [[] for _ in conns]

    def in_parallel(work) -> float:
        threads = [threading.Thread(target=work, args=(k,)) for k in range(clients)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        return time.perf_counter() - t0

    sent = in_parallel(lambda k: ids[k].extend(send(conns[k], n) for n in range(count // clients)))
    acked = in_parallel(lambda k: [conns[k].rpc(m.Tremove(tag=0, fid=conns[k].walk(f"b/inbox/{i}.json")))
                                   for i in ids[k]])
    return sent, acked


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=4)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="anvil-mail-bench."))
    proc = start(base)
    try:
        client = connect(base)
        for name in ("a", "b"):
            client.write_file("ctl", f"new sim /tmp name={name}\n".encode())
        t0 = time.perf_counter()
        ids = [send(client, n) for n in range(args.messages)]
        sent = time.perf_counter() - t0
        t0 = time.perf_counter()
        for ident in ids:
            client.rpc(m.Tremove(tag=0, fid=client.walk(f"b/inbox/{ident}.json")))
        acked = time.perf_counter() - t0
        many_sent, many_acked = at_once(base, args.messages, args.clients)
        lat = sorted(latencies(base, 500))
        print(f"sent    {args.messages} messages in {sent:.2f}s: {args.messages / sent:.0f}/s (target >= 500/s)")
        print(f"acked   {args.messages} messages in {acked:.2f}s: {args.messages / acked:.0f}/s")
        print(f"{args.clients} clients at once: sent {args.messages / many_sent:.0f}/s, acked {args.messages / many_acked:.0f}/s")
        print(f"latency send answered -> blocked events read woken: median {statistics.median(lat) * 1e3:.2f} ms, "
              f"p99 {lat[int(len(lat) * 0.99) - 1] * 1e3:.2f} ms")
        print(f"state directory on {subprocess.run(['df', '--output=fstype', str(base)], capture_output=True, text=True).stdout.split()[-1]}")
    finally:
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()

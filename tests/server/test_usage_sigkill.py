"""SIGKILL of a real `anvilfs serve` at twelve random moments while sim sessions run turns that report usage
(issue 34): after each restart every ended turn is counted exactly once, with what it reported or nothing.

Three sim sessions (they say so) each get prompts asking for `sim:usage=1,2,0.5`. The main thread kills the
server after a random delay (the stimulus, not a synchronisation: the seed is in every failure's message),
starts it again on the same state directory and waits, with a deadline, for every session to have run its
queue. Then, for each session, from its transcript (`log`) and its `usage`:

    usage's turns == the number of distinct turns that have an end in the log (answer, failed, interrupted,
                     ended): none lost, none counted twice (a turn the kill cut short ends `lost` and counts
                     with nothing reported)
    input_tokens   <= the turns answered, output == 2 x input, cost == input / 2: a turn counts all it
                     reported or nothing
    the tokens counted never go down from one restart to the next: what was on disk stays

and agent/usage's (total) line is the sum of the sessions' lines.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from harness.server import start_server

pytestmark = pytest.mark.timeout(600)

KILLS = 12
SESSIONS = ("a", "b", "c")
PROMPT = "work sim:usage=1,2,0.5"
SETTLE = 60.0
_END = re.compile(r"^--- (answer|failed|interrupted|ended) (\d+) at ", re.M)


def _figures(text: str) -> dict[str, str]:
    return dict(line.split(" ", 1) for line in text.splitlines())


def _settled(client, name: str) -> None:
    deadline = time.monotonic() + SETTLE
    while client.read_file(f"{name}/wait").decode().strip() not in ("await", "idle", "error"):
        assert time.monotonic() < deadline, f"{name} did not settle within {SETTLE} s"


def _check(client, seed: int, kills: int) -> int:
    answered_all = 0
    totals = {}
    for name in SESSIONS:
        _settled(client, name)
        log = client.read_file(f"{name}/log").decode()
        ended = {int(n) for _, n in _END.findall(log)}
        answered = {int(n) for kind, n in _END.findall(log) if kind == "answer"}
        usage = _figures(client.read_file(f"{name}/usage").decode())
        where = f"seed {seed}, after kill {kills}, session {name}: {usage}"
        assert int(usage["turns"]) == len(ended), where
        tokens_in = int(usage["input_tokens"])
        assert tokens_in <= len(answered), where
        assert int(usage["output_tokens"]) == 2 * tokens_in, where
        # no tokens yet: "unknown" (no turn priced) or zero; else the price, checked as a number
        assert (tokens_in == 0 and usage["cost_usd"] in ("unknown", "0.000000")) or (
            usage["cost_usd"] != "unknown" and abs(float(usage["cost_usd"]) - tokens_in / 2) < 1e-6), where
        totals[name] = usage
        answered_all += tokens_in
    total = dict(w.split("=") for w in next(line for line in client.read_file("usage").decode().splitlines()
                                            if line.startswith("(total)")).split()[1:])
    assert int(total["input_tokens"]) == sum(int(u["input_tokens"]) for u in totals.values()), (seed, total)
    assert int(total["turns"]) == sum(int(u["turns"]) for u in totals.values()), (seed, total)
    return answered_all


def test_every_ended_turn_is_counted_once_across_sigkills():
    seed = int(os.environ.get("ANVILFS_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    base = Path(tempfile.mkdtemp(prefix="anvil-usage-kill."))
    srv = start_server(base, trace=False, log_name="server0.log")
    try:
        with srv.connect("tester") as client:
            for name in SESSIONS:
                client.write_file("ctl", f"new sim {base} name={name}".encode())
        counted = 0
        for kill in range(1, KILLS + 1):
            with srv.connect("tester") as client:
                for name in SESSIONS:
                    for _ in range(rng.randrange(1, 4)):
                        client.write_file(f"{name}/in", PROMPT.encode())
                time.sleep(rng.uniform(0, 0.4))  # the moment of the kill: a stimulus, its seed in the messages
            srv.stop(sig=9)
            srv = start_server(base, trace=False, log_name=f"server{kill}.log", timeout=60)
            with srv.connect("tester") as client:
                now = _check(client, seed, kill)
                # what a restart found on disk it keeps: the counted tokens never go down
                assert now >= counted, f"seed {seed}, after kill {kill}: {now} tokens counted, {counted} before"
                counted = now
        assert counted > 0, f"seed {seed}: no turn was ever counted"
    finally:
        srv.stop(sig=9)
        shutil.rmtree(base, ignore_errors=True)

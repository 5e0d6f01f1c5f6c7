"""Benchmark: `anvilfs web`'s parse of the tree's files into its view, per refresh (issue 32, item 6; by hand).

    .venv/bin/python benchmarks/web_view.py [--beads 10000] [--convoys 1000] [--sessions 1000] [--refreshes 40]

No server: the files' texts are made here, in their formats (beads/graph as anvilfs/beads/graph.py
renders it, beads/list as beads/view.py's bead_line, `list`, convoys/list, the usage files), for a
tree like benchmarks/reads.py's: B beads in 10 chains (each bead depends on the one before it, so
beads/graph has B/10 waves), the first tenth of each chain completed, bead i in convoy i mod C, a
usage line for every session, convoy and bead begun. Between two refreshes one bead is claimed (its
`beads/list` and `beads/graph` lines change) and one session counts a turn (its `list` and
`agent/usage` lines and the usage total change), as in reads.py's load.

It prints the CPU time (time.process_time, the collector's included) of view.shown, the part of a
refresh after the reads, per refresh, both ways in turn: with a fresh view.Reading each time (nothing
kept from the refresh before) and with one Reading kept from refresh to refresh (as `anvilfs web`
does); and how many refreshes gave different views both ways (0 expected). It asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import time

from anvilfs.web import view

CHAINS = 10


class Tree:
    """The texts of the files the web reads, with one bead and one session changed at each step()."""

    def __init__(self, beads: int, convoys: int, sessions: int):
        self.length = beads // CHAINS
        self.status = {self.bead(c, j): "completed" if j < self.length // 10 else "pending"
                       for c in range(CHAINS) for j in range(self.length)}
        self.claimed: dict[str, str] = {bead: "-" for bead in self.status}
        self.sessions = [f"sim-{i:04d}" for i in range(sessions)]
        self.turns = dict.fromkeys(self.sessions, 1)
        self.busy = dict.fromkeys(self.sessions, "idle")
        self.convoys = convoys
        self.steps = 0

    def bead(self, chain: int, j: int) -> str:
        return f"task-{chain}-{j:04d}"

    def step(self) -> None:
        """A bead claimed (the first pending one of a chain, in turn) and a session's turn counted."""
        chain = self.steps % CHAINS
        bead = next(self.bead(chain, j) for j in range(self.length) if self.status[self.bead(chain, j)] == "pending")
        session = self.sessions[self.steps % len(self.sessions)]
        self.status[bead], self.claimed[bead] = "in_progress", session
        self.turns[session] += 1
        self.busy[session] = "busy" if self.busy[session] == "idle" else "idle"
        self.steps += 1

    def texts(self) -> dict[str, str]:
        return {"list": self.listing(), "beads/graph": self.graph(), "beads/list": self.bead_list(),
                "convoys/list": self.convoy_list(), "human/approvals": "", "usage": self.usage(),
                "beads/usage": self.bead_usage(), "convoys/usage": self.convoy_usage(), "inbox": {}}

    def title(self, bead: str) -> str:
        return f"Do part {bead.rpartition('-')[2]} of chain {bead.split('-')[1]} well"

    def graph(self) -> str:
        """Wave n: the n-th open bead of each chain (its dependency open too, past the first); then done."""
        lines = []
        open_beads = [[self.bead(c, j) for j in range(self.length) if self.status[self.bead(c, j)] != "completed"]
                      for c in range(CHAINS)]
        for n in range(max(len(chain) for chain in open_beads)):
            lines.append(f"wave {n + 1}\n")
            for chain in open_beads:
                if n < len(chain):
                    arrow = f"  <- {chain[n - 1]}" if n else ""
                    lines.append(f"  {chain[n]} {self.status[chain[n]]}  {self.title(chain[n])}{arrow}\n")
        lines.append("done\n")
        lines += [f"  {b} completed  {self.title(b)}\n" for b in sorted(self.status) if self.status[b] == "completed"]
        return "".join(lines)

    def bead_list(self) -> str:
        return "".join(f"{b} {s} developer {self.claimed[b]} {self.title(b)}\n" for b, s in sorted(self.status.items()))

    def listing(self) -> str:
        return "".join(f"{s} sim {self.busy[s]} developer /tmp/work/{s} simulated\n" for s in self.sessions)

    def convoy_list(self) -> str:
        return "".join(f"convoy-{i:04d} in_progress 1/10 sim-0000 Convoy number {i}\n" for i in range(self.convoys))

    def usage(self) -> str:
        lines = [usage_line(s, n) for s, n in self.turns.items()]
        return "".join([*lines, usage_line("(removed)", 0), usage_line("(total)", sum(self.turns.values()))])

    def bead_usage(self) -> str:
        return "".join(usage_line(b, 1) for b, s in sorted(self.status.items()) if s != "pending")

    def convoy_usage(self) -> str:
        return "".join(usage_line(f"convoy-{i:04d}", 10) for i in range(self.convoys))


def usage_line(name: str, turns: int) -> str:
    return (f"{name} turns={turns} input_tokens={1500 * turns} output_tokens={300 * turns} cache_read_tokens=0 "
            f"cache_write_tokens=0 cost_usd={0.012 * turns:.6f} unpriced_turns=0\n")


def refreshes(tree: Tree, count: int) -> tuple[list[float], list[float], int]:
    """CPU ms of view.shown for `count` refreshes, a change before each, both ways in turn (a fresh
    Reading, the kept one); and how many refreshes gave different views. Only the latest views are
    held, as `anvilfs web` holds them (forty views of 10,000 beads make the collector's work bigger)."""
    kept, simulated = view.Reading(), {"sim": True}  # as learnt from a session's `backend` file
    queues, last = dict.fromkeys(tree.sessions, 0), {s: "09:00:00 idle" for s in tree.sessions[::2]}
    view.shown(tree.texts(), queues, last, simulated, kept)  # the first refresh: everything new either way
    fresh_ms, kept_ms, differ = [], [], 0
    for _ in range(count):
        tree.step()
        texts = tree.texts()
        start = time.process_time()
        fresh = view.shown(texts, queues, last, simulated, view.Reading())
        middle = time.process_time()
        again = view.shown(texts, queues, last, simulated, kept)
        fresh_ms.append((middle - start) * 1000)
        kept_ms.append((time.process_time() - middle) * 1000)
        differ += fresh != again
    return fresh_ms, kept_ms, differ


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--beads", type=int, default=10_000)
    parser.add_argument("--convoys", type=int, default=1_000)
    parser.add_argument("--sessions", type=int, default=1_000)
    parser.add_argument("--refreshes", type=int, default=40)
    args = parser.parse_args()
    print(f"{args.beads} beads, {args.convoys} convoys, {args.sessions} sessions; {args.refreshes} refreshes, "
          f"one bead claimed and one turn counted before each")
    fresh, kept, differ = refreshes(Tree(args.beads, args.convoys, args.sessions), args.refreshes)
    for name, ms in (("fresh Reading each refresh", fresh), ("one Reading kept", kept)):
        ms = sorted(ms)
        print(f"  {name:28} CPU per refresh: median {statistics.median(ms):6.2f} ms, "
              f"p90 {ms[int(len(ms) * 0.9)]:6.2f} ms, max {ms[-1]:6.2f} ms")
    print(f"  refreshes whose two views differ: {differ}")


if __name__ == "__main__":
    main()

"""The spending scenario of issue 34, for any agent CLI against its stub: a session holding a bead of a convoy runs
two turns; its usage, the bead's and the convoy's equal what the stub reported for every request of those turns;
a spent token budget keeps the next prompt queued with `wait` answering at once, and raising it runs it.

    check_spending(srv, "dev", tmp_path, reported)   # reported(): the stub's sums so far, as usage keys
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from drive import TURN_TIMEOUT, cli, turn

TOKENS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def figures(srv, path: str) -> dict[str, str]:
    return dict(line.split(" ", 1) for line in cli(srv, "read", path).splitlines())


def tokens_of(usage: dict[str, str]) -> dict[str, int]:
    return {key: int(usage[key]) for key in TOKENS}


def check_spending(srv, name: str, cwd: Path, reported: Callable[[], dict[str, int]],
                   prompts: tuple[str, str] = ("Say hello.", "Say goodbye.")) -> None:
    """`name` is a session already made; `reported()` sums what the stub reported for its requests so far
    (the keys of TOKENS; a key left out is 0)."""
    with srv.connect("tester") as client:
        convoy = client.read_back("convoys/ctl", b"new 'spend' 'count what is spent'").decode().strip()
        bead = client.read_back("beads/ctl", f"new 'spend' dev 'count it' convoy={convoy}".encode()).decode().strip()
    cli(srv, "write", f"agent/beads/{bead}/ctl", f"claim {name}")
    for prompt in prompts:
        turn(srv, name, prompt)
    usage = figures(srv, f"agent/{name}/usage")
    expected = {key: reported().get(key, 0) for key in TOKENS}
    assert tokens_of(usage) == expected, f"{name}'s usage {usage}, the stub reported {expected}"
    assert usage["turns"] == str(len(prompts)), usage
    for path in (f"agent/beads/{bead}/usage", f"agent/convoys/{convoy}/usage"):
        assert tokens_of(figures(srv, path)) == expected, f"{path}: {figures(srv, path)}"
    spent = sum(expected.values())
    assert spent > 0, f"the stub reported no tokens for {name}'s turns"
    cli(srv, "write", f"agent/{name}/ctl", f"token_budget {spent}")
    cli(srv, "write", f"agent/{name}/in", "One more, please.")
    assert cli(srv, "read", f"agent/{name}/wait", timeout=TURN_TIMEOUT).strip() == "error"
    assert "budget spent" in cli(srv, "read", f"agent/{name}/status")
    assert "One more, please." in cli(srv, "read", f"agent/{name}/queue")
    assert tokens_of(figures(srv, f"agent/{name}/usage")) == expected  # nothing ran
    cli(srv, "write", f"agent/{name}/ctl", f"token_budget {spent * 100}")
    assert cli(srv, "read", f"agent/{name}/wait", timeout=TURN_TIMEOUT).strip() == "await"
    assert figures(srv, f"agent/{name}/usage")["turns"] == str(len(prompts) + 1)
    assert cli(srv, "read", f"agent/{name}/queue") == ""

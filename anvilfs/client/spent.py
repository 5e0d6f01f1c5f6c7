"""What agents spent, short: the `usage` files' lines (SPEC §3) as the few characters `anvilfs top` and the
web show.

    agent/usage, beads/usage, convoys/usage    NAME turns=N input_tokens=N ... cost_usd=X unpriced_turns=N

A cell is the cost the CLIs reported (`$0.25`), with a `+` when some turns reported none (the sum is
then what is known, at least), or the tokens when no turn reported a cost (`1.2k tok`): never a price
made up from tokens. `unknown`: turns that reported neither (a CLI that says nothing of usage); `-`:
no turn counted.
"""

from __future__ import annotations

TOKEN_KEYS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
REMOVED, TOTAL = "(removed)", "(total)"  # agent/usage's last two lines


def lines(text: str) -> dict[str, dict[str, str]]:
    """NAME -> its KEY=VALUE words, for each line of a `usage` listing (a word that is no KEY=VALUE is left out)."""
    found = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        name, *words = line.split()
        found[name] = dict(word.split("=", 1) for word in words if "=" in word)
    return found


def turns(figures: dict[str, str]) -> int:
    return _whole(figures.get("turns", "0"))


def tokens(figures: dict[str, str]) -> int:
    return sum(_whole(figures.get(key, "0")) for key in TOKEN_KEYS)


def cell(figures: dict[str, str] | None) -> str:
    """`$0.25`, `$0.25+` (some turns reported no cost), `1.2k tok` (none did), `unknown` (nor any token),
    `-` (no turn)."""
    if not figures or not turns(figures):
        return "-"
    try:
        cost = float(figures.get("cost_usd", "unknown"))
    except ValueError:  # `unknown`: no turn reported a cost
        return f"{count(tokens(figures))} tok" if tokens(figures) else "unknown"  # not "0 tok": nothing was said
    return dollars(cost) + ("+" if _whole(figures.get("unpriced_turns", "0")) else "")


def total_line(listing: dict[str, dict[str, str]]) -> str:
    """agent/usage's total in one line: `total spent $1.25 in 12 turns, 3.4M tok (removed sessions: $0.30)`."""
    total, removed = listing.get(TOTAL, {}), listing.get(REMOVED, {})
    if not turns(total):
        return "total spent: nothing yet (no turn counted)"
    n, shown = turns(total), cell(total)
    counted = f"{n} turn{'s' if n != 1 else ''}"
    line = (f"total spent {shown} in {counted}, {count(tokens(total))} tok" if shown != "unknown"
            else f"total spent: unknown, {counted} and no usage reported")
    return line + (f" (removed sessions: {cell(removed)})" if turns(removed) else "")


def dollars(cost: float) -> str:
    """Cents, or a hundredth of a cent below one (a short turn of a cheap model costs that)."""
    if cost >= 100:
        return f"${cost:.0f}"
    return f"${cost:.2f}" if cost >= 0.01 or cost == 0 else f"${cost:.4f}"


def count(n: int) -> str:
    """1234 -> 1.2k, 56789 -> 57k, 999600 -> 1.0M, 3400000 -> 3.4M: three figures at most."""
    for suffix, size in (("G", 10**9), ("M", 10**6), ("k", 10**3)):
        if n >= size - size // 2000:  # what rounds to 1.0 of this unit is shown in it (not 1000k)
            value = n / size
            return f"{value:.1f}{suffix}" if value < 9.95 else f"{value:.0f}{suffix}"
    return str(n)


def _whole(word: str) -> int:
    return int(word) if word.isdigit() else 0

"""One turn's usage, as the agent's CLI reported it; never an invented price.

Tokens are split so that no token counts twice whatever the CLI's own
convention: ``input_tokens`` are the prompt tokens read fresh (Anthropic's
``input_tokens``; OpenAI's ``input_tokens - cached_tokens``),
``cache_read_tokens`` those read from the provider's cache,
``cache_write_tokens`` those written to it (Anthropic's
``cache_creation_input_tokens``), ``output_tokens`` what the model wrote
(reasoning included). A turn's ``tokens`` is the sum of the four: what a
token budget counts.

``cost_usd`` is what the CLI itself said the turn cost (Claude Code's
``total_cost_usd``, aider's ``Cost: $X message``), or None when it says
nothing. A sum's cost is the sum of the costs reported, None if no part
reported one; ``unknown_cost_turns`` says how many of its turns reported
none, so a partial sum shows as partial (the `usage` file's
``unpriced_turns``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

TOKEN_KEYS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = None  # None: the CLI reported no cost (unknown)
    turns: int = 0  # how many turns this sums (a turn's own Usage: 0 until counted)
    unknown_cost_turns: int = 0  # of those, how many reported no cost

    def __post_init__(self) -> None:
        for key in TOKEN_KEYS:
            value = getattr(self, key)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"usage: {key} must be a whole number >= 0, not {value!r}")
        if self.cost_usd is not None and not (self.cost_usd >= 0):  # also NaN
            raise ValueError(f"usage: cost_usd must be >= 0 dollars, not {self.cost_usd!r}")

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens

    @property
    def known_cost(self) -> float:
        """The dollars reported (0 where none was): what a money budget is held to."""
        return self.cost_usd or 0.0

    def __add__(self, other: Usage) -> Usage:
        """Two reports of one turn (each request of it), or two sums: tokens and reported costs add."""
        if not isinstance(other, Usage):
            return NotImplemented
        tokens = {key: getattr(self, key) + getattr(other, key) for key in TOKEN_KEYS}
        return Usage(**tokens, cost_usd=_add_costs(self, other), turns=self.turns + other.turns,
                     unknown_cost_turns=self.unknown_cost_turns + other.unknown_cost_turns)

    def as_turn(self) -> Usage:
        """This report counted as one turn."""
        return replace(self, turns=1, unknown_cost_turns=int(self.cost_usd is None))


ZERO = Usage()  # the sum of no turns


def _add_costs(a: Usage, b: Usage) -> float | None:
    if a.cost_usd is None:
        return b.cost_usd
    if b.cost_usd is None:
        return a.cost_usd
    return a.cost_usd + b.cost_usd


def figures(total: Usage) -> list[tuple[str, str]]:
    """A sum's figures in the order every `usage` file gives them: turns, the four token kinds, cost_usd,
    unpriced_turns (as `KEY VALUE` lines, usage_lines; as `KEY=VALUE` words, fs/usage_files.py)."""
    return [("turns", str(total.turns)), *_spent(total), ("unpriced_turns", str(total.unknown_cost_turns))]


def usage_lines(total: Usage, last: Usage | None = None) -> str:
    """`KEY VALUE` lines (SPEC §3 `usage`): the totals, then the last turn's keys prefixed `last_`."""
    pairs = figures(total) + ([(f"last_{key}", value) for key, value in _spent(last)] if last is not None else [])
    return "".join(f"{key} {value}\n" for key, value in pairs)


def _spent(usage: Usage) -> list[tuple[str, str]]:
    return [*((key, str(getattr(usage, key))) for key in TOKEN_KEYS), ("cost_usd", format_cost(usage))]


def format_cost(usage: Usage) -> str:
    """Dollars to six places (a millionth of a dollar is below any price per token); `unknown` when turns
    were counted and none reported a cost (no turns: nothing spent)."""
    if usage.cost_usd is None:
        return "unknown" if usage.turns else f"{0:.6f}"
    return f"{usage.cost_usd:.6f}"


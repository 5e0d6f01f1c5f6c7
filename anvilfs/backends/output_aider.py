"""Reading aider's text output (output_format "aider-text"), as aider 0.86 prints it.

stdout is the answer, as with "text": written as it comes, `out` unchanged.
Besides, after each request to its main model aider prints what it counted
(coders/base_coder.py, calculate_and_show_tokens_and_cost):

    Tokens: SENT sent[, W cache write][, H cache hit], RECEIVED received.[ Cost: $M message, $S session.]

the Cost part only when the model has a price (its metadata), on a line of
its own when both cache figures are there. Each such report is one request
(a reflection after a failed edit is another); aider does not report the
requests for its commit messages. SENT counts the prompt with its cache hits
and writes; a count of 1000 or more is rounded ("2.5k": to 100 below 10k,
to 1000 above), so a turn's tokens are as exact as aider prints them. What
aider counts: the API's usage for an answer that was not streamed
(AIDER_STREAM=false); its own count of the text, with its tokenizer, for a
streamed one (aider asks for no usage in the stream). M is the request's
cost in dollars, as aider computed it from the model's price, to about two
significant figures.
"""

from __future__ import annotations

import re
from dataclasses import replace

from ..usage import Usage
from .output_formats import LinesReader

_COUNT = r"(\d+(?:\.\d+)?k?)"
_TOKENS = re.compile(rf"^Tokens: {_COUNT} sent(?:, {_COUNT} cache write)?(?:, {_COUNT} cache hit)?, "
                     rf"{_COUNT} received\.(?:\s+(?P<cost>Cost: .*))?$")
_COST = re.compile(r"^Cost: \$(\d+(?:\.\d+)?) message, \$\d+(?:\.\d+)? session\.$")


class AiderReader(LinesReader):
    def __init__(self, output):
        super().__init__(output)
        self._pending: Usage | None = None  # a Tokens line's, until the line after it tells its cost

    def feed(self, text: str) -> None:
        self.output.write(text)
        super().feed(text)

    def close(self) -> None:
        super().close()
        self._report()

    def line(self, line: str, last: bool) -> None:
        line = line.strip()
        if self._pending is not None:
            cost = _COST.match(line)
            self._report(float(cost.group(1)) if cost else None)
            if cost:
                return
        tokens = _TOKENS.match(line)
        if tokens is None:
            return
        sent, written, hit, received = (_tokens(count) for count in tokens.group(1, 2, 3, 4))
        self._pending = Usage(input_tokens=max(sent - written - hit, 0), cache_write_tokens=written,
                              cache_read_tokens=hit, output_tokens=received)
        if tokens.group("cost"):
            cost = _COST.match(tokens.group("cost"))
            self._report(float(cost.group(1)) if cost else None)

    def _report(self, cost: float | None = None) -> None:
        if self._pending is not None:
            usage, self._pending = self._pending, None
            self.output.usage(replace(usage, cost_usd=cost))


def _tokens(count: str | None) -> int:
    """aider's format_tokens read back: 117, 2.5k (2500), 12k (12000)."""
    if not count:
        return 0
    if count.endswith("k"):
        return round(float(count[:-1]) * 1000)
    return int(float(count))

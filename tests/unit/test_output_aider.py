"""Reading aider's text (backends/output_aider.py), fed with what aider 0.86 printed against the stub.

fixtures/cli-output/aider-1.txt: a turn whose edit did not apply, so aider sent a
reflection (two requests: the stub reported prompt_tokens 117 and 134,
completion_tokens 21 and 22), not streamed, the model priced at $1 and $2
per million tokens in and out; aider-2.txt a second turn (121, 23);
aider-streamed.txt the first turn streamed (aider's default), unpriced:
aider counts the tokens of a streamed answer itself.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from harness.recorded_output import RecordedOutput, feed_in_pieces

from anvilfs.backends.output_aider import AiderReader
from anvilfs.usage import Usage

FIXTURES = Path(__file__).parents[1] / "fixtures" / "cli-output"


def run(text: str) -> RecordedOutput:
    output = RecordedOutput()
    feed_in_pieces(AiderReader(output), text)
    return output


def test_the_text_is_the_answer_as_it_comes_and_each_request_s_report_is_counted():
    text = (FIXTURES / "aider-1.txt").read_text()
    output = run(text)
    assert output.stream == text and output.given is None  # out is what was written, as before
    assert output.reports == [Usage(input_tokens=117, output_tokens=21, cost_usd=0.00016),
                              Usage(input_tokens=134, output_tokens=22, cost_usd=0.00018)]
    assert output.spent == Usage(input_tokens=251, output_tokens=43, cost_usd=0.00016 + 0.00018)


def test_a_turn_of_one_request():
    assert run((FIXTURES / "aider-2.txt").read_text()).spent == Usage(input_tokens=121, output_tokens=23,
                                                                      cost_usd=0.00017)


def test_streamed_counts_are_aider_s_own_and_rounded_and_unpriced():
    output = run((FIXTURES / "aider-streamed.txt").read_text())
    assert output.reports == [Usage(input_tokens=2500, output_tokens=33), Usage(input_tokens=2600, output_tokens=11)]
    assert output.spent.cost_usd is None


@pytest.mark.parametrize(("printed", "usage"), [
    ("Tokens: 12k sent, 1.5k cache write, 2.0k cache hit, 999 received. Cost: $0.05 message, $0.10 session.",
     Usage(input_tokens=12000 - 1500 - 2000, cache_write_tokens=1500, cache_read_tokens=2000, output_tokens=999,
           cost_usd=0.05)),
    # both cache figures: the cost goes on a line of its own
    ("Tokens: 3.1k sent, 10 cache write, 3.0k cache hit, 5 received.\nCost: $0.0012 message, $0.0030 session.",
     Usage(input_tokens=90, cache_write_tokens=10, cache_read_tokens=3000, output_tokens=5, cost_usd=0.0012)),
    ("Tokens: 40 sent, 2 received.\nThe LLM did not conform to the edit format.",
     Usage(input_tokens=40, output_tokens=2)),
])
def test_every_form_of_the_report(printed, usage):
    assert run(f"some answer\n{printed}\nmore\n").reports == [usage]


def test_a_report_cut_short_at_the_end_still_counts():
    assert run("answer\nTokens: 40 sent, 2 received.").reports == [Usage(input_tokens=40, output_tokens=2)]

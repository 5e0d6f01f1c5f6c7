"""conductor/markers.py's reading of a transcript: the prompts in it, and which turns a server stop cut short."""

from __future__ import annotations

from conductor.markers import LOST, lost_prompt, prompts_in_log, turns_in_log

LOG = (
    "--- prompt 1 from conductor at 2026-12-06T05:00:00Z\n"
    "[conductor review run t1 round 1 step fix]\nfix it\n"
    f"--- failed 1 at 2026-12-06T05:00:01Z: {LOST}\n"
    "--- prompt 2 from conductor at 2026-12-06T05:00:02Z\n"
    "[conductor review run t1 round 1 step fix]\nfix it\n"
    "--- answer 2 at 2026-12-06T05:00:03Z\nfixed\n"
)


def test_a_lost_turns_prompt_asked_again_is_in_the_log_twice_and_answered_once():
    line = "[conductor review run t1 round 1 step fix]"
    assert prompts_in_log(LOG) == [line, line]
    assert turns_in_log(LOG) == [(line, True), (line, False)]
    assert lost_prompt(LOG) is None, "the last turn was not cut short: a prompt ran after the lost one"

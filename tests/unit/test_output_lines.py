"""JsonLinesReader (backends/output_formats.py): lines as they come, garbage and cut lines noted, never kept whole.

A CLI's JSON events come in pieces that split lines anywhere; a line of
garbage, or the last line of a CLI killed mid-line, must not fail the turn nor
lose the events around it; a line longer than MAX_LINE is dropped, so a
reader's memory is bounded whatever the CLI prints.
"""

from __future__ import annotations

import json

from harness.recorded_output import RecordedOutput

from anvilfs.backends import output_formats
from anvilfs.backends.output_formats import MAX_LINE, JsonLinesReader, brief


class Events(JsonLinesReader):
    program = "the test CLI"

    def __init__(self, output):
        super().__init__(output)
        self.events: list[dict] = []

    def event(self, event: dict) -> None:
        self.events.append(event)


def read(*pieces: str) -> tuple[Events, RecordedOutput]:
    output = RecordedOutput()
    reader = Events(output)
    for piece in pieces:
        reader.feed(piece)
    reader.close()
    return reader, output


def test_lines_split_anywhere_are_read_whole():
    text = '{"a": 1}\n{"b": "two words"}\n\n{"c": [3]}\n'
    reader, output = read(*text)  # a character at a time
    assert reader.events == [{"a": 1}, {"b": "two words"}, {"c": [3]}] and output.notes == []


def test_a_last_line_without_its_newline_is_read():
    reader, _ = read('{"a": 1}\n{"b": 2}')
    assert reader.events == [{"a": 1}, {"b": 2}]


def test_garbage_is_noted_and_the_events_around_it_are_kept():
    reader, output = read('{"a": 1}\nnot json at all\n[1, 2]\n{"b": 2}\n')
    assert reader.events == [{"a": 1}, {"b": 2}]
    assert len(output.notes) == 2, output.notes
    assert "the test CLI: a line of the output is no JSON object, skipped unread: 'not json at all'" == output.notes[0]


def test_a_line_cut_short_by_a_killed_cli_is_noted_not_fatal():
    reader, output = read('{"a": 1}\n{"type": "item.completed", "item": {"te')
    assert reader.events == [{"a": 1}]
    assert output.notes == ["the test CLI: the output ended in the middle of a line, skipped unread: "
                            "'{\"type\": \"item.completed\", \"item\": {\"te'"]
    assert reader.failure() == ""


def test_a_line_over_the_limit_is_dropped_and_memory_stays_bounded(monkeypatch):
    monkeypatch.setattr(output_formats, "MAX_LINE", 1000)
    output = RecordedOutput()
    reader = Events(output)
    reader.feed('{"a": 1}\n{"huge": "')
    for _ in range(100):
        reader.feed("x" * 100)
        assert reader._length <= 1000  # what is kept of the line never passes the limit
    reader.feed('"}\n{"b": 2}\n')
    reader.close()
    assert reader.events == [{"a": 1}, {"b": 2}]
    assert output.notes == ["a line of the test CLI's output longer than 1000 characters was dropped unread"]


def test_a_long_line_under_the_limit_is_read():
    line = json.dumps({"text": "y" * 5000})
    reader, output = read(line[:2500], line[2500:] + "\n")
    assert reader.events == [{"text": "y" * 5000}] and output.notes == []
    assert MAX_LINE == 1 << 20


def test_brief_makes_one_line_of_bounded_length():
    assert brief("echo\n  hi") == "echo hi"
    assert brief("z" * 500) == "z" * 159 + "…"

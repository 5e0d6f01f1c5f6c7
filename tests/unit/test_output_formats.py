"""Every output_format the configuration accepts has a reader, and text reads as it always did."""

from anvilfs.backends.output_formats import FORMATS, TextReader
from anvilfs.config.model import OUTPUT_FORMATS


def test_each_configurable_format_has_a_reader():
    assert set(FORMATS) == set(OUTPUT_FORMATS)


class _Output:
    def __init__(self):
        self.written = []

    def write(self, text):
        self.written.append(text)


def test_text_is_the_answer_as_it_comes():
    output = _Output()
    reader = TextReader(output)
    reader.feed("a")
    reader.feed("b\n")
    reader.close()
    assert output.written == ["a", "b\n"] and reader.failure() == ""

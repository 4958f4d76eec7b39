"""Document ids are unique by construction: ``<source>/<id path>`` plus ``:<line>`` / ``#<record>``,
with every character of the id path that could end or delimit an id percent-escaped."""
from __future__ import annotations

import io
import json
import os

from curation.readers import read_cc_stories, read_realnews, read_warc
from curation.readers.files import escape_id_path, id_path
from test_readers_warc import html_response, warc

TEXT = "The committee met on Tuesday to discuss the budget for the coming year."


def _unescape(text: str) -> bytes:
    """Percent-decoding (the inverse the escaping promises), to raw bytes."""
    out, i = bytearray(), 0
    while i < len(text):
        if text[i] == "%":
            out.append(int(text[i + 1:i + 3], 16))
            i += 3
        else:
            out += text[i].encode("utf-8")
            i += 1
    return bytes(out)


def test_reserved_characters_are_escaped_and_the_rest_stays_readable():
    assert escape_id_path("a.jsonl:0") == "a.jsonl%3A0"
    assert escape_id_path("x.warc.gz#1") == "x.warc.gz%231"
    assert escape_id_path("100%.txt") == "100%25.txt"
    assert escape_id_path("cc/é and space.jsonl") == "cc/é and space.jsonl"
    assert escape_id_path("a\\b.jsonl") == "a\\b.jsonl"
    assert escape_id_path(os.fsdecode(b"byte\xff.jsonl")) == "byte%FF.jsonl"
    # what would split an id across lines, or lose its end, in a one-id-a-line request file
    assert escape_id_path("a\nb\rc\td\x00e\x85f\u2028g ") == "a%0Ab%0Dc%09d%00e%C2%85f%E2%80%A8g%20"


def test_escaping_is_injective():
    names = ["a.jsonl", "a.jsonl:0", "a.jsonl%3A0", "a.jsonl%253A0", "x#1", "x%231", "t ", "t%20",
             os.fsdecode(b"b\xff"), "b%FF", "b\\xff", "é", "%C3%A9"]
    escaped = [escape_id_path(n) for n in names]
    assert len(set(escaped)) == len(names)
    for name, e in zip(names, escaped):
        assert _unescape(e) == os.fsencode(name)
        assert ":" not in e and "#" not in e and "\n" not in e


def test_id_path_escapes_relative_paths():
    assert id_path("/r/a/x.jsonl:0", "/r") == "a/x.jsonl%3A0"
    assert id_path(os.fsdecode(b"/r/\xfe.txt"), "/r") == "%FE.txt"


def test_file_names_that_look_like_another_files_ids_get_other_ids():
    """``a.jsonl:0`` (one story) next to ``a.jsonl`` (line 0), ``x.warc.gz#1`` next to record 1
    of ``x.warc.gz``, in one source: before the escape each pair shared an id."""
    (line,) = read_realnews(io.BytesIO(json.dumps({"text": TEXT}).encode()), "/r/a.jsonl", "s",
                            id_path=id_path("/r/a.jsonl", "/r"))
    (story,) = read_cc_stories(io.BytesIO(TEXT.encode()), "/r/a.jsonl:0", "s",
                               id_path=id_path("/r/a.jsonl:0", "/r"))
    (page,) = read_warc(io.BytesIO(warc([html_response()])), "/r/x.warc.gz", "s",
                        id_path=id_path("/r/x.warc.gz", "/r"))
    (story2,) = read_cc_stories(io.BytesIO(TEXT.encode()), "/r/x.warc.gz#1", "s",
                                id_path=id_path("/r/x.warc.gz#1", "/r"))
    assert (line.id, story.id) == ("s/a.jsonl:0", "s/a.jsonl%3A0")
    assert (page.id, story2.id) == ("s/x.warc.gz#1", "s/x.warc.gz%231")


def test_a_file_read_on_its_own_escapes_its_base_name():
    (story,) = read_cc_stories(io.BytesIO(TEXT.encode()), "/somewhere/s#2.txt")
    assert story.id == "cc_stories/s%232.txt"

"""A WARC compressed whole (``gzip file.warc``: ONE gzip member) is read, front to back."""
from __future__ import annotations

import gzip
import io
import logging

from curation.document import DeadLetter, Document
from curation.readers import plan_warc_ranges, read_warc
from curation.readers.warc_records import one_gzip_member
from test_readers_warc import html_response, warc

PLAIN = warc([html_response(f"http://e.com/{i}") for i in range(5)], gzip=False)
WHOLE = gzip.compress(PLAIN)


def _read(data: bytes):
    return list(read_warc(io.BytesIO(data), "/cc/x.warc.gz", "cc_2020_50"))


def test_whole_file_gzip_gives_the_records_of_the_plain_file():
    got, plain = _read(WHOLE), list(read_warc(io.BytesIO(PLAIN), "/cc/x.warc.gz", "cc_2020_50"))
    assert [type(r) for r in got] == [Document] * 5
    assert [(d.id, d.text) for d in got] == [(d.id, d.text) for d in plain]


def test_it_is_one_unsplittable_range_and_the_log_says_so(caplog):
    with caplog.at_level(logging.WARNING, logger="curation.readers.warc"):
        ranges = plan_warc_ranges(io.BytesIO(WHOLE), "/cc/x.warc.gz", 2)
    assert [(r.offset, r.first_record, r.count) for r in ranges] == [(0, 0, None)]
    assert "compressed as ONE gzip member" in caplog.text and "cannot be split" in caplog.text


def test_detection_only_for_a_member_that_holds_more_than_one_record():
    per_record = warc([html_response(f"http://e.com/{i}") for i in range(5)])
    f = io.BytesIO(per_record)
    f.seek(7)
    assert not one_gzip_member(f, "x.warc.gz") and f.tell() == 7  # position kept
    assert len(plan_warc_ranges(io.BytesIO(per_record), "x.warc.gz", 2)) == 3
    assert not one_gzip_member(io.BytesIO(PLAIN), "x.warc")
    assert one_gzip_member(io.BytesIO(WHOLE), "x.warc.gz")
    half = len(PLAIN) // 2  # two whole-file members (`cat a.warc.gz b.warc.gz`) are read too
    two = gzip.compress(PLAIN[:half]) + gzip.compress(PLAIN[half:])
    assert one_gzip_member(io.BytesIO(two), "x.warc.gz") and len(_read(two)) == 5


def test_a_cut_whole_file_keeps_the_records_before_the_cut():
    out = _read(WHOLE[:-30])  # (a repetitive page: most of its bytes decompress from the tail)
    assert all(isinstance(r, Document) for r in out[:-1]) and len(out) >= 2
    dead = out[-1]
    assert isinstance(dead, DeadLetter) and dead.error.startswith("corrupt_warc from record")
    assert "TruncatedInput" in dead.error and "one gzip member" in dead.error

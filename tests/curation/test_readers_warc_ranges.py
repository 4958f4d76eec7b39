"""Splitting WARC files into record ranges: reading every range gives the whole-file result."""
from __future__ import annotations

import io

import pytest

from curation.readers import WarcRange, plan_warc_ranges, read_warc
from test_readers_warc import PAGE, html_response, warc


def _key(rec):
    doc = getattr(rec, "doc", rec)
    return type(rec).__name__, getattr(doc, "id", None) or rec.location, getattr(rec, "reason", None)


def _read_ranges(data: bytes, ranges: list[WarcRange]) -> list:
    out = []
    for r in ranges:
        f = io.BytesIO(data)
        f.seek(r.offset)
        out += read_warc(f, r.path, "cc_2020_50", first_record=r.first_record, max_records=r.count)
    return out


@pytest.mark.parametrize("per_range", [1, 2, 3, 50])
@pytest.mark.parametrize("gzip", [True, False])
def test_ranges_reproduce_the_whole_file(per_range, gzip):
    recs = []
    for i in range(7):
        recs.append(("request", f"http://e.com/{i}", b"GET / HTTP/1.1\r\n\r\n", None, None))
        recs.append(html_response(f"http://e.com/{i}", PAGE.replace("Monday", f"day {i}")))
    data = warc(recs, gzip=gzip)
    name = "/cc/x.warc.gz" if gzip else "/cc/x.warc"
    whole = list(read_warc(io.BytesIO(data), name, "cc_2020_50"))
    ranges = plan_warc_ranges(io.BytesIO(data), name, per_range)
    assert len(ranges) == -(-15 // per_range)  # 15 records: warcinfo + 7 pairs
    assert ranges[-1].count is None and all(r.count == per_range for r in ranges[:-1])
    assert [_key(r) for r in _read_ranges(data, ranges)] == [_key(r) for r in whole]


def test_truncated_tail_is_reported_once_by_the_last_range():
    data = warc([html_response(f"http://e.com/{i}") for i in range(5)])[:-100]
    whole = [_key(r) for r in read_warc(io.BytesIO(data), "/cc/t.warc.gz", "cc_2020_50")]
    ranges = plan_warc_ranges(io.BytesIO(data), "/cc/t.warc.gz", 2)
    got = [_key(r) for r in _read_ranges(data, ranges)]
    assert got == whole and got[-1][0] == "DeadLetter"


def test_garbage_plans_one_range_that_dead_letters():
    data = bytes(range(256)) * 40
    ranges = plan_warc_ranges(io.BytesIO(data), "/cc/g.warc.gz", 10)
    assert ranges == [WarcRange("/cc/g.warc.gz", 0, 0, None)]
    (dead,) = _read_ranges(data, ranges)
    assert dead.location == "/cc/g.warc.gz#0" and dead.error.startswith("corrupt_warc")


def test_bad_range_size_is_rejected():
    with pytest.raises(ValueError, match="records_per_range"):
        plan_warc_ranges(io.BytesIO(b""), "x.warc", 0)

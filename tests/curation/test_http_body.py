"""HTTP payloads of WARC responses: transfer and content codings undone, bounded, never cut silently."""
from __future__ import annotations

import gzip
import io
import tracemalloc
import zlib

import brotli
import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from curation.document import DeadLetter, Document, Removal
from curation.readers import read_warc
from curation.readers.http_body import codings
from test_readers_warc import PAGE, PARAS

HTML = PAGE.encode()


def _response(body: bytes, headers: list[tuple[str, str]]) -> bytes:
    buf = io.BytesIO()
    w = WARCWriter(buf, gzip=True)
    http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")] + headers, protocol="HTTP/1.1")
    w.write_record(w.create_warc_record("http://e.com/", "response", payload=io.BytesIO(body), http_headers=http))
    return buf.getvalue()


def _read(data: bytes, **kw):
    (rec,) = read_warc(io.BytesIO(data), "x.warc.gz", "cc_2020_50", **kw)
    return rec


def _chunked(body: bytes, size: int = 300) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + size]), body[i:i + size])
                    for i in range(0, len(body), size)) + b"0\r\n\r\n"


@pytest.mark.parametrize("body, headers", [
    (brotli.compress(HTML), [("Content-Encoding", "br")]),
    (_chunked(brotli.compress(HTML)), [("Content-Encoding", "br"), ("Transfer-Encoding", "chunked")]),
    (gzip.compress(HTML), [("Content-Encoding", "gzip")]),
    (gzip.compress(HTML), [("Content-Encoding", "x-gzip")]),
    (zlib.compress(HTML), [("Content-Encoding", "deflate")]),
    (zlib.compress(HTML)[2:-4], [("Content-Encoding", "deflate")]),  # raw deflate, as some servers send
    (gzip.compress(brotli.compress(HTML)), [("Content-Encoding", "br, gzip")]),  # applied in order
    (HTML, [("Content-Encoding", "gzip")]),  # the header lies: taken as it is
    (HTML, [("Content-Encoding", "utf-8")]),  # not a coding at all: taken as it is
    (_chunked(HTML), [("Transfer-Encoding", "chunked")]),
], ids=["br", "chunked-br", "gzip", "x-gzip", "deflate", "raw-deflate", "br-then-gzip", "lying-gzip",
        "unknown", "chunked"])
def test_encoded_bodies_give_the_page(body, headers):
    doc = _read(_response(body, headers))
    assert isinstance(doc, Document), doc
    assert PARAS[0][:60] in doc.text


def test_a_body_corrupt_part_way_is_a_dead_letter_not_a_shorter_page():
    whole = gzip.compress(HTML * 20)
    bad = _read(_response(whole[:200] + b"\x00" * 100 + whole[300:], [("Content-Encoding", "gzip")]))
    assert isinstance(bad, DeadLetter) and bad.error.startswith("record_failed: CorruptBody: zlib:")


def test_a_body_cut_by_the_crawler_gives_what_it_holds():
    doc = _read(_response(gzip.compress(HTML)[:-150], [("Content-Encoding", "gzip")]))
    assert isinstance(doc, Document) and PARAS[0][:60] in doc.text


def test_a_brotli_bomb_is_too_large_in_bounded_memory():
    c = brotli.Compressor(quality=5)
    bomb = c.process(b"<p>") + b"".join(c.process(b"a" * (1 << 20)) for _ in range(64)) + c.finish()
    assert len(bomb) < 64 * 1024  # 64 MiB of page in a few KB
    tracemalloc.start()
    try:
        rec = _read(_response(bomb, [("Content-Encoding", "br")]), max_doc_bytes=1 << 20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert isinstance(rec, Removal) and rec.reason == "too_large"
    assert peak < 24 << 20  # a few steps of 1 MiB past the 1 MiB limit, never the 64 MiB


def test_codings_are_undone_last_applied_first():
    assert codings("gzip, br") == ["br", "gzip"]
    assert codings(" GZIP ") == ["gzip"]
    assert codings("identity") == [] and codings(None) == []
    assert codings("gzip, zstd") is None  # one unknown: the body is taken as it is

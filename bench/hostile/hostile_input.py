"""Hostile HTML and WARC bytes: the bounded code paths against the ones they replaced, side by side.

    .venv/bin/python -m bench.hostile.hostile_input [--repeats 3]

Three cases from issue 15, each timed both ways in the same process, alternating order,
median of ``--repeats``:

1. ``markup_too_deep`` on ``<a `` x n with no ``>``: the old tag pattern ``[^>]*?`` rescans to
   the end of the page from every ``<`` (quadratic); the new ``[^<>]*?`` stops at the next ``<``.
2. Extraction of a page with n one-word ``<li>`` items: jusText (quadratic in runs of short
   paragraphs) against resiliparse, which ``read_warc`` uses above ``MAX_JUSTEXT_BLOCKS``.
3. WARC resynchronisation over n repeated gzip magic bytes: every candidate probed with a 64 KB
   window (before) against a 4 KB quick probe first (now).

Round two (issue 25), HTTP bodies (``curation.readers.http_body``):

4. A gzip-encoded 8 MiB page read whole: warcio's ``record.content_stream()`` (before) against
   ``http_body`` (now), time; and the peak memory (tracemalloc) of reading a brotli bomb up to
   the reader's bound (8 x a 32 MiB limit) with ``http_body`` against decoding it in one call,
   which is what an unbounded decoder step does (warcio's brotli path failed outright).
5. A 20 MiB WARC compressed whole as ONE gzip member, read by ``read_warc`` (now: front to back;
   before: one ``corrupt_warc`` dead letter) against the same records gzipped per record.
"""
from __future__ import annotations

import argparse
import io
import re
import statistics
import sys
import time
import zlib

from curation.readers import warc as warc_mod  # noqa: E402
from curation.readers import warc_records  # noqa: E402
from curation.readers.http_body import http_body  # noqa: E402

OLD_TAG_RE = re.compile(rb"<(/?)([a-zA-Z][a-zA-Z0-9]*)[^>]*?(/?)>")


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def side_by_side(name: str, before, after, repeats: int) -> tuple[float, float]:
    a, b = [], []
    for r in range(repeats):  # alternate which side runs first
        if r % 2:
            b.append(_timed(after))
            a.append(_timed(before))
        else:
            a.append(_timed(before))
            b.append(_timed(after))
    ma, mb = statistics.median(a), statistics.median(b)
    print(f"{name:<48} before {ma:8.3f} s   now {mb:8.3f} s   ratio {ma / mb:8.1f}x", flush=True)
    return ma, mb


def _old_probe(raw: bytes) -> bool:
    try:
        head = zlib.decompressobj(zlib.MAX_WBITS | 16).decompress(raw, warc_records.HEADER_PROBE)
    except zlib.error:
        return False
    return warc_records.parsable_header(head)


def _scan(buf: bytes, probe) -> int:
    """Candidates probed over ``buf`` with ``probe`` (the resync inner loop)."""
    view, n, i = memoryview(buf), 0, buf.find(warc_records.GZIP_MAGIC)
    while i >= 0:
        n += 1
        probe(view[i:i + warc_records.HEADER_PROBE])
        i = buf.find(warc_records.GZIP_MAGIC, i + 1)
    return n


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args(argv)
    for n in (2000, 4000):
        page = b"<a " * n
        side_by_side(f"markup scan, {n} unclosed tags", lambda: sum(1 for _ in OLD_TAG_RE.finditer(page)),
                     lambda: warc_mod.markup_too_deep(page), args.repeats)
    for n in (2000, 4000):
        html = "<html><body><ul>" + "<li>x</li>" * n + "</ul></body></html>"
        side_by_side(f"extraction, {n} one-word list items", lambda: warc_mod.extract_text(html, "justext"),
                     lambda: warc_mod.extract_text(html, "resiliparse"), args.repeats)
    buf = warc_records.GZIP_MAGIC * 50_000 + b"\0" * warc_records.HEADER_PROBE
    side_by_side("resync probes, 50,000 fake gzip starts", lambda: _scan(buf, _old_probe),
                 lambda: _scan(buf, lambda w: warc_records._probe_bytes(w, True)), args.repeats)
    data = io.BytesIO(buf)
    t = _timed(lambda: warc_records.resync(data, 0, True))
    print(f"resync() itself over the same bytes: {t:.3f} s (no record to find: returns None)")
    http_bodies(args.repeats)
    whole_file_gzip(args.repeats)
    return 0


def _http_record(body: bytes, coding: str):
    """A warcio response record whose raw_stream holds ``body`` (as ``read_warc`` hands it on)."""
    from warcio.archiveiterator import ArchiveIterator
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    buf = io.BytesIO()
    w = WARCWriter(buf, gzip=False)
    http = StatusAndHeaders("200 OK", [("Content-Type", "text/html"), ("Content-Encoding", coding)],
                            protocol="HTTP/1.1")
    w.write_record(w.create_warc_record("http://e/", "response", payload=io.BytesIO(body), http_headers=http))
    rec = next(iter(ArchiveIterator(io.BytesIO(buf.getvalue()))))
    rec.raw_stream = io.BytesIO(rec.raw_stream.read())
    return rec


def _peak(fn) -> int:
    import tracemalloc

    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def http_bodies(repeats: int) -> None:
    import gzip as gz

    import brotli

    page = b"<html><body>" + b"".join(b"<p>paragraph %d of a long page, words words words.</p>" % i
                                      for i in range(150_000)) + b"</body></html>"
    page = page[: 8 << 20]
    body = gz.compress(page, 6)

    def before():
        assert _http_record(body, "gzip").content_stream().read() == page

    def after():
        assert http_body(_http_record(body, "gzip")).read() == page

    side_by_side("gzip HTTP body, 8 MiB page, read whole", before, after, repeats)
    c = brotli.Compressor(quality=5)
    bomb = c.process(b"<p>") + b"".join(c.process(b"a" * (1 << 20)) for _ in range(512)) + c.finish()
    limit = 32 << 20

    def bounded():
        stream = http_body(_http_record(bomb, "br"))
        size = len(stream.read(limit + 1))
        while size <= 8 * limit and (chunk := stream.read(1 << 20)):
            size += len(chunk)

    one_call, ours = _peak(lambda: brotli.decompress(bomb)), _peak(bounded)
    print(f"{'brotli bomb, 512 MiB from ' + str(len(bomb)) + ' bytes, peak memory':<48} "
          f"one call {one_call / 2**20:8.0f} MiB   now {ours / 2**20:6.0f} MiB   ratio {one_call / ours:8.1f}x")


def whole_file_gzip(repeats: int) -> None:
    import gzip as gz

    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    def warc(per_record: bool) -> bytes:
        buf = io.BytesIO()
        w = WARCWriter(buf, gzip=per_record)
        for i in range(2000):
            page = b"<html><body>" + b"".join(b"<p>Page %d says thing %d in a sentence of words.</p>" % (i, k)
                                              for k in range(200)) + b"</body></html>"
            http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
            w.write_record(w.create_warc_record(f"http://e/{i}", "response", payload=io.BytesIO(page),
                                                http_headers=http))
        return buf.getvalue()

    per_record, plain = warc(True), warc(False)
    whole = gz.compress(plain)

    def read(data: bytes):
        def run():
            n = sum(1 for _ in warc_records.warc_entries(io.BytesIO(data), "x.warc.gz", keep=1 << 25))
            assert n == 2000
        return run

    print(f"(whole-file WARC: {len(plain) >> 20} MiB plain, {len(whole) >> 10} KiB as one member)")
    side_by_side("WARC records walked: per-record gzip vs one member", read(per_record), read(whole), repeats)


if __name__ == "__main__":
    sys.exit(main())

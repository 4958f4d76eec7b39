"""Hostile HTML and WARC bytes: the bounded code paths against the ones they replaced, side by side.

    .venv/bin/python bench/bench_hostile_input.py [--repeats 3]

Three cases from issue 15, each timed both ways in the same process, alternating order,
median of ``--repeats``:

1. ``markup_too_deep`` on ``<a `` x n with no ``>``: the old tag pattern ``[^>]*?`` rescans to
   the end of the page from every ``<`` (quadratic); the new ``[^<>]*?`` stops at the next ``<``.
2. Extraction of a page with n one-word ``<li>`` items: jusText (quadratic in runs of short
   paragraphs) against resiliparse, which ``read_warc`` uses above ``MAX_JUSTEXT_BLOCKS``.
3. WARC resynchronisation over n repeated gzip magic bytes: every candidate probed with a 64 KB
   window (before) against a 4 KB quick probe first (now).
"""
from __future__ import annotations

import argparse
import io
import re
import statistics
import sys
import time
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from curation.readers import warc as warc_mod  # noqa: E402
from curation.readers import warc_records  # noqa: E402

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
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The fault-injected corpus: every kind of hostile input we know, in the four raw formats.

``write_fault_corpus(root)`` writes the files and returns the planted ``Kind``s, each with the
one outcome it must end in: ``kept`` (by id), ``removed`` (by id, with a reason) or
``dead_letter`` (by input location, with an error prefix), or ``none`` for inputs that hold no
document at all (empty files, empty gzip members).  ``tests/pipelines/test_fault_injection.py``
runs the real curate job once over all of it.

Kinds: sizes (a 50 MB line that is also a zstd decompression bomb, a 40 MiB one-file story,
empty files and frames, zero-length gzip members); depths (JSON ``meta`` 800 deep, markup
100,000 deep); encodings (invalid and overlong UTF-8, lone surrogates in text, in metadata and
titles, UTF-8 BOM, UTF-16/32 files with BOMs, a WARC charset that lies, CRLF line ends, NUL
characters); file types (FIFO, socket, directory, broken symlink, symlink loop); names (the
same base name in two folders, spaces and non-ASCII, a byte that is not UTF-8); compression
(truncated, corrupt and garbage zstd and gzip, garbage after a valid frame, multi-member gzip);
WARC framing (a corrupt gzip member mid-file, Content-Length too small and too large, a record
without WARC-Type, a 1 MB header, a truncated last record, non-HTTP responses); HTML that
makes scanners slow (20,000 short list items for jusText, 200,000 unclosed tags).  Round two
(issue 25): a JSON integer of 5,000 digits (Python's int limit is 4,300), file names that end
like another file's id (``a.jsonl:0`` next to ``a.jsonl``, ``x.warc.gz#1`` next to
``x.warc.gz``, one source), a name holding a backslash, brotli/gzip/chunked HTTP bodies (and a
brotli bomb), a WARC compressed whole as ONE gzip member.  Duplicate files are refused before
any work; that is tested separately (a second config).
"""
from __future__ import annotations

import gzip
import io
import json
import os
import random
import re
import socket
from dataclasses import dataclass

import zstandard
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from pipeline_fixtures import english

_RND = random.Random(7)
GARBAGE = bytes(_RND.getrandbits(8) for _ in range(20_000))
# (The corpus this one grew from built GARBAGE with a new Random(7) per byte: 20,000 x "R",
# valid UTF-8, so its "binary garbage" kinds never held a single non-ASCII byte.)
HUGE_LINE_BYTES = 50 * 1024 * 1024  # over the readers' 32 MiB max_doc_bytes


@dataclass(frozen=True)
class Kind:
    name: str
    source: str
    outcome: str  # kept | removed | dead_letter | none
    key: str  # id (kept/removed) or location relative to the corpus root (dead_letter)
    reason: str | None = None  # removal reason, or dead-letter error prefix; None: any


def _zst(lines: list[bytes]) -> bytes:
    return zstandard.ZstdCompressor().compress(b"\n".join(lines) + b"\n")


def _page(i: int) -> bytes:
    body = "".join(f"<p>{p}</p>" for p in english(100 + i).split("\n\n"))
    return f"<html><body><div>Home | News</div>{body}<div>Copyright</div></body></html>".encode()


def _warc(records: list[tuple], gz: bool = True) -> bytes:
    buf = io.BytesIO()
    w = WARCWriter(buf, gzip=gz)
    w.write_record(w.create_warcinfo_record("f.warc.gz", {"software": "test"}))
    for kind, uri, payload, ctype, status in records:
        if kind == "response" and status is not None:
            http = StatusAndHeaders(f"{status} X", [("Content-Type", ctype)], protocol="HTTP/1.1")
            rec = w.create_warc_record(uri, "response", payload=io.BytesIO(payload), http_headers=http)
        else:
            rec = w.create_warc_record(uri, kind, payload=io.BytesIO(payload), warc_content_type=ctype)
        w.write_record(rec)
    return buf.getvalue()


def _member_offsets(data: bytes) -> list[int]:
    """Start of each gzip member (a WARCWriter writes one per record)."""
    import zlib

    offs, pos = [], 0
    while pos < len(data):
        offs.append(pos)
        d = zlib.decompressobj(zlib.MAX_WBITS | 16)
        d.decompress(data[pos:])
        pos = len(data) - len(d.unused_data)
    return offs


def _write(root: str, rel: str, data: bytes) -> None:
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def _good(i: int, subset: str) -> bytes:
    return json.dumps({"text": english(i), "meta": {"pile_set_name": subset}}).encode()


def _pile(root: str) -> list[Kind]:
    f = "pile/mixed.jsonl.zst"
    _write(root, f, _zst([
        _good(1, "Wikipedia (en)"),
        b'{"text": "cut off json',
        b'{"text": "caf\xe9 latin-1", "meta": {"pile_set_name": "Books3"}}',
        b'[1, 2, 3]',
        b'{"meta": {"pile_set_name": "Books3"}}',
        b'{"text": "\\ud800 lone", "meta": {"pile_set_name": "Books3"}}',
        json.dumps({"text": "", "meta": {"pile_set_name": "Wikipedia (en)"}}).encode(),
        _good(2, "FreeLaw"),
        b'{"text": "' + b"a" * HUGE_LINE_BYTES + b'", "meta": {"pile_set_name": "Books3"}}',
        GARBAGE[:3000].replace(b"\n", b" "),
        _good(3, "Books3"),
    ]))
    kinds = [
        Kind("jsonl: valid record", "wikipedia", "kept", f"wikipedia/{f}:0"),
        Kind("jsonl: cut-off JSON", "pile_other", "dead_letter", f"{f}:1", "invalid_json"),
        Kind("jsonl: invalid UTF-8 (latin-1 byte)", "books3", "dead_letter", f"{f}:2", "invalid_utf8"),
        Kind("jsonl: JSON that is not an object", "pile_other", "dead_letter", f"{f}:3", "invalid_json"),
        Kind("jsonl: no text field", "books3", "dead_letter", f"{f}:4", "missing_text"),
        Kind("jsonl: lone surrogate escape in text", "books3", "dead_letter", f"{f}:5", "invalid_unicode"),
        Kind("jsonl: empty text", "wikipedia", "removed", f"wikipedia/{f}:6"),
        Kind("pile: subset outside the blend", "pile_other", "removed", f"pile_other/{f}:7",
             "pile_subset_not_in_blend"),
        Kind("jsonl: 50 MB line (zstd bomb, 1000:1)", "books3", "removed", f"books3/{f}:8", "too_large"),
        Kind("jsonl: binary garbage line", "pile_other", "dead_letter", f"{f}:9", "invalid_utf8"),
        Kind("jsonl: valid record after all of that", "books3", "kept", f"books3/{f}:10"),
    ]
    whole = _zst([_good(i, "Wikipedia (en)") for i in range(10, 14)])
    _write(root, "pile/truncated.jsonl.zst", whole[: len(whole) // 2])
    _write(root, "pile/garbage.jsonl.zst", GARBAGE)
    kinds += [Kind("zstd: truncated frame", "pile_other", "dead_letter", "pile/truncated.jsonl.zst:0",
                   "unreadable stream from line 0"),
              Kind("zstd: garbage file", "pile_other", "dead_letter", "pile/garbage.jsonl.zst:0",
                   "unreadable stream")]
    # Corrupt in the middle: the first two records come out whole, then the stream fails.
    head = _zst([_good(20, "Books3"), _good(21, "Books3")])
    _write(root, "pile/corrupt.jsonl.zst", head + zstandard.ZstdCompressor().compress(
        b"\n".join(_good(i, "Books3") for i in (22, 23)))[:20] + GARBAGE[:64])
    kinds += [Kind("zstd: records before a corrupt frame (1/2)", "books3", "kept",
                   "books3/pile/corrupt.jsonl.zst:0"),
              Kind("zstd: records before a corrupt frame (2/2)", "books3", "kept",
                   "books3/pile/corrupt.jsonl.zst:1"),
              Kind("zstd: corrupt frame mid-file", "pile_other", "dead_letter",
                   "pile/corrupt.jsonl.zst:2", "unreadable stream from line 2")]
    _write(root, "pile/trailing.jsonl.zst", _zst([_good(24, "Books3")]) + b"\x00garbage after the frame")
    kinds += [Kind("zstd: the record of a valid frame followed by garbage", "books3", "kept",
                   "books3/pile/trailing.jsonl.zst:0"),
              Kind("zstd: garbage after a valid frame", "pile_other", "dead_letter",
                   "pile/trailing.jsonl.zst:1", "unreadable stream from line 1")]
    deep = '{"a": ' * 800 + "1" + "}" * 800
    _write(root, "pile/hostile.jsonl.zst", _zst([
        ('{"text": "%s", "meta": {"pile_set_name": "Wikipedia (en)", "x": %s}}' % ("deep", deep)).encode(),
        b'{"text": "ok", "meta": {"pile_set_name": "Wikipedia (en)", "note": "\\udc00"}}',
        _good(30, "Wikipedia (en)").replace(b"Wikipedia (en)", b"Books3").replace(b'"text": "', b'"text": "\\u0000NUL ', 1),
        _good(31, "Books3") + b"\r",  # CRLF line end
    ]))
    _write(root, "pile/bignum.jsonl.zst", _zst([
        b'{"text": "x", "meta": {"n": ' + b"9" * 5000 + b', "pile_set_name": "Books3"}}',
        _good(33, "Books3")]))
    kinds += [Kind("jsonl: integer of 5,000 digits (over Python's 4,300)", "books3", "dead_letter",
                   "pile/bignum.jsonl.zst:0", "invalid_json: an integer of 5000 digits"),
              Kind("jsonl: valid record after the 5,000-digit integer", "books3", "kept",
                   "books3/pile/bignum.jsonl.zst:1")]
    h = "pile/hostile.jsonl.zst"
    kinds += [Kind("jsonl: meta nested 800 levels deep", "wikipedia", "dead_letter", f"{h}:0", "invalid_meta"),
              Kind("jsonl: lone surrogate in meta", "wikipedia", "dead_letter", f"{h}:1", "invalid_meta"),
              Kind("jsonl: NUL character in text", "books3", "kept", f"books3/{h}:2"),
              Kind("jsonl: CRLF line end", "books3", "kept", f"books3/{h}:3")]
    _write(root, "pile/bom.jsonl.zst", zstandard.ZstdCompressor().compress(b"\xef\xbb\xbf" + _good(32, "Books3") + b"\n"))
    _write(root, "pile/empty.jsonl.zst", b"")
    _write(root, "pile/empty_frame.jsonl.zst", zstandard.ZstdCompressor().compress(b""))
    kinds += [Kind("jsonl: UTF-8 BOM on the first line", "books3", "kept", "books3/pile/bom.jsonl.zst:0"),
              Kind("zstd: empty file (0 bytes)", "pile_other", "none", "pile/empty.jsonl.zst"),
              Kind("zstd: empty frame", "pile_other", "none", "pile/empty_frame.jsonl.zst")]
    return kinds


def _realnews(root: str) -> list[Kind]:
    news = [json.dumps({"title": "T", "text": english(40), "url_used": "http://n/1"}).encode(),
            b"not json at all", b'"just a string"', b"\xff\xfe\x00bad utf-8",
            json.dumps({"title": "T", "text": "   "}).encode(),
            json.dumps({"title": "T", "text": english(41), "url_used": "http://n/2"}).encode(),
            b'{"text": "over\xc0\xaflong utf-8"}',
            b'{"title": "\\ud83d", "text": "surrogate title"}',
            json.dumps({"text": "x", "authors": json.loads("[" * 100 + "]" * 100)}).encode()]
    _write(root, "realnews/rn.jsonl", b"\n".join(news) + b"\n\n\n")  # blank lines are not records
    f = "realnews/rn.jsonl"
    kinds = [Kind("jsonl: valid RealNews record", "realnews", "kept", f"realnews/{f}:0"),
             Kind("jsonl: not JSON", "realnews", "dead_letter", f"{f}:1", "invalid_json"),
             Kind("jsonl: JSON string, not an object", "realnews", "dead_letter", f"{f}:2", "invalid_json"),
             Kind("jsonl: UTF-16 bytes mid-file", "realnews", "dead_letter", f"{f}:3", "invalid_utf8"),
             Kind("jsonl: whitespace-only text", "realnews", "removed", f"realnews/{f}:4"),
             Kind("jsonl: valid record between bad ones", "realnews", "kept", f"realnews/{f}:5"),
             Kind("jsonl: overlong UTF-8", "realnews", "dead_letter", f"{f}:6", "invalid_utf8"),
             Kind("jsonl: lone surrogate in title", "realnews", "dead_letter", f"{f}:7", "invalid_meta"),
             Kind("jsonl: metadata nested 100 deep", "realnews", "dead_letter", f"{f}:8", "invalid_meta")]
    _write(root, "realnews/garbage.jsonl", GARBAGE.replace(b"\n", b" "))
    kinds.append(Kind("jsonl: one binary line", "realnews", "dead_letter", "realnews/garbage.jsonl:0"))
    for sub, i in (("a", 42), ("b", 43)):
        _write(root, f"realnews/{sub}/same.jsonl", json.dumps({"text": english(i)}).encode() + b"\n")
        kinds.append(Kind(f"names: same base name in two folders ({sub}/)", "realnews", "kept",
                          f"realnews/realnews/{sub}/same.jsonl:0"))
    _write(root, "realnews/wide.jsonl", (json.dumps({"text": english(44)}) + "\n").encode("utf-16"))
    kinds.append(Kind("encoding: UTF-16 JSONL file", "realnews", "dead_letter", "realnews/wide.jsonl:0",
                      "unsupported_encoding"))
    lines = b"\n".join(json.dumps({"text": english(i)}).encode() for i in (45, 46)) + b"\n"
    _write(root, "realnews/multi.jsonl.gz", gzip.compress(lines[:10]) + gzip.compress(lines[10:]))
    lines = b"\n".join(json.dumps({"text": english(i)}).encode() for i in (55, 56)) + b"\n"
    _write(root, "realnews/cut.jsonl.gz", gzip.compress(lines)[:-4])  # trailer cut
    _write(root, "realnews/empty_member.jsonl.gz", gzip.compress(b"") + gzip.compress(
        json.dumps({"text": english(47)}).encode() + b"\n"))
    kinds += [Kind("gzip: a line split across two members", "realnews", "kept",
                   "realnews/realnews/multi.jsonl.gz:0"),
              Kind("gzip: second member", "realnews", "kept", "realnews/realnews/multi.jsonl.gz:1"),
              Kind("gzip: records before a cut-off trailer (1/2)", "realnews", "kept",
                   "realnews/realnews/cut.jsonl.gz:0"),
              Kind("gzip: records before a cut-off trailer (2/2)", "realnews", "kept",
                   "realnews/realnews/cut.jsonl.gz:1"),
              Kind("gzip: trailer cut off", "realnews", "dead_letter", "realnews/cut.jsonl.gz:2",
                   "unreadable stream from line 2"),
              Kind("gzip: zero-length member first", "realnews", "kept",
                   "realnews/realnews/empty_member.jsonl.gz:0")]
    _write(root, "realnews/bignum.jsonl", b'{"text": "x", "views": ' + b"1" * 5000 + b"}\n"
           + json.dumps({"text": english(57)}).encode() + b"\n")
    _write(root, "realnews/back\\slash.jsonl", json.dumps({"text": english(58)}).encode())
    _write(root, "realnews/names/a.jsonl", json.dumps({"text": english(59)}).encode())
    _write(root, "realnews/names/a.jsonl:0", english(61).encode())  # read as a story, same source
    kinds += [Kind("jsonl: integer of 5,000 digits", "realnews", "dead_letter", "realnews/bignum.jsonl:0",
                   "invalid_json: an integer of 5000 digits"),
              Kind("jsonl: valid record after it", "realnews", "kept", "realnews/realnews/bignum.jsonl:1"),
              Kind("names: a backslash (Beam's glob skipped it)", "realnews", "kept",
                   "realnews/realnews/back\\slash.jsonl:0"),
              Kind("names: a.jsonl next to a.jsonl:0 (1/2)", "realnews", "kept",
                   "realnews/realnews/names/a.jsonl:0"),
              Kind("names: a.jsonl:0 next to a.jsonl (2/2, one-file reader)", "realnews", "kept",
                   "realnews/realnews/names/a.jsonl%3A0")]
    _write(root, "realnews/é and space.jsonl", json.dumps({"text": english(48)}).encode())
    _write(root, os.fsdecode(b"realnews/byte\xff.jsonl"), json.dumps({"text": english(49)}).encode())
    kinds += [Kind("names: spaces and non-ASCII", "realnews", "kept", "realnews/realnews/é and space.jsonl:0"),
              Kind("names: a byte that is not UTF-8", "realnews", "kept", "realnews/realnews/byte%FF.jsonl:0")]
    return kinds


def _cc_stories(root: str) -> list[Kind]:
    stories = {"good.txt": english(50).encode(), "empty.txt": b"", "blank.txt": b" \n\t\n",
               "latin1.txt": "caf\xe9 story".encode("latin-1"), "garbage.txt": GARBAGE,
               "utf16.txt": english(51).encode("utf-16")}
    for name, data in stories.items():
        _write(root, f"cc_stories/{name}", data)
    with open(os.path.join(root, "cc_stories", "huge.txt"), "wb") as f:  # sparse: cheap to write
        f.write(english(52).encode())
        f.truncate(40 * 1024 * 1024)
    d = os.path.join(root, "cc_stories")
    os.mkfifo(os.path.join(d, "fifo.txt"))
    os.symlink(os.path.join(d, "nowhere"), os.path.join(d, "broken.txt"))
    os.symlink(os.path.join(d, "loop2.txt"), os.path.join(d, "loop1.txt"))
    os.symlink(os.path.join(d, "loop1.txt"), os.path.join(d, "loop2.txt"))
    os.mkdir(os.path.join(d, "dir.txt"))  # named by exact path in the config
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(os.path.join(d, "sock.txt"))  # the socket file stays after close
    sock.close()
    c = "cc_stories"
    return [Kind("one-file: valid story", c, "kept", f"{c}/{c}/good.txt"),
            Kind("one-file: empty file", c, "removed", f"{c}/{c}/empty.txt", "empty_document"),
            Kind("one-file: whitespace only", c, "removed", f"{c}/{c}/blank.txt", "empty_document"),
            Kind("one-file: latin-1", c, "dead_letter", f"{c}/latin1.txt:0", "invalid_utf8"),
            Kind("one-file: binary garbage", c, "dead_letter", f"{c}/garbage.txt:0", "invalid_utf8"),
            Kind("one-file: UTF-16 with BOM", c, "kept", f"{c}/{c}/utf16.txt"),
            Kind("one-file: 40 MiB document", c, "removed", f"{c}/{c}/huge.txt", "too_large"),
            Kind("file type: FIFO", c, "dead_letter", f"{c}/fifo.txt:0", "not_a_regular_file: a FIFO"),
            Kind("file type: socket", c, "dead_letter", f"{c}/sock.txt:0", "not_a_regular_file: a socket"),
            Kind("file type: directory", c, "dead_letter", f"{c}/dir.txt:0", "not_a_regular_file: a directory"),
            Kind("file type: broken symlink", c, "dead_letter", f"{c}/broken.txt:0",
                 "not_a_regular_file: broken symlink"),
            Kind("file type: symlink loop (1/2)", c, "dead_letter", f"{c}/loop1.txt:0",
                 "not_a_regular_file: symlink loop"),
            Kind("file type: symlink loop (2/2)", c, "dead_letter", f"{c}/loop2.txt:0",
                 "not_a_regular_file: symlink loop")]


def _warc_files(root: str) -> list[Kind]:
    src, f = "cc_2020_50", "cc/faulty.warc.gz"
    recs = [("request", "http://e/1", b"GET / HTTP/1.1\r\n\r\n", "application/http; msgtype=request", None),
            ("response", "http://e/1", _page(1), "text/html; charset=utf-8", "200"),
            ("response", "http://e/2", b"<html>gone</html>", "text/html", "404"),
            ("response", "http://e/3", b"%PDF-1.4 " + GARBAGE[:500], "application/pdf", "200"),
            ("response", "http://e/4", b"<div>" * 100_000 + b"deep", "text/html", "200"),
            ("response", "dns:e", b"not an http message", "text/dns", None),
            ("conversion", "http://e/5", english(60).encode(), "text/plain", None),
            ("response", "http://e/6", _page(6), "text/html", "200")]
    _write(root, f, _warc(recs)[:-200])
    items = "".join(f"<li>item {i}</li>" for i in range(20_000)).encode()
    _write(root, "cc/slow.warc.gz", _warc([
        ("response", "http://s/1", _page(40).replace(b"<div>Copyright", b"<ul>" + items + b"</ul><div>Copyright"),
         "text/html", "200"),
        ("response", "http://s/2", b"<html><body>" + b"<a " * 200_000, "text/html", "200")]))
    _write(root, "cc/garbage.warc.gz", GARBAGE)
    _write(root, "cc/empty.warc.gz", b"")
    kinds = [Kind("warc: HTML response", src, "kept", f"{src}/{f}#2"),
             Kind("warc: HTTP 404", src, "removed", f"{src}/{f}#3", "http_status_not_ok"),
             Kind("warc: PDF payload", src, "removed", f"{src}/{f}#4", "non_html_payload"),
             Kind("warc: markup 100,000 deep", src, "removed", f"{src}/{f}#5", "markup_too_deep"),
             Kind("warc: response that is not HTTP", src, "dead_letter", f"{f}#6", "non_http_response"),
             Kind("warc: WET conversion record", src, "kept", f"{src}/{f}#7"),
             Kind("warc: truncated last record", src, "dead_letter", f"{f}#8", "truncated_record"),
             Kind("warc: 20,000 short list items (jusText is quadratic)", src, "kept",
                  f"{src}/cc/slow.warc.gz#1"),
             Kind("warc: 200,000 unclosed tags", src, "removed", f"{src}/cc/slow.warc.gz#2",
                  "empty_after_extraction"),
             Kind("warc: garbage file", src, "dead_letter", "cc/garbage.warc.gz#0", "corrupt_warc from record 0"),
             Kind("warc: empty file", src, "none", "cc/empty.warc.gz")]
    # One file, damage after damage; every later record must still be read.
    pages = [("response", f"http://r/{i}", _page(10 + i), "text/html", "200") for i in range(1, 10)]
    pages[6] = ("response", "http://r/7", _page(17), "text/html; charset=utf-16", "200")  # the lie
    data = _warc(pages)
    offs = _member_offsets(data)  # 0 warcinfo, 1..9 pages
    members = [data[a:b] for a, b in zip(offs, offs[1:] + [len(data)])]
    mid = len(members[3]) // 2
    members[3] = members[3][:mid] + b"\x00" * 40 + members[3][mid + 40:]  # corrupt deflate data
    raw5 = gzip.decompress(members[5])
    n = int(re.search(rb"Content-Length: (\d+)", raw5).group(1))
    members[5] = gzip.compress(re.sub(rb"Content-Length: \d+", b"Content-Length: %d" % (n - 100), raw5, count=1))
    members[6] = gzip.compress(gzip.decompress(members[6]).replace(b"WARC-Type: response\r\n", b"", 1))
    members[8] = gzip.compress(gzip.decompress(members[8]).replace(
        b"WARC-Type: response\r\n", b"WARC-Type: response\r\nX-Huge: " + b"h" * 1_000_000 + b"\r\n", 1))
    members.insert(9, gzip.compress(b""))  # a zero-length member before the last page
    r = "cc/damaged.warc.gz"
    _write(root, r, b"".join(members))
    kinds += [Kind("warc: first record of a damaged file", src, "kept", f"{src}/{r}#1"),
              Kind("warc: record before a corrupt member", src, "kept", f"{src}/{r}#2"),
              Kind("warc: corrupt gzip member mid-file", src, "dead_letter", f"{r}#3", "corrupt_warc: bytes"),
              Kind("warc: record after a corrupt member", src, "kept", f"{src}/{r}#4"),
              Kind("warc: Content-Length too small", src, "dead_letter", f"{r}#5", "bad_content_length"),
              Kind("warc: record without WARC-Type", src, "dead_letter", f"{r}#6", "unknown_record_type"),
              Kind("warc: HTTP charset utf-16 on an ASCII page", src, "kept", f"{src}/{r}#7"),
              Kind("warc: 1 MB header", src, "kept", f"{src}/{r}#8"),
              Kind("warc: zero-length gzip member, then a record", src, "kept", f"{src}/{r}#9")]
    kinds += _warc_round_two(root, src)
    plain = _warc([("response", f"http://p/{i}", _page(30 + i), "text/html", "200") for i in range(1, 5)], gz=False)
    starts = [m.start() for m in re.finditer(rb"WARC/1\.[01]\r\n", plain)]
    seg = plain[starts[2]:starts[3]]
    n = int(re.search(rb"Content-Length: (\d+)", seg).group(1))
    seg = re.sub(rb"Content-Length: \d+", b"Content-Length: %d" % (n + 300), seg, count=1)
    p = "cc/plain.warc"
    _write(root, p, plain[:starts[2]] + seg + plain[starts[3]:])
    kinds += [Kind("warc (plain): record before a bad Content-Length", src, "kept", f"{src}/{p}#1"),
              Kind("warc (plain): Content-Length too large", src, "dead_letter", f"{p}#2", "bad_content_length"),
              Kind("warc (plain): record swallowed by it", src, "dead_letter", f"{p}#3", "corrupt_warc: bytes"),
              Kind("warc (plain): record after the damage", src, "kept", f"{src}/{p}#4")]
    return kinds


def _brotli_bomb(size: int) -> bytes:
    """``<p>`` + ``size`` x "a" + ``</p>``, brotli-compressed without holding it (500,000:1 and more;
    in one 16 KB step unbounded decoders return it all at once)."""
    import brotli

    c = brotli.Compressor(quality=5)
    out = [c.process(b"<p>")]
    block = b"a" * (1 << 20)
    out += [c.process(block) for _ in range(size >> 20)]
    return b"".join(out) + c.process(b"</p>") + c.finish()


def _encoded_response(w: WARCWriter, uri: str, body: bytes, headers: list[tuple[str, str]]):
    http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")] + headers, protocol="HTTP/1.1")
    return w.create_warc_record(uri, "response", payload=io.BytesIO(body), http_headers=http)


def _warc_round_two(root: str, src: str) -> list[Kind]:
    import brotli

    buf = io.BytesIO()
    w = WARCWriter(buf, gzip=True)
    w.write_record(w.create_warcinfo_record("encoded.warc.gz", {"software": "test"}))
    page = _page(70)
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(page[i:i + 500]), page[i:i + 500])
                       for i in range(0, len(page), 500)) + b"0\r\n\r\n"
    bad = gzip.compress(_page(73) * 20)
    for uri, body, headers in [
            ("http://b/1", brotli.compress(_page(71)), [("Content-Encoding", "br")]),
            ("http://b/2", gzip.compress(chunked), [("Content-Encoding", "gzip"), ("Transfer-Encoding", "chunked")]),
            ("http://b/3", _brotli_bomb(40 << 20), [("Content-Encoding", "br")]),  # > max_doc_bytes
            ("http://b/4", bad[:200] + b"\x00" * 100 + bad[300:], [("Content-Encoding", "gzip")]),
            ("http://b/5", _page(72), [("Content-Encoding", "gzip")])]:  # says gzip, is not
        w.write_record(_encoded_response(w, uri, body, headers))
    e = "cc/encoded.warc.gz"
    _write(root, e, buf.getvalue())
    kinds = [Kind("http: brotli body (Content-Encoding: br)", src, "kept", f"{src}/{e}#1"),
             Kind("http: gzip body, chunked transfer", src, "kept", f"{src}/{e}#2"),
             Kind("http: brotli bomb (40 MiB of page from 79 bytes)", src, "removed", f"{src}/{e}#3", "too_large"),
             Kind("http: gzip body corrupt part-way", src, "dead_letter", f"{e}#4", "record_failed: CorruptBody"),
             Kind("http: says gzip, is plain HTML", src, "kept", f"{src}/{e}#5")]
    plain = _warc([("response", f"http://w/{i}", _page(80 + i), "text/html", "200") for i in range(1, 4)], gz=False)
    _write(root, "cc/whole.warc.gz", gzip.compress(plain))  # what `gzip whole.warc` writes
    kinds += [Kind(f"warc: compressed whole as ONE gzip member ({i}/3)", src, "kept", f"{src}/cc/whole.warc.gz#{i}")
              for i in (1, 2, 3)]
    _write(root, "cc/x.warc.gz", _warc([("response", "http://x/1", _page(90), "text/html", "200")]))
    _write(root, "cc/x.warc.gz#1", english(91).encode())  # read as a story of the same source
    kinds += [Kind("names: x.warc.gz record 1 next to a file x.warc.gz#1 (1/2)", src, "kept",
                   f"{src}/cc/x.warc.gz#1"),
              Kind("names: the file x.warc.gz#1 (2/2, one-file reader)", src, "kept", f"{src}/cc/x.warc.gz%231")]
    return kinds


def write_fault_corpus(root: str) -> list[Kind]:
    """Write the corpus under ``root``; return every planted kind with its required outcome."""
    os.makedirs(os.path.join(root, "tasks"))
    kinds = _pile(root) + _realnews(root) + _cc_stories(root) + _warc_files(root)
    with open(os.path.join(root, "tasks", "t.jsonl"), "w") as f:
        f.write(json.dumps({"text": "an evaluation passage that appears nowhere in this corpus at all"}) + "\n")
    return kinds


FAULT_INPUTS = [
    {"reader": "pile", "paths": ["pile/*.jsonl.zst"]},
    {"reader": "realnews", "source": "realnews",
     "paths": ["realnews/*.jsonl", "realnews/*/*.jsonl", "realnews/*.jsonl.gz"]},
    {"reader": "cc_stories", "source": "cc_stories", "paths": ["cc_stories/*.txt", "cc_stories/dir.txt"]},
    {"reader": "warc", "source": "cc_2020_50", "paths": ["cc/*.warc.gz", "cc/*.warc"]},
    # file names that end like another file's document ids, in the same source (issue 25)
    {"reader": "cc_stories", "source": "realnews", "paths": ["realnews/names/*:0"]},
    {"reader": "cc_stories", "source": "cc_2020_50", "paths": ["cc/*#1"]},
]

"""Readers against hostile input (issue 15): every record ends kept, removed or dead-lettered,
nothing crashes downstream, nothing after a damaged part of a file is lost.  No Beam here."""
from __future__ import annotations

import gzip
import io
import json
import os
import re
import socket

import pytest
import zstandard

from curation.document import (DeadLetter, Document, Removal, record_problem, value_problem)
from curation.readers import plan_warc_ranges, read_cc_stories, read_pile, read_realnews, read_warc
from curation.readers.files import common_root, file_identity, file_problem, id_path
from curation.readers.warc_records import parsable_header, warc_entries
from test_readers_warc import PAGE, html_response, warc

ENGLISH = "The committee met on Tuesday to discuss the budget for the coming year."


def _zst(lines: list[bytes]) -> io.BytesIO:
    return io.BytesIO(zstandard.ZstdCompressor().compress(b"\n".join(lines) + b"\n"))


def _pile(text: str = ENGLISH, subset: str = "Books3", **meta) -> bytes:
    return json.dumps({"text": text, "meta": {"pile_set_name": subset, **meta}}).encode()


def _nested(depth: int) -> str:
    return '{"a": ' * depth + "1" + "}" * depth


# -- JSON Lines ------------------------------------------------------------------------------

def test_meta_nested_800_deep_is_a_dead_letter_not_a_pickling_crash():
    deep = ('{"text": "%s", "meta": {"pile_set_name": "Books3", "x": %s}}' % (ENGLISH, _nested(800))).encode()
    out = list(read_pile(_zst([deep, _pile()]), "/p/a.jsonl.zst"))
    assert isinstance(out[0], DeadLetter) and out[0].location == "/p/a.jsonl.zst:0"
    assert out[0].source == "books3"  # charged to its subset, though the name is 9 KB back
    assert out[0].error.startswith("invalid_meta: 'meta': nested deeper than 32 levels")
    assert isinstance(out[1], Document)
    assert record_problem(out[1]) is None


def test_lone_surrogates_outside_text_are_dead_letters():
    lines = [b'{"text": "ok", "meta": {"pile_set_name": "Books3", "t": "\\udc00"}}',
             b'{"title": "\\ud83d", "text": "story", "url_used": "http://x"}']
    (pile,) = read_pile(_zst(lines[:1]), "p.jsonl.zst")
    (news,) = read_realnews(io.BytesIO(lines[1]), "n.jsonl")
    assert pile.error.startswith("invalid_meta: 'meta': lone surrogate")
    assert news.error.startswith("invalid_meta: 'title': lone surrogate")


def test_utf8_bom_on_first_line_is_skipped():
    data = b"\xef\xbb\xbf" + _pile() + b"\n" + _pile(subset="Wikipedia (en)") + b"\n"
    out = list(read_pile(_zst([data.rstrip(b"\n")]), "bom.jsonl.zst"))
    assert [type(r) for r in out] == [Document, Document] and out[0].text == ENGLISH
    (news,) = read_realnews(io.BytesIO(b"\xef\xbb\xbf" + json.dumps({"text": ENGLISH}).encode()), "n.jsonl")
    assert isinstance(news, Document)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-32"])
def test_utf16_or_utf32_jsonl_is_one_dead_letter(encoding):
    text = (json.dumps({"text": ENGLISH}) + "\n") * 5
    out = list(read_realnews(io.BytesIO(text.encode(encoding)), "/n/wide.jsonl"))
    assert len(out) == 1 and out[0].location == "/n/wide.jsonl:0"
    assert out[0].error.startswith(f"unsupported_encoding: the file starts with a {encoding.upper()}")


@pytest.mark.parametrize("digits", [4301, 50_000])
def test_an_integer_longer_than_python_converts_costs_only_its_line(digits):
    """Python refuses int() of more than 4,300 digits with a ValueError: that line is a dead
    letter and the valid lines after it are still read (Pile and RealNews)."""
    big = b"-" + b"7" * digits
    news = [b'{"text": "x", "views": ' + big + b"}", json.dumps({"text": ENGLISH}).encode()]
    out = list(read_realnews(io.BytesIO(b"\n".join(news)), "/n/big.jsonl"))
    assert [type(r) for r in out] == [DeadLetter, Document] and out[1].id == "realnews/big.jsonl:1"
    assert out[0].location == "/n/big.jsonl:0"
    assert out[0].error == f"invalid_json: an integer of {digits} digits (Python converts at most 4300)"
    pile = [b'{"text": "x", "meta": {"n": ' + big + b', "pile_set_name": "Books3"}}',
            _pile(subset="Wikipedia (en)")]
    out = list(read_pile(_zst(pile), "/p/big.jsonl.zst"))
    assert [type(r) for r in out] == [DeadLetter, Document] and out[0].source == "books3"
    assert out[1].id == "wikipedia/big.jsonl.zst:1"
    (ok,) = read_realnews(io.BytesIO(b'{"text": "x", "n": ' + b"9" * 4300 + b"}"), "n.jsonl")
    assert isinstance(ok, Document) and ok.meta == {}  # at the limit: parsed (and not meta we keep)


def test_overlong_utf8_and_lone_surrogate_escape_are_dead_letters():
    lines = [b'{"text": "over\xc0\xaflong"}', b'{"text": "x\\ud800y"}', json.dumps({"text": ENGLISH}).encode()]
    out = list(read_realnews(io.BytesIO(b"\n".join(lines)), "n.jsonl"))
    assert [type(r) for r in out] == [DeadLetter, DeadLetter, Document]
    assert out[0].error.startswith("invalid_utf8") and out[1].error.startswith("invalid_unicode")


def test_readers_use_the_given_id_path():
    (doc,) = read_realnews(io.BytesIO(json.dumps({"text": ENGLISH}).encode()), "/r/a/x.jsonl",
                           id_path="a/x.jsonl")
    (story,) = read_cc_stories(io.BytesIO(b"story"), "/r/b/x.txt", id_path="b/x.txt")
    (page,) = read_warc(io.BytesIO(warc([html_response()])), "/r/c/x.warc.gz", "cc_2020_50",
                        id_path="c/x.warc.gz")
    assert (doc.id, story.id, page.id) == ("realnews/a/x.jsonl:0", "cc_stories/b/x.txt",
                                           "cc_2020_50/c/x.warc.gz#1")


@pytest.mark.parametrize("encoding", ["utf-16", "utf-32", "utf-8-sig"])
def test_cc_stories_with_a_byte_order_mark_are_decoded(encoding):
    (doc,) = read_cc_stories(io.BytesIO(ENGLISH.encode(encoding)), "s.txt")
    assert isinstance(doc, Document) and doc.text == ENGLISH


# -- record encodability ---------------------------------------------------------------------

def test_value_problem_bounds_depth_items_and_strings():
    assert value_problem(json.loads(_nested(31))) is None
    assert value_problem(json.loads(_nested(40))) == "nested deeper than 32 levels"
    assert value_problem({"x": "\ud800"}) == "lone surrogate in a string"
    assert value_problem({"x": object()}).startswith("unsupported value type")
    assert value_problem(list(range(200_000))).startswith("more than")
    assert record_problem(Removal(Document("i", "books3", "t"), "read", "too_large",
                                  {"d": json.loads(_nested(100))})).startswith("detail:")
    assert record_problem(Document("i", "books3", "a\udfffb")) == "text: not encodable as UTF-8"


# -- WARC: damage in the middle of a file ------------------------------------------------------

def _pages(n: int = 6, gz: bool = True) -> bytes:
    return warc([html_response(f"http://e.com/{i}", PAGE.replace("Monday", f"day {i}"))
                 for i in range(n)], gzip=gz)


def _offsets(data: bytes, name: str = "x.warc.gz") -> list[int]:
    return [e.offset for e in warc_entries(io.BytesIO(data), name)]


def _key(rec):
    doc = getattr(rec, "doc", rec)
    return type(rec).__name__, getattr(doc, "id", None) or rec.location


def _read(data: bytes, name: str = "/cc/x.warc.gz", extractor: str = "main_text") -> list:
    return list(read_warc(io.BytesIO(data), name, "cc_2020_50", extractor))


def _assert_ranges_agree(data: bytes, name: str = "/cc/x.warc.gz") -> None:
    whole = [_key(r) for r in _read(data, name)]
    for per in (1, 2, 3):
        got = []
        for r in plan_warc_ranges(io.BytesIO(data), name, per):
            f = io.BytesIO(data)
            f.seek(r.offset)
            got += [_key(x) for x in read_warc(f, name, "cc_2020_50", first_record=r.first_record,
                                               max_records=r.count)]
        assert got == whole, per


def test_corrupt_gzip_member_in_the_middle_costs_only_that_member():
    data = _pages()
    offs = _offsets(data)
    bad = bytearray(data)
    mid = (offs[3] + offs[4]) // 2
    bad[mid:mid + 40] = b"\x00" * 40
    out = _read(bytes(bad))
    assert [type(r).__name__ for r in out] == ["Document"] * 2 + ["DeadLetter"] + ["Document"] * 3
    dead = out[2]
    assert dead.location == "/cc/x.warc.gz#3"
    assert dead.error.startswith(f"corrupt_warc: bytes {offs[3]} to byte {offs[4]}")
    assert [d.url for d in out[3:]] == ["http://e.com/3", "http://e.com/4", "http://e.com/5"]
    _assert_ranges_agree(bytes(bad))


@pytest.mark.parametrize("damage", ["magic", "garbage_between", "zero_length_member"])
def test_member_level_damage_resynchronises(damage):
    data = _pages()
    offs = _offsets(data)
    if damage == "magic":
        data = data[:offs[2]] + b"X" * 10 + data[offs[2] + 10:]
    elif damage == "garbage_between":
        data = data[:offs[2]] + b"GARBAGE" * 300 + data[offs[2]:]
    else:
        data = data[:offs[2]] + gzip.compress(b"") + data[offs[2]:]
    out = _read(data)
    docs = [r for r in out if isinstance(r, Document)]
    dead = [r for r in out if isinstance(r, DeadLetter)]
    assert len(docs) == (5 if damage == "magic" else 6)
    assert len(dead) == (0 if damage == "zero_length_member" else 1)
    _assert_ranges_agree(data)


@pytest.mark.parametrize("gz", [True, False])
@pytest.mark.parametrize("delta", [-300, 300])
def test_content_length_that_lies_is_a_dead_letter_not_a_cut_document(gz, delta):
    name = "x.warc.gz" if gz else "x.warc"
    data = _pages(5, gz)
    offs = _offsets(data, name)
    member = data[offs[2]:offs[3]]
    raw = gzip.decompress(member) if gz else member
    n = int(re.search(rb"Content-Length: (\d+)", raw).group(1))
    raw = re.sub(rb"Content-Length: \d+", b"Content-Length: %d" % (n + delta), raw, count=1)
    data = data[:offs[2]] + (gzip.compress(raw) if gz else raw) + data[offs[3]:]
    out = _read(data, "/cc/" + name)
    assert isinstance(out[1], DeadLetter) and out[1].location == f"/cc/{name}#2"
    assert out[1].error.split(":")[0] in ("bad_content_length", "truncated_record")
    assert isinstance(out[-1], Document) and out[-1].url == "http://e.com/4"
    _assert_ranges_agree(data, "/cc/" + name)


def test_record_without_warc_type_is_a_dead_letter():
    data = _pages(3)
    offs = _offsets(data)
    raw = gzip.decompress(data[offs[2]:offs[3]]).replace(b"WARC-Type: response\r\n", b"", 1)
    out = _read(data[:offs[2]] + gzip.compress(raw) + data[offs[3]:])
    assert [type(r).__name__ for r in out] == ["Document", "DeadLetter", "Document"]
    assert out[1].error == "unknown_record_type: WARC-Type None"


def test_parsable_header_needs_type_and_length():
    good = b"WARC/1.0\r\nWARC-Type: response\r\nContent-Length: 12\r\n\r\n"
    assert parsable_header(good)
    assert not parsable_header(good.replace(b"WARC-Type: response\r\n", b""))
    assert not parsable_header(good.replace(b"12", b"twelve"))
    assert not parsable_header(b"GARBAGE" + good)


def test_charset_that_lies_falls_back_to_detection():
    http = ("response", "http://e.com/a", PAGE.encode("utf-8"), "text/html; charset=utf-16", "200")
    (doc,) = _read(warc([http]))
    assert isinstance(doc, Document) and "city council approved" in doc.text


# -- input files ------------------------------------------------------------------------------

def test_file_problem_names_every_kind_without_opening(tmp_path):
    (tmp_path / "reg").write_text("x")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "dir").mkdir()
    os.symlink(tmp_path / "nowhere", tmp_path / "broken")
    os.symlink(tmp_path / "loop2", tmp_path / "loop1")
    os.symlink(tmp_path / "loop1", tmp_path / "loop2")
    os.symlink(tmp_path / "reg", tmp_path / "link")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "sock"))
    try:
        got = {n: file_problem(str(tmp_path / n)) for n in
               ("reg", "link", "fifo", "dir", "broken", "loop1", "sock", "missing")}
    finally:
        sock.close()
    assert got["reg"] is None and got["link"] is None
    assert got["fifo"] == "not_a_regular_file: a FIFO (named pipe)"
    assert got["dir"] == "not_a_regular_file: a directory"
    assert got["broken"].startswith("not_a_regular_file: broken symlink")
    assert got["loop1"] == "not_a_regular_file: symlink loop"
    assert got["sock"] == "not_a_regular_file: a socket"
    assert got["missing"].startswith("unreadable_file")
    assert file_problem("/dev/null") == "not_a_regular_file: a character device"
    assert file_problem("s3://bucket/x.jsonl") is None  # object stores hold only objects


def test_unreadable_file_is_a_problem():
    """A file its reader may not open: checked as an unprivileged user (root reads anything;
    as root the check runs in a subprocess that drops to uid 65534 with setpriv)."""
    import shutil
    import subprocess
    import sys
    import tempfile

    folder = tempfile.mkdtemp()
    try:
        os.chmod(folder, 0o755)
        secret = os.path.join(folder, "secret.jsonl")
        with open(secret, "w") as f:
            f.write("{}")
        os.chmod(secret, 0)
        if os.geteuid() != 0:
            assert file_problem(secret) == "unreadable_file: permission denied"
            return
        if not shutil.which("setpriv"):
            pytest.skip("running as root without setpriv to drop privileges")
        repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        code = ("import sys; sys.path.insert(0, sys.argv[1]); from curation.readers.files import "
                "file_problem; print(file_problem(sys.argv[2]))")
        r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                            sys.executable, "-c", code, repo, secret], capture_output=True, text=True)
        if r.returncode != 0:
            pytest.skip(f"cannot run the check as uid 65534: {r.stderr.strip()[-200:]}")
        assert r.stdout.strip() == "unreadable_file: permission denied"
    finally:
        shutil.rmtree(folder)


def test_id_paths_are_relative_to_the_root_and_unique():
    assert id_path("/r/a/x.jsonl", "/r") == "a/x.jsonl"
    assert id_path("/r/b/x.jsonl", "/r/") == "b/x.jsonl"
    assert id_path("/elsewhere/x.jsonl", "/r") == "/elsewhere/x.jsonl"
    assert id_path("/rx/x.jsonl", "/r") == "/rx/x.jsonl"  # a sibling is not inside the root
    assert id_path("s3://b/corpus/cc/x.warc.gz", "s3://b/corpus") == "cc/x.warc.gz"
    assert id_path("gs://other/x.warc.gz", "s3://b/corpus") == "gs%3A//other/x.warc.gz"  # ":" escaped
    assert common_root(["/r/pile/*.zst", "/r/news/x.jsonl"]) == "/r"
    assert common_root(["s3://b/c/pile/*.zst", "s3://b/c/news/*.jsonl"]) == "s3://b/c"


def test_file_identity_sees_through_links(tmp_path):
    (tmp_path / "a").write_text("x")
    os.symlink(tmp_path / "a", tmp_path / "s")
    os.link(tmp_path / "a", tmp_path / "h")
    ids = {file_identity(str(tmp_path / n)) for n in ("a", "s", "h")}
    (tmp_path / "sub").mkdir()
    ids.add(file_identity(str(tmp_path / "sub" / ".." / "a")))
    assert len(ids) == 1


@pytest.mark.parametrize("seed", range(3))
def test_random_damage_never_crashes_and_ranges_always_agree(seed):
    """Seeded random byte damage (1-3 spots, gzip and plain): the whole-file read never raises
    and every split into ranges reads exactly the same entries."""
    import random

    rnd = random.Random(seed)
    for _ in range(10):
        gz = rnd.random() < 0.7
        name = "/cc/x.warc.gz" if gz else "/cc/x.warc"
        data = bytearray(_pages(6, gz))
        for _ in range(rnd.randint(1, 3)):
            pos, n = rnd.randrange(len(data)), rnd.randint(1, 60)
            data[pos:pos + n] = bytes(rnd.getrandbits(8) for _ in range(n))
        _assert_ranges_agree(bytes(data), name)


def test_markup_scans_are_linear_on_unclosed_tags():
    """``<a <a <a ...`` without a ``>``: the old tag pattern rescanned to the end from every
    ``<`` (24 KB took 28 s); one pass now.  A hang guard, not a timing assertion."""
    import signal

    from curation.readers.warc import markup_too_deep, too_many_blocks

    def expired(*_):
        raise TimeoutError("markup scan did not finish in 60 s")

    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(60)
    try:
        assert not markup_too_deep(b"<a " * 200_000)
        assert not too_many_blocks(b"<p " * 200_000, limit=100_000)  # above the "<" count shortcut
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def test_thousands_of_short_paragraphs_fall_back_to_a_linear_extractor():
    import signal

    def expired(*_):
        raise TimeoutError("extraction did not finish in 60 s")

    items = "".join(f"<li>item {i}</li>" for i in range(20_000))
    page = PAGE.replace("<div class='footer'>", f"<ul>{items}</ul><div class='footer'>")
    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(60)
    try:
        (doc,) = _read(warc([html_response(page=page)]), extractor="justext")
        (linear,) = _read(warc([html_response(page=page)]))  # main_text is linear: no fallback
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert isinstance(doc, Document) and "city council approved" in doc.text
    assert doc.meta["extractor"].startswith("resiliparse (more than 2000 blocks")
    assert "city council approved" in linear.text and "extractor" not in linear.meta
    (small,) = _read(warc([html_response()]), extractor="justext")
    assert "extractor" not in small.meta  # ordinary pages keep jusText


def test_a_run_of_gzip_magic_bytes_is_resynchronised_in_bounded_time():
    """300,000 fake member starts (1f 8b 08 repeated) between two records: every candidate is
    rejected after a few KB of work, and the records after the run are still read."""
    import signal

    def expired(*_):
        raise TimeoutError("resynchronisation did not finish in 120 s")

    data = _pages(4)
    offs = _offsets(data)
    data = data[:offs[2]] + b"\x1f\x8b\x08" * 300_000 + data[offs[2]:]
    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(120)
    try:
        out = _read(data)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert [type(r).__name__ for r in out] == ["Document", "DeadLetter", "Document", "Document", "Document"]

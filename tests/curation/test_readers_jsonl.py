"""Pile, RealNews and CC-Stories readers on tiny in-memory fixtures, bad input included."""
from __future__ import annotations

import io
import json

import pytest
import zstandard

from curation.document import DeadLetter, Document, Removal
from curation.readers import read_cc_stories, read_pile, read_realnews, reader_for

ENGLISH = "The committee met on Tuesday to discuss the budget for the coming year."


def pile_line(text: str, subset: str) -> bytes:
    return json.dumps({"text": text, "meta": {"pile_set_name": subset}}).encode() + b"\n"


def zst(data: bytes) -> io.BytesIO:
    return io.BytesIO(zstandard.ZstdCompressor().compress(data))


def test_pile_ids_sources_and_unused_subset():
    data = pile_line(ENGLISH, "Books3") + pile_line("x = 1", "Github") + pile_line("law", "FreeLaw")
    out = list(read_pile(zst(data), "/data/pile/00.jsonl.zst"))
    assert [type(r) for r in out] == [Document, Document, Removal]
    assert out[0].id == "books3/00.jsonl.zst:0" and out[0].source == "books3" and out[0].text == ENGLISH
    assert out[0].meta == {"pile_set_name": "Books3"}
    assert out[1].id == "github/00.jsonl.zst:1"
    skipped = out[2]
    assert (skipped.stage, skipped.reason) == ("read", "pile_subset_not_in_blend")
    assert skipped.doc.id == "pile_other/00.jsonl.zst:2" and skipped.doc.text == ""
    assert skipped.doc.meta == {"pile_set_name": "FreeLaw", "chars": 3}


def test_pile_custom_mapping_and_blank_lines_not_counted():
    data = pile_line("a", "Books3") + b"\n   \n" + pile_line("b", "Books3")
    out = list(read_pile(zst(data), "f.jsonl.zst", {"Books3": "my_books"}))
    assert [r.id for r in out] == ["my_books/f.jsonl.zst:0", "my_books/f.jsonl.zst:3"]


def test_pile_bad_lines_become_dead_letters_and_reading_continues():
    data = (
        pile_line("ok", "Wikipedia (en)")
        + b'{"text": "broken json", "meta": {"pile_set_name": "ArXiv"}\n'
        + b'{"text": "caf\xe9", "meta": {"pile_set_name": "ArXiv"}}\n'  # latin-1 byte
        + b'{"meta": {"pile_set_name": "ArXiv"}}\n'
        + b'{"text": "x", "meta": {}}\n'
        + b'["not", "an", "object"]\n'
        + b'{"text": "\\ud800 lone", "meta": {"pile_set_name": "ArXiv"}}\n'
        + pile_line("last", "Wikipedia (en)")
    )
    out = list(read_pile(zst(data), "p.jsonl.zst"))
    assert len(out) == 8  # every non-blank line is exactly one record
    assert isinstance(out[0], Document) and isinstance(out[-1], Document)
    dead = out[1:7]
    assert all(isinstance(d, DeadLetter) for d in dead)
    assert [d.error.split(":")[0] for d in dead] == [
        "invalid_json", "invalid_utf8", "missing_text", "missing_meta", "invalid_json", "invalid_unicode"]
    assert [d.location for d in dead] == [f"p.jsonl.zst:{i}" for i in range(1, 7)]
    assert dead[0].source == "arxiv"  # subset sniffed from the raw line
    assert dead[4].source == "pile_other"
    assert "caf\\xe9" in dead[1].raw  # raw excerpt is printable, not silently replaced


def test_pile_truncated_zst_yields_records_then_one_dead_letter():
    data = b"".join(pile_line(f"document number {i} " * 20, "Books3") for i in range(3000))
    compressed = zstandard.ZstdCompressor().compress(data)
    out = list(read_pile(io.BytesIO(compressed[: len(compressed) // 2]), "t.jsonl.zst"))
    docs, dead = out[:-1], out[-1]
    assert docs and all(isinstance(d, Document) for d in docs)
    assert [d.id for d in docs] == [f"books3/t.jsonl.zst:{i}" for i in range(len(docs))]
    assert isinstance(dead, DeadLetter) and "truncated" in dead.error
    assert dead.location == f"t.jsonl.zst:{len(docs)}"


def test_pile_garbage_file_is_one_dead_letter():
    out = list(read_pile(io.BytesIO(bytes(range(256)) * 100), "g.jsonl.zst"))
    assert len(out) == 1 and isinstance(out[0], DeadLetter)
    assert out[0].location == "g.jsonl.zst:0"


def test_pile_multi_frame_zst():
    c = zstandard.ZstdCompressor()
    data = c.compress(pile_line("one", "Books3")) + c.compress(pile_line("two", "Books3"))
    out = list(read_pile(io.BytesIO(data), "m.jsonl.zst"))
    assert [d.text for d in out] == ["one", "two"]


def test_pile_50mb_line_removed_as_too_large_without_buffering():
    big = pile_line("a" * (50 * 1024 * 1024), "Books3")
    data = pile_line("small", "Books3") + big + pile_line("after", "Books3")
    out = list(read_pile(zst(data), "big.jsonl.zst"))
    assert [type(r) for r in out] == [Document, Removal, Document]
    assert out[1].reason == "too_large" and out[1].doc.source == "books3"  # sniffed from the tail
    assert out[1].doc.id == "books3/big.jsonl.zst:1" and out[1].detail["bytes"] == len(big) - 1
    assert out[2].id == "books3/big.jsonl.zst:2"


def test_pile_max_doc_bytes_is_configurable():
    out = list(read_pile(zst(pile_line("x" * 100, "Books3")), "s.jsonl.zst", max_doc_bytes=50))
    assert isinstance(out[0], Removal) and out[0].reason == "too_large"


def test_plain_jsonl_accepted():
    out = list(read_pile(io.BytesIO(pile_line("plain", "ArXiv")), "plain.jsonl"))
    assert out[0].id == "arxiv/plain.jsonl:0"


def test_realnews_fields():
    rec = {"title": "Storm Hits Coast", "text": "Winds reached 100 mph.", "summary": None,
           "authors": ["A. Writer"], "publish_date": "2019-01-02", "status": "success",
           "url_used": "https://news.example/storm", "domain": "news.example",
           "warc_date": "20190103", "split": "train"}
    data = json.dumps(rec).encode() + b"\n" + b"{bad\n" + json.dumps({"text": "no title"}).encode()
    out = list(read_realnews(io.BytesIO(data), "/x/realnews_dedup0.7.jsonl"))
    doc = out[0]
    assert doc.id == "realnews/realnews_dedup0.7.jsonl:0" and doc.source == "realnews"
    assert doc.text == "Storm Hits Coast\n\nWinds reached 100 mph."
    assert doc.url == "https://news.example/storm"
    assert doc.meta == {"domain": "news.example", "publish_date": "2019-01-02",
                        "authors": ["A. Writer"], "split": "train", "warc_date": "20190103"}
    assert isinstance(out[1], DeadLetter) and out[1].source == "realnews"
    assert out[2].text == "no title" and out[2].id == "realnews/realnews_dedup0.7.jsonl:2"


def test_cc_stories():
    story = "Once upon a time, there was a story.\n\nThe end."
    (doc,) = read_cc_stories(io.BytesIO(story.encode()), "/s/story_0001.txt")
    assert doc.id == "cc_stories/story_0001.txt" and doc.text == story
    (dead,) = read_cc_stories(io.BytesIO(b"bad \xff\xfe bytes"), "b.txt")
    assert isinstance(dead, DeadLetter) and dead.error.startswith("invalid_utf8")
    (empty,) = read_cc_stories(io.BytesIO(b"  \n"), "e.txt")
    assert isinstance(empty, Removal) and empty.reason == "empty_document"
    (big,) = read_cc_stories(io.BytesIO(b"x" * 1000), "big.txt", max_doc_bytes=100)
    assert big.reason == "too_large" and big.detail["bytes"] == 1000


def test_reader_for():
    assert reader_for("pile") is read_pile
    with pytest.raises(ValueError, match="setting 'reader'"):
        reader_for("parquet")


@pytest.mark.parametrize("n", [2, 3])
def test_a_slice_parses_only_its_own_records(n):
    """``owned``: the other records come out as None, numbered as without it (blank lines not
    counted, a bad line is a record of its own)."""
    data = (pile_line("a", "Books3") + b"\n" + b"{not json\n" + pile_line("b", "Github")
            + pile_line("c", "FreeLaw") + b"  \n" + pile_line("d", "Books3"))
    whole = list(read_pile(zst(data), "f.jsonl.zst"))
    for k in range(n):
        part = list(read_pile(zst(data), "f.jsonl.zst", owned=lambda i, k=k: i % n == k))
        assert len(part) == len(whole)
        assert [r for i, r in enumerate(part) if i % n != k] == [None] * sum(i % n != k for i in range(len(whole)))
        assert [r for i, r in enumerate(part) if i % n == k] == [r for i, r in enumerate(whole) if i % n == k]
    news = b"".join(json.dumps({"title": t, "text": ENGLISH}).encode() + b"\n" for t in "xyz")
    assert [r and r.id for r in read_realnews(io.BytesIO(news), "n.jsonl", owned=lambda i: i == 1)] == [
        None, "realnews/n.jsonl:1", None]

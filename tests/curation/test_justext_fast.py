"""``infra.compat.justext.paragraphs`` is ``justext.justext`` with each paragraph's text computed
once: the same paragraphs, texts and classes, on the sample's pages, real pages and hostile
markup; and plain jusText wherever its code is not the code that was verified."""
from __future__ import annotations

import glob
import gzip
from pathlib import Path

import justext
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infra.compat import justext as fast
from curation.readers.warc import _english_stoplist, decode_html, extract_text

REAL_PAGES = Path(__file__).parent / "fixtures" / "real_pages"
WHITESPACE = [" ", "  ", "\t", "\n", "\r", "\r\n", " \n ", "\x0b", "\x0c", "\x1c", "\x85", "\xa0",
              "\u2000", "\u2028", "\u2029", "\u3000", "\n\n\n", " \r "]


def _same(html: str) -> None:
    stop = _english_stoplist()
    try:
        want = justext.justext(html, stop)
    except Exception as e:  # noqa: BLE001 - e.g. lxml refuses control characters: so must the fast path
        with pytest.raises(type(e)):
            fast.paragraphs(html, stop)
        return
    got = fast.paragraphs(html, stop)
    assert [(p.text, p.class_type, p.cf_class, p.heading, p.dom_path, p.words_count,
             p.chars_count_in_links, p.tags_count) for p in got] == \
           [(p.text, p.class_type, p.cf_class, p.heading, p.dom_path, p.words_count,
             p.chars_count_in_links, p.tags_count) for p in want]


def test_the_installed_justext_is_the_verified_one():
    assert fast.supported()  # else the fast path is silently off: re-verify for the new version


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(WHITESPACE + ["a", "bc", "é", "-", "\u200b"]), max_size=30))
def test_whitespace_normalization_equals_justexts(pieces):
    from justext.utils import normalize_whitespace

    text = "".join(pieces)
    assert fast.normalize_whitespace(text) == normalize_whitespace(text)


def test_equals_justext_on_the_real_pages():
    pages = sorted(REAL_PAGES.glob("*.html.gz"))
    assert pages
    for page in pages:
        _same(decode_html(gzip.decompress(page.read_bytes()), "text/html"))


def test_equals_justext_on_the_sample_pages(tmp_path):
    from warcio.archiveiterator import ArchiveIterator

    from mtnlg.sample_data import write_sample_corpus

    write_sample_corpus(str(tmp_path))
    n = 0
    for path in sorted(glob.glob(f"{tmp_path}/common_crawl/*/*.warc.gz")):
        with open(path, "rb") as f:
            for record in ArchiveIterator(f):
                if record.rec_type != "response" or record.http_headers is None:
                    continue
                ctype = record.http_headers.get_header("Content-Type") or ""
                if "html" not in ctype:
                    continue
                _same(decode_html(record.content_stream().read(), ctype))
                n += 1
    assert n > 100


TAGS = ["<p>", "</p>", "<div>", "</div>", "<br>", "<br><br>", "<a href='x'>", "</a>", "<h2>", "</h2>",
        "<select><option>o</option></select>", "<td>", "<li>", "&copy; 2020", "©", "<pre>  x\n y</pre>",
        "<script>var a = '<p>';</script>", "<!-- c -->", "<span>", "</span>", "<table><tr><td>"]
WORDS = ["the", "of", "and", "The", "word", "sentence", "with", "a", "very", "long", "text", "to", "that"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(TAGS), st.sampled_from(WHITESPACE),
                          st.lists(st.sampled_from(WORDS), min_size=1, max_size=40).map(" ".join)),
                max_size=60))
def test_equals_justext_on_generated_markup(pieces):
    _same("<html><head><title>t</title></head><body>" + "".join(pieces) + "</body></html>")


def test_extract_text_equals_plain_justext_output():
    stop = _english_stoplist()
    for page in sorted(REAL_PAGES.glob("*.html.gz")):
        html = decode_html(gzip.decompress(page.read_bytes()), "text/html")
        want = "\n\n".join(p.text for p in justext.justext(html, stop) if not p.is_boilerplate)
        assert extract_text(html, "justext") == want


def test_changed_justext_code_turns_the_fast_path_off(monkeypatch, caplog):
    fast.supported.cache_clear()
    monkeypatch.setitem(fast._SOURCES, "justext.paragraph.Paragraph", "0" * 64)
    try:
        assert not fast.supported()
        assert "plain justext.justext is used" in caplog.text
        html = "<html><body><p>" + " ".join(WORDS * 10) + "</p></body></html>"
        got = fast.paragraphs(html, _english_stoplist())
        assert type(got[0]) is justext.paragraph.Paragraph  # jusText's own objects
    finally:
        fast.supported.cache_clear()


@pytest.mark.parametrize("version", ["2.2.0", "3.1.0", "4.0"])
def test_other_justext_versions_turn_the_fast_path_off(monkeypatch, version):
    from importlib import metadata

    real = metadata.version
    monkeypatch.setattr(metadata, "version", lambda name: version if name == "jusText" else real(name))
    fast.supported.cache_clear()
    try:
        assert not fast.supported()
    finally:
        fast.supported.cache_clear()

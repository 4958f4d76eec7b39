"""The early language decision (``LanguageConfig.early_score``): a web page whose text surely
holds no allowed language is removed before its main text is extracted, and it never removes
a page that the full decision (main text, ftfy, language from the composition) keeps."""
from __future__ import annotations

import glob
import gzip
import io
import json
import os
import re
from pathlib import Path

import pytest

from curation.document import Document, Removal
from curation.extraction import extract_main_text
from curation.extraction.page import page_text, parse_html
from curation.language import LanguageConfig, keep_language, make_identifier
from curation.normalize import normalize_text
from curation.readers import decode_html, read_warc

FIXTURES = Path(__file__).parent / "fixtures" / "early_language"
PAGES = json.loads((FIXTURES / "pages.json").read_text(encoding="utf-8"))["pages"]
REPO = Path(__file__).resolve().parents[2]
EVAL_DIRS = [os.environ.get("EXTRACT_EVAL_DIR") or "", str(REPO.parent / "shared" / "data" / "extract_eval"),
             str(REPO.parent.parent / "shared" / "data" / "extract_eval")]
EVAL_DIR = next((d for d in EVAL_DIRS if d and os.path.isdir(os.path.join(d, "html"))), None)
CFG = LanguageConfig(cached_blocks=0)


@pytest.fixture(scope="module")
def identifier():
    return make_identifier(CFG)


def full_keeps(html: str, identifier) -> bool:
    """The full decision as the job makes it on a page's text (``curation.readers.warc``, then
    the normalize and language stages)."""
    text = extract_main_text(html).strip()
    if not text:
        return False
    c = identifier.identify(normalize_text(text))
    return keep_language(c.lang, c.score, CFG).keep


def early_removes(html: str, identifier) -> bool:
    return identifier.early(page_text(parse_html(html), CFG.early_chars), CFG).remove


def fixture_html(name: str) -> str:
    return decode_html(gzip.decompress((FIXTURES / name).read_bytes()))


@pytest.mark.parametrize("name", sorted(PAGES))
def test_the_pages_nearest_the_threshold_are_decided_as_the_full_decision_would(name, identifier):
    html = fixture_html(name)
    keeps = full_keeps(html, identifier)
    assert not (keeps and early_removes(html, identifier)), PAGES[name]["url"]
    if not keeps:  # the two German pages: removed early, as the full decision removes them
        assert early_removes(html, identifier), PAGES[name]["url"]


@pytest.mark.skipif(EVAL_DIR is None, reason="../shared/data/extract_eval is not next to this checkout")
def test_never_removes_a_page_the_full_decision_keeps_on_the_evaluation_set(identifier):
    """All 990 pages of trafilatura's evaluation set (Apache-2.0, next to the checkout)."""
    lost, removed = [], 0
    for path in sorted(glob.glob(os.path.join(EVAL_DIR, "html", "*.html.gz"))):
        with gzip.open(path) as f:
            html = decode_html(f.read())
        if early_removes(html, identifier):
            removed += 1
            if full_keeps(html, identifier):
                lost.append(os.path.basename(path))
    assert lost == []
    assert removed > 400  # it does remove most of the set's non-English pages


def _sample_warcs(tmp_path_factory) -> list[str]:
    from mtnlg.sample_data import write_sample_corpus

    out = str(tmp_path_factory.mktemp("sample"))
    write_sample_corpus(out, seed=0)
    return sorted(glob.glob(os.path.join(out, "common_crawl", "*", "*.warc.gz")))


def test_on_the_sample_corpus_every_record_is_decided_as_without_it(tmp_path_factory, identifier):
    """Every record of the bundled sample's WARC files: the same outcome with and without the
    early decision, except pages it removes, which the full decision removes too."""
    for path in _sample_warcs(tmp_path_factory):
        data = Path(path).read_bytes()
        plain = list(read_warc(io.BytesIO(data), path, "cc"))
        early = list(read_warc(io.BytesIO(data), path, "cc", language=CFG, identifier=identifier))
        assert len(plain) == len(early)
        for a, b in zip(plain, early):
            if isinstance(b, Removal) and b.stage == "language":
                assert b.detail["early"] and isinstance(a, Document)
                assert not keep_language(*identifier.predict(normalize_text(a.text)), CFG).keep
            else:
                assert a == b


def _warc(pages: list[tuple[str, bytes]]) -> bytes:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    buf = io.BytesIO()
    w = WARCWriter(buf, gzip=True)
    for url, body in pages:
        headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
        w.write_record(w.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=headers))
    return buf.getvalue()


def test_a_removed_page_carries_the_language_stage_reason_and_the_early_score(identifier):
    german = gzip.decompress((FIXTURES / "1da9dfdd896eca2f.html.gz").read_bytes())
    english = gzip.decompress((FIXTURES / "11959ec1611f0d35.html.gz").read_bytes())
    data = _warc([("https://de.example/a", german), ("https://en.example/b", english)])
    out = list(read_warc(io.BytesIO(data), "x.warc.gz", "cc", language=CFG, identifier=identifier))
    removal, doc = out
    assert isinstance(removal, Removal) and (removal.stage, removal.reason) == ("language", "wrong_language")
    assert removal.detail["early"] is True and 0 <= removal.detail["score"] < CFG.early_score
    assert removal.detail["early_score"] == CFG.early_score
    assert removal.doc.id == "cc/x.warc.gz#0" and removal.doc.url == "https://de.example/a"
    assert removal.doc.lang == "de" and removal.doc.text == "" and removal.doc.lang_score is None
    plain = list(read_warc(io.BytesIO(data), "x.warc.gz", "cc"))
    assert isinstance(doc, Document) and doc == plain[1]  # let through: exactly today's document
    off = list(read_warc(io.BytesIO(data), "x.warc.gz", "cc", language=LanguageConfig(early_score=0)))
    assert off == plain  # 0 turns it off


@pytest.mark.parametrize("name", sorted(PAGES))
def test_main_text_is_the_same_on_the_tree_the_decision_read(name):
    """``page_text`` removes scripts and styles from the tree; ``main_text`` never read them
    (JSON-LD scripts stay: ``structured`` reads them)."""
    html = fixture_html(name)
    tree = parse_html(html)
    page_text(tree, CFG.early_chars)
    assert extract_main_text(tree) == extract_main_text(html)


def test_page_text_leaves_out_scripts_and_styles_and_keeps_json_ld():
    tree = parse_html('<html><head><script type="application/ld+json">{"a": 1}</script></head><body>'
                      '<p>Hello <b>world</b></p><script>var x = 1;</script><style>p {}</style>'
                      '<noscript>shown without scripts</noscript></body></html>')
    assert page_text(tree, 100).split("\n") == ["Hello ", "world", "shown without scripts"]
    assert [s.text() for s in tree.css("script")] == ['{"a": 1}']
    assert page_text(parse_html("<html><head></head></html>"), 100) == ""
    assert len(page_text(parse_html("<p>" + "word " * 1000 + "</p>"), 50)) == 50


@pytest.mark.parametrize("field,value,message", [
    ("early_score", 1.0, "early_score: must be in [0, 1)"),
    ("early_score", -0.1, "early_score"),
    ("early_chars", 0, "early_chars: must be >= 1"),
    ("early_block_chars", 0, "early_block_chars: must be >= 1"),
])
def test_settings_are_checked_with_their_name(field, value, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        LanguageConfig(**{field: value})


def test_the_depth_scan_comes_after_the_decision_only_where_the_parse_is_bounded(identifier):
    """Pages of at most ``MAX_UNSCANNED_TAGS`` "<" are parsed for the early decision before
    their depth is scanned: a surely foreign one is removed by language whatever its depth; a
    page it lets through, and every page with more tags, meets the scan first as before."""
    from curation.extraction.markup import MAX_UNSCANNED_TAGS

    german = " ".join(["Der Fluss fließt durch die kleine Stadt und die Menschen lesen Bücher."] * 30)
    english = " ".join(["The river runs through the small town and people read books there."] * 30)
    few, many = 600, MAX_UNSCANNED_TAGS + 100
    pages = [("https://a/1", f"<html><body>{'<div>' * few}<p>{german}</p></body></html>".encode()),
             ("https://a/2", f"<html><body>{'<div>' * few}<p>{english}</p></body></html>".encode()),
             ("https://a/3", f"<html><body>{'<div>' * many}<p>{german}</p></body></html>".encode())]
    out = list(read_warc(io.BytesIO(_warc(pages)), "x.warc.gz", "cc", language=CFG, identifier=identifier))
    assert [(r.stage, r.reason) for r in out] == [("language", "wrong_language"), ("read", "markup_too_deep"),
                                                  ("read", "markup_too_deep")]
    plain = list(read_warc(io.BytesIO(_warc(pages)), "x.warc.gz", "cc"))
    assert {(r.stage, r.reason) for r in plain} == {("read", "markup_too_deep")}

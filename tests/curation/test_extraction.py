"""curation.extraction: the main_text extractor on real pages and on small pages of known
shape, and the markup guards."""
from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from curation.extraction import (MainTextParams, extract_main_text, markup_depth, markup_too_deep,
                                 parsed_depth, too_many_blocks)
from curation.readers import decode_html

FIXTURES = Path(__file__).parent / "fixtures" / "real_pages"
PAGES = json.loads((FIXTURES / "pages.json").read_text(encoding="utf-8"))["pages"]
PROSE = ("The committee met on Tuesday to discuss the new budget for the coming year, and after a "
         "long debate it agreed to spend more on schools, roads and the public library. ")


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def page_html(name: str) -> str:
    return decode_html(gzip.decompress((FIXTURES / name).read_bytes()))


@pytest.mark.parametrize("name", sorted(PAGES))
def test_real_pages_keep_the_article_and_drop_the_furniture(name):
    """Every "with" snippet in the output, every "without" snippet out (upstream's scoring)."""
    item = PAGES[name]
    out = norm(extract_main_text(page_html(name)))
    assert [w for w in item["with"] if norm(w) not in out] == [], item["url"]
    assert [w for w in item["without"] if norm(w) in out] == [], item["url"]


def test_real_pages_markup_depth_never_exceeds_the_browser_tree():
    for name in PAGES:
        html = page_html(name)
        assert markup_depth(html) <= parsed_depth(html) < 60


def page(body: str, body_attrs: str = "") -> str:
    return f"<html><head><title>t</title></head><body {body_attrs}>{body}</body></html>"


NAV = "<nav><ul>" + "".join(f"<li><a href='/{i}'>Section {i}</a></li>" for i in range(12)) + "</ul></nav>"


def test_comments_sharing_and_related_links_are_dropped():
    html = page(NAV + "<article><h1>Budget</h1><div class='entry-content'>"
                + "".join(f"<p>{PROSE}{i}</p>" for i in range(4))
                + "<div class='share-buttons'><a href='#'>Share on X</a> <a href='#'>Email</a></div>"
                + "</div><section id='comments'><h3>3 Comments</h3><p>" + PROSE + "says a reader</p>"
                + "</section></article><div><h3>More from this author</h3><ul>"
                + "".join(f"<li><a href='/a{i}'>Another headline number {i}</a></li>" for i in range(6))
                + "</ul></div><footer>Copyright 2020 Example Media, all rights reserved.</footer>")
    out = extract_main_text(html)
    assert all(f"{PROSE}{i}".strip() in out for i in range(4))
    for gone in ("says a reader", "Share on X", "More from this author", "Another headline",
                 "Copyright", "Section 3"):
        assert gone not in out


def test_a_misleading_class_name_does_not_empty_the_page():
    """Class names are hints: a page wrapped in a form, or with "sidebar" and "comments" in the
    body's or a wrapper's classes, keeps its article."""
    article = "".join(f"<p>{PROSE}{i}</p>" for i in range(3))
    for html in (page(f"<form id='aspnetForm'>{NAV}<div>{article}</div></form>"),
                 page(f"{NAV}<div class='content-with-sidebar comments-open'>{article}</div>",
                      "class='single has-sidebar comments-open'"),
                 page(f"{NAV}<div class='modal newsletter'>{article}</div>")):
        assert all(f"{PROSE}{i}".strip() in extract_main_text(html) for i in range(3)), html[:120]


def test_a_lead_outside_the_body_container_is_kept_but_not_the_page_around_it():
    lead = "A short standfirst that sums up the article in one sentence of plain prose for readers."
    html = page(NAV + f"<article><header><h1>Title</h1><p class='lead'>{lead}</p></header>"
                "<div class='article-body'>" + "".join(f"<p>{PROSE}{i}</p>" for i in range(4))
                + "</div></article>")
    out = extract_main_text(html)
    assert lead in out and PROSE.strip() in out and "Section" not in out


def test_hidden_elements_captions_and_dates_are_not_text():
    html = page("<div class='post-body'>" + f"<p>{PROSE}</p>"
                "<p hidden>hidden text</p><div style='display: none'>invisible text</div>"
                "<div aria-hidden='true'>aria text</div>"
                "<figure><img src=x><figcaption>Photo: Agency</figcaption></figure>"
                "<p><time datetime='2020-01-01'>1 January 2020</time></p>"
                f"<p>{PROSE}again</p></div>")
    out = extract_main_text(html)
    assert PROSE.strip() in out and "again" in out
    for gone in ("hidden text", "invisible text", "aria text", "Photo: Agency", "1 January 2020"):
        assert gone not in out


def test_a_long_list_of_worthless_items_is_dropped_but_not_a_short_one():
    """Thousands of one-word items next to the article (a tag cloud, an archive index, a table
    of dates) are not text; a short list inside the article is."""
    article = "".join(f"<p>{PROSE}{i}</p>" for i in range(3))
    short = "<ul><li>Flour</li><li>Sugar</li><li>Two eggs</li></ul>"
    huge = "<ul>" + "".join(f"<li>item {i}</li>" for i in range(5000)) + "</ul>"
    days = "<table>" + "".join(f"<tr><td>{d}</td></tr>" for d in range(1, 1001)) + "</table>"
    out = extract_main_text(page(article + short + huge + days))
    assert all(f"{PROSE}{i}".strip() in out for i in range(3))
    assert "Flour\n\nSugar" in out
    assert "item 17" not in out and "\n\n364" not in out


def test_paragraphs_and_line_breaks():
    html = page(f"<div class='entry-content'><p>{PROSE}</p><p>First line<br>second line of the "
                f"same paragraph, long enough to count as prose in any language</p><p>{PROSE}</p></div>")
    out = extract_main_text(html)
    assert out.split("\n\n")[0] == PROSE.strip()
    assert "First line\nsecond line" in out


@pytest.mark.parametrize("text", [
    "Eduskunta kokoontui tiistaina keskustelemaan ensi vuoden talousarviosta, ja pitkän keskustelun "
    "jälkeen se päätti lisätä rahoitusta kouluille, teille ja kirjastolle.",
    "委员会周二开会讨论明年的新预算，经过长时间的辩论，委员会同意增加学校、道路和公共图书馆的开支。"
    "委员会还决定在下个月举行公开听证会，听取市民的意见和建议。",
])
def test_no_language_specific_word_list(text):
    html = page(NAV + "<div>" + "".join(f"<p>{text}</p>" for _ in range(3)) + "</div>")
    assert extract_main_text(html).count(text) == 3


def test_pages_without_text():
    assert extract_main_text("") == ""
    assert extract_main_text("<html><body><script>var a = 1;</script></body></html>") == ""
    assert extract_main_text(page(NAV)) == "" or "Section" in extract_main_text(page(NAV))


def test_params_are_validated():
    with pytest.raises(ValueError, match="cover_share"):
        MainTextParams(cover_share=1.5)
    with pytest.raises(ValueError, match="extend_levels"):
        MainTextParams(extend_levels=-1)
    with pytest.raises(ValueError, match="declared_ratio"):
        MainTextParams(declared_ratio=0.5)


def _json_ld(body: str) -> str:
    return ('<script type="application/ld+json">'
            + json.dumps({"@context": "https://schema.org", "@graph": [
                {"@type": "WebSite", "name": "Example"},
                {"@type": "NewsArticle", "headline": "Budget", "articleBody": body}]})
            + "</script>")


def test_a_teaser_page_gets_the_article_it_declares_in_json_ld():
    """A paywalled page: headline and teaser in the DOM, the article in schema.org JSON-LD."""
    teaser = "The committee agreed on a new budget."
    article = "\n".join(f"{PROSE}{i} &amp; <b>more</b>" for i in range(5))
    html = ("<html><head>" + _json_ld(article) + "</head><body>" + NAV
            + f"<article><h1>Budget</h1><p>{teaser}</p><p>Subscribe to read more</p></article></body></html>")
    out = extract_main_text(html)
    assert out.startswith("Budget\n\n" + teaser)
    assert all(f"{PROSE}{i} & more".strip() in out for i in range(5))
    assert "<b>" not in out and "&amp;" not in out
    # a page whose DOM holds its article ignores the declaration
    full = page("<div class='entry-content'>" + "".join(f"<p>{PROSE}{i}</p>" for i in range(8))
                + "</div>" + _json_ld("A different text. " * 200))
    assert "A different text" not in extract_main_text(full)
    # broken or absurd declarations are ignored
    for script in ('<script type="application/ld+json">{"articleBody": </script>',
                   '<script type="application/ld+json">' + "[" * 100_000 + "]" * 100_000 + "</script>",
                   '<script type="application/ld+json">{"articleBody": 3}</script>'):
        assert extract_main_text(page(f"<p>{teaser}</p>" + script)) == teaser


# A real shape (volksblatt.at, 24ora.com in the evaluation set): scripts that build HTML in
# strings open '<div>' and close it escaped ('<\/div>'), so a tag scanner that reads script
# content sees hundreds of unclosed divs.
SCRIPT_BUILDS_HTML = ("<script>var html = '';for (var i = 0; i < n; i++) { html += '<div class=\"slide\">"
                      "<div class=\"inner\"><span>' + i + '<\\/span><\\/div><\\/div>'; }</script>")


def test_markup_guard_ignores_script_style_template_and_comments():
    body = ("<div class='wrap'><div class='post'>" + f"<p>{PROSE}</p>" * 3 + "</div></div>"
            + SCRIPT_BUILDS_HTML * 300
            + "<style>" + "div > div { }" * 300 + "</style>"
            + "<template>" + "<div>" * 300 + "</template>"
            + "<!--" + "<div>" * 300 + "-->"
            + "<textarea>" + "<div>" * 300 + "</textarea>")
    html = page(body)
    assert markup_depth(html) == 4  # html > body > div.wrap > div.post (p: implied end)
    assert not markup_too_deep(html)
    assert not too_many_blocks(html, limit=100)
    assert PROSE.strip() in extract_main_text(html)


def test_markup_guard_follows_the_browser_on_unclosed_and_stray_tags():
    # unclosed inline elements inside a closed block do not stay open after it
    assert markup_depth("<div><span><b>x</div>" * 2000) == 3
    # a stray end tag is ignored, a new <a> closes the open one
    assert markup_depth("</div></div><div>" + "<a href=x>link" * 2000 + "</div>") == 2
    assert markup_depth("<p>" * 5000 + "<li>" * 5000 + "<br>" * 5000) == 0
    # real nesting still counts, and a deep page is still removed
    assert markup_depth("<div>" * 100 + "</div>" * 100) == 100
    assert markup_too_deep("<div>" * 600) and markup_depth("<div>" * 600, limit=512) == 513


@pytest.mark.parametrize("limit", [1, 3, 5, 40])
def test_markup_guards_skip_the_scan_only_where_it_cannot_exceed_the_limit(limit):
    """A page with at most ``limit`` "<" is answered without the scan: the same answer."""
    from curation.extraction.markup import _BLOCK_NAMES, _tags

    rng = __import__("random").Random(limit)
    pieces = ["<div>", "</div>", "<p>", "<span>", "<br>", "<!-- <div> -->", "<script>'<div>'</script>", "x", "<"]
    for _ in range(300):
        html = "".join(rng.choice(pieces) for _ in range(rng.randrange(0, 3 * limit + 3)))
        blocks = sum(1 for closing, name, _ in _tags(html.encode()) if not closing and name in _BLOCK_NAMES)
        assert markup_too_deep(html, limit) == (markup_depth(html, limit) > limit)
        assert too_many_blocks(html, limit) == (blocks > limit)


def test_read_warc_keeps_a_page_whose_script_holds_html():
    import io

    from curation.document import Document, Removal
    from tests.curation.test_readers_warc import html_response, read_warc, warc

    html = page("<div class='entry-content'>" + f"<p>{PROSE}</p>" * 3 + "</div>" + SCRIPT_BUILDS_HTML * 600)
    for extractor in ("main_text", "justext", "resiliparse"):
        (out,) = read_warc(io.BytesIO(warc([html_response(page=html)])), "/cc/x.warc.gz", "cc_2020_50", extractor)
        assert not (isinstance(out, Removal) and out.reason == "markup_too_deep"), extractor
        if extractor == "main_text":
            assert isinstance(out, Document) and PROSE.strip() in out.text


def test_other_language_pages_reach_language_id_with_their_text():
    """Through the WARC reader a German page is not "empty after extraction" (no English stop
    list): it keeps its text, and the language stage removes it as wrong_language."""
    import io

    from curation.document import Document
    from curation.language import LanguageConfig, LanguageIdentifier, keep_language
    from tests.curation.test_readers_warc import html_response, read_warc, warc

    ident, cfg = LanguageIdentifier(), LanguageConfig()
    german = [n for n, item in PAGES.items() if item["lang"] == "German"]
    assert german
    for name in german:
        data = warc([html_response(page=page_html(name))])
        (doc,) = read_warc(io.BytesIO(data), "/cc/x.warc.gz", "cc_2020_50", "main_text")
        assert isinstance(doc, Document) and len(doc.text) > 200
        lang, score = ident.predict(doc.text)
        assert lang == "de" and keep_language(lang, score, cfg).reason == "wrong_language"

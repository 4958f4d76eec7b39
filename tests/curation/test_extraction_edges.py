"""curation.extraction's article edges (issue 47): what sits next to the body is dropped
(reader comments, newsletter and donation calls, author bios, lists of other articles' teasers),
the article's own paragraphs, leads and continuation blocks are kept.  Small planted pages."""
from __future__ import annotations

import pytest

from curation.extraction import MainTextParams, extract_main_text

PROSE = ("The committee met on Tuesday to discuss the new budget for the coming year, and after a "
         "long debate it agreed to spend more on schools, roads and the public library. ")
TEASERS = MainTextParams(teaser_lists=True)  # off by default (docs/extraction.md)
NAV = "<nav><ul>" + "".join(f"<li><a href='/{i}'>Section {i}</a></li>" for i in range(12)) + "</ul></nav>"


def page(body: str) -> str:
    return f"<html><head><title>t</title></head><body>{body}</body></html>"


def article(n: int = 4, cls: str = "story-text") -> str:
    return f"<div class='{cls}'>" + "".join(f"<p>{PROSE}{i}</p>" for i in range(n)) + "</div>"


def assert_article_kept(out: str, n: int = 4) -> None:
    assert all(f"{PROSE}{i}".strip() in out for i in range(n)), out[:300]


def teaser_cards(n: int, title_words: str = "Another long headline about the city council") -> str:
    return "".join(
        f"<div class='card'><h3><a href='/story/{i}'>{title_words} number {i}</a></h3>"
        f"<p>An excerpt of the other story, long enough to read as a sentence of prose {i}.</p></div>"
        for i in range(n))


def test_a_teaser_list_above_the_article_is_dropped():
    """Cards of other stories (headline link + excerpt), each worth as much as a lead, are a
    teaser list as one template repeated, whatever their class says (``teaser_lists``)."""
    html = page(NAV + f"<main><div class='grid'>{teaser_cards(8)}</div>" + article(6) + "</main>")
    assert "excerpt of the other story" in extract_main_text(html)  # off by default
    out = extract_main_text(html, TEASERS)
    assert_article_kept(out, 6)
    assert "excerpt of the other story" not in out and "Another long headline" not in out


def test_a_teaser_list_inside_the_body_container_is_dropped():
    html = page(NAV + "<div class='entry-content'>" + "".join(f"<p>{PROSE}{i}</p>" for i in range(4))
                + "<ul>" + "".join(
                    f"<li><a href='/n{i}'>Minister announces new plan for the harbour {i}</a> "
                    f"LONDON: The minister said on Monday that work would start next spring {i}.</li>"
                    for i in range(6)) + "</ul></div>")
    out = extract_main_text(html, TEASERS)
    assert_article_kept(out)
    assert "Minister announces" not in out


def test_a_list_whose_items_open_with_short_links_is_kept():
    """A glossary or an in-article list opens its items with a term, not a headline."""
    items = "".join(f"<li><a href='/wiki/T{i}'>Term {i}</a> is explained here in a whole sentence of "
                    f"plain prose for the reader {i}.</li>" for i in range(6))
    out = extract_main_text(page(NAV + "<div class='entry-content'>" + "".join(
        f"<p>{PROSE}{i}</p>" for i in range(4)) + f"<ul>{items}</ul></div>"), TEASERS)
    assert_article_kept(out)
    assert all(f"Term {i} is explained here" in out for i in range(6))


def test_a_listing_page_of_teasers_keeps_them():
    """When the teasers ARE the page (a blog's index), the cut is undone, as for any cut
    furniture that holds more than what is left."""
    grid = f"<main><div class='grid'>{teaser_cards(10)}</div></main>"
    out = extract_main_text(page(NAV + grid), TEASERS)
    assert all(f"read as a sentence of prose {i}." in out for i in range(10))


def test_after_the_body_bios_and_newsletter_calls_are_dropped_but_not_a_continuation():
    """Around the body only leads are taken before it; after it, only blocks that repeat the
    body's own block (an article split into sections around an advertisement)."""
    lead = "A short standfirst that sums up the article in one sentence of plain prose for readers."
    bio = "Jane Doe is a reporter covering city hall and the budget for the paper since 2015, based in town."
    call = "Get the day's top headlines delivered to your inbox every morning by signing up today for free."
    more = "The final part of the article, after the advertisement, closes the story in plain prose."
    html = page(NAV + f"<article><div class='head'><p>{lead}</p></div>"
                "<section class='article-text'>" + "".join(f"<p>{PROSE}{i}</p>" for i in range(4))
                + "</section><div class='ad-slot'></div>"
                f"<section class='article-text'><p>{more}</p></section>"
                f"<div class='about'><p>{bio}</p></div><div><p>{call}</p></div></article>")
    out = extract_main_text(html)
    assert_article_kept(out)
    assert lead in out and more in out
    assert bio not in out and call not in out


@pytest.mark.parametrize("box", [
    "<div class='article__newsletter-signup'><h3>Newsletter</h3><p>{t}</p></div>",
    "<div class='ArticlePage-authorInfo-bio'><p>{t}</p></div>",
    "<div class='story-donate-box'><p>{t}</p></div>",
    "<div class='custom-cta-letter'><p>{t}</p></div>",
    "<div id='comments'><h3>3 Comments</h3><p>{t}</p></div>",
])
def test_named_edges_inside_the_body_are_dropped(box):
    """Class names of newsletter, donation and call-to-action boxes, author bios and comments;
    a content word before the furniture word is a BEM block ("article__newsletter"), not the
    content."""
    planted = "Support our journalism and sign up now, it takes one minute of your time today."
    html = page(NAV + "<div class='entry-content'>" + "".join(f"<p>{PROSE}{i}</p>" for i in range(4))
                + box.format(t=planted) + "</div>")
    out = extract_main_text(html)
    assert_article_kept(out)
    assert planted not in out


def test_a_content_word_after_a_furniture_word_still_names_content():
    """"comment-content" and "sidebar-layout"-style names were content before; they stay so."""
    html = page(NAV + "<div class='comment-content'>" + "".join(f"<p>{PROSE}{i}</p>" for i in range(4))
                + "</div>")
    assert_article_kept(extract_main_text(html))


def test_calls_at_the_end_are_dropped_but_not_the_last_paragraph_of_prose():
    calls = ["Follow us on <a href='/x'>X</a> and <a href='/f'>Facebook</a>.",
             "Submit your letter to the editor via <a href='/form'>this form</a>.",
             "Never miss a story: <a href='/nl'>sign up for our newsletter</a>."]
    linked_prose = (f"{PROSE} The full report is <a href='/r'>on the council's site</a>, with the "
                    "tables for every district and the minutes of the meeting.")
    body = "".join(f"<p>{PROSE}{i}</p>" for i in range(4))
    out = extract_main_text(page(NAV + "<div class='entry-content'>" + body + f"<p>{linked_prose}</p>"
                                 + "".join(f"<p>{c}</p>" for c in calls) + "</div>"))
    assert_article_kept(out)
    assert "with the tables for every district" in out
    assert "Follow us" not in out and "this form" not in out and "newsletter" not in out
    short_end = extract_main_text(page(NAV + "<div class='entry-content'>" + body + "<p>The end.</p></div>"))
    assert short_end.endswith("The end.")  # no link: the article's own last line


def test_a_forum_thread_of_posts_named_comment_is_the_page_but_a_blogs_comments_are_not():
    """Posts of one template named "comment" are restored together when the rest of the page
    is worth little (a forum thread); below an article they stay cut."""
    posts = "".join(f"<div class='MtnComment' id='ContentPlaceHolder1_Comment_{i}'>"
                    f"<div class='MtnCommentText'><p>{PROSE}post {i}</p></div></div>" for i in range(8))
    thread = extract_main_text(page(NAV + f"<main><h1>Question</h1>{posts}</main>"))
    assert all(f"{PROSE}post {i}".strip() in thread for i in range(8))
    blog = extract_main_text(page(NAV + "<main>" + article(4)
                                  + f"<div class='comments'>{posts}</div></main>"))
    assert_article_kept(blog)
    assert "post 3" not in blog


def test_edge_params_are_validated():
    for name in ("teaser_title_chars", "teaser_max_chars", "teaser_excerpt_chars", "teaser_min_items",
                 "call_max_chars"):
        with pytest.raises(ValueError, match=name):
            MainTextParams(**{name: 0})
    for name in ("call_max_paragraphs", "thread_max_rest"):
        with pytest.raises(ValueError, match=name):
            MainTextParams(**{name: -1})


def test_keep_headline_false_drops_only_the_headline_before_the_text():
    html = page(NAV + "<article><div class='entry-content'><h1>Budget agreed</h1>"
                + "".join(f"<p>{PROSE}{i}</p>" for i in range(3)) + "<h1>A later part</h1>"
                + f"<p>{PROSE}end</p></div></article>")
    assert "Budget agreed" in extract_main_text(html)
    out = extract_main_text(html, MainTextParams(keep_headline=False))
    assert_article_kept(out, 3)
    assert "Budget agreed" not in out and "A later part" in out

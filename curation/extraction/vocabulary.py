"""What the main-text extractor knows about markup, before it looks at any text.

Three kinds of knowledge, all language-independent (tag names and the class/id vocabulary of
web templates, never words of the page's text):

- tag sets: what is never text (``NOT_TEXT``), what starts a new paragraph (``BLOCK_TAGS``),
  what is page furniture by definition (``FURNITURE_TAGS``);
- ``classify(tag, attrs)``: whether an element's class/id names it boilerplate (comments,
  sharing, related links, newsletter boxes, cookie banners, ...) or the article body
  (``entry-content``, ``article__body``, ``itemprop=articleBody``, ...);
- both are hints, not verdicts: ``curation.extraction.main_text`` weighs them against how
  much prose each part of the page holds, so one misleading class name cannot empty a page.
"""
from __future__ import annotations

import re

NOT_TEXT = frozenset(
    "script style template svg math iframe object embed canvas button select option "
    "input textarea head title meta link video audio map area picture source".split())
"""Elements whose content is never main text.
``<noscript>`` is text: what a browser without scripts shows, often the whole article of a
page that renders it with JavaScript (Blogger)."""

BLOCK_TAGS = frozenset(
    "p div section article main h1 h2 h3 h4 h5 h6 li ul ol dl dt dd table tr tbody thead "
    "tfoot caption blockquote pre figure header footer aside nav form fieldset address hr details "
    "summary center body html legend".split())
"""Elements that end the paragraph before them and start a new one.  A table row is one
paragraph, its cells separated by ``CELL_SEPARATOR`` (a cell per line would make every
table look like a page of repeated short lines to the Gopher repetition rules)."""
CELLS = frozenset("td th".split())
CELL_SEPARATOR = " | "

HEADINGS = frozenset("h1 h2 h3 h4 h5 h6".split())
LISTS = frozenset("ul ol dl table".split())
TEXT_BLOCKS = frozenset("p h1 h2 h3 h4 h5 h6 li dd dt td th pre blockquote caption".split())
"""Leaf paragraphs: the main-text container is never one of these, it holds them."""

FURNITURE_TAGS = frozenset("nav aside footer form".split())
"""Site furniture by tag; like a class name, a hint (a whole page can sit in one ``<form>``)."""

_NEVER_FURNITURE = frozenset("html body article main".split())

# Class/id words that mark boilerplate.  A word matches if it starts with a stem ("comments",
# "commentlist", "related-posts") or equals a short word ("ad", "nav"; as stems they would
# match "address", "navy").
_FURNITURE_STEMS = (
    "comment", "respond", "repl", "disqus",                       # reader comments
    "share", "sharing", "social",                                 # sharing buttons
    "related", "recommend", "outbrain", "taboola", "teaser",      # other articles
    "newsletter", "subscri", "signup", "paywall", "donat",        # sign-up and donation calls
    "cookie", "consent", "gdpr", "alert", "popup", "modal",       # overlays and banners
    "sidebar", "navbar", "navigation", "menu", "breadcrumb", "pagination", "pager", "footer",
    "advert", "sponsor", "promo", "affiliate", "disclaimer", "disclosure",
    "byline", "author", "meta", "tagcloud", "copyright", "caption", "credit",
    "toolbar", "print", "captcha", "rating",
)
_FURNITURE_WORDS = frozenset("ad ads nav tags bio skip cta".split())
# A class name that also names the content ("comment-content", "article-body") is not
# furniture unless a furniture word comes after the content word: BEM-style names put the
# block first and the part after it ("article__related", "ArticlePage-authorInfo-bio",
# "story-share"); nor is a modifier saying that a container HAS furniture ("has-sidebar",
# "sidebar-layout", "no-comments", "with-ads"); a wrapper OF furniture ("sidebar-wrapper",
# "author-box-wrap") is furniture.
_CONTENT_WORDS = frozenset("content article main body entry text story".split())
_LAYOUT_WORDS = frozenset("layout has with no parent template".split())
# The article body: a class name with a kind of document and a part of it ("entry-content",
# "post-body", "article__text", "storyBody").
_DOC_KINDS = frozenset("article post entry story news blog".split())
_DOC_PARTS = frozenset("content body text".split())

_WORD_RE = re.compile(r"[a-z][a-z0-9]*|[0-9]+")
_CAMEL_RE = re.compile(r"(?<=[a-z])(?=[A-Z])")
_CACHE: dict[tuple, tuple[bool, bool]] = {}
_CACHE_LIMIT = 100_000
HINTS = _CACHE
"""``classify``'s results by ``(tag, class, id, itemprop)``: a hot loop may look a hit up
itself and call ``classify`` only on a miss."""


def _words(name: str) -> list[str]:
    return _WORD_RE.findall(_CAMEL_RE.sub(" ", name).lower())


_DIGITS_RE = re.compile(r"[0-9]+")
_NAME_HINTS: dict[str, tuple[bool | None, bool]] = {}


def _name_hints(name: str) -> tuple[bool | None, bool]:
    """What one class or id name says: furniture (True), content (None: protects the element)
    or nothing (False); and whether it names the article body.  Cached by the name with each
    run of digits as one "0": pages number their ids (``post-4711``), and a digit never makes
    or unmakes a vocabulary word (every word and stem is letters), so the words say the same."""
    got = _NAME_HINTS.get(name)
    if got is None:
        key = _DIGITS_RE.sub("0", name)
        got = _NAME_HINTS.get(key)
        if got is None:
            words = _words(key)
            named = False
            for w in words:
                if w in _CONTENT_WORDS:
                    named = None  # content, unless a later word names furniture
                elif w in _LAYOUT_WORDS:
                    named = False
                    break
                elif w in _FURNITURE_WORDS or w.startswith(_FURNITURE_STEMS):
                    named = True
            kinds = set(words)
            got = (named, bool(kinds & _DOC_KINDS and kinds & _DOC_PARTS))
            if len(_NAME_HINTS) >= _CACHE_LIMIT:
                _NAME_HINTS.clear()
            _NAME_HINTS[key] = got
    return got


def _names_hints(names: list[str]) -> tuple[bool, bool]:
    """``(furniture, body)`` of an element's class and id names: a name saying content
    protects it from every furniture name (issue 47's rules, ``_name_hints``), otherwise one
    furniture name is enough; one name saying article body is enough."""
    furniture = body = False
    for name in names:
        named, names_body = _name_hints(name)
        if named is None:
            return False, body or any(_name_hints(n)[1] for n in names)
        furniture = furniture or named
        body = body or names_body
    return furniture, body


def classify(tag: str, attrs: dict) -> tuple[bool, bool]:
    """``(furniture, article_body)`` hints for an element from its tag, class, id and
    itemprop.  Cached: templates repeat the same few hundred class strings."""
    cls, ident, prop = attrs.get("class"), attrs.get("id"), attrs.get("itemprop")
    key = (tag, cls, ident, prop)
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    names_furniture, names_body = _names_hints((cls.split() if cls else []) + (ident.split() if ident else []))
    furniture = tag in FURNITURE_TAGS or (tag not in _NEVER_FURNITURE and names_furniture)
    body = not furniture and (prop == "articleBody" or names_body)
    if len(_CACHE) >= _CACHE_LIMIT:
        _CACHE.clear()
    _CACHE[key] = (furniture, body)
    return furniture, body

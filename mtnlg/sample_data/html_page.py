"""Web pages as Common Crawl fetched them: a main article wrapped in real-looking boilerplate.

Navigation menus, cookie banners, ads, "related posts" sidebars and footers surround the
article, so text extraction (jusText) has real work to do.  A few charsets are used, declared
in the HTTP header, the ``<meta>`` tag, both or neither, as on the real web.  The planted
low-quality pages (``low_quality.py``) bring their own main block and the thinner chrome of
their kind of site (shop, marketplace, business, directory, content farm) or none at all.
"""
from __future__ import annotations

import html
import random
from dataclasses import dataclass

# (charset name for Python, how it is declared): real pages mix all of these.
CHARSETS = (
    ("utf-8", "both"), ("utf-8", "header"), ("utf-8", "meta"), ("utf-8", "none"),
    ("iso-8859-1", "both"), ("windows-1252", "meta"),
)
SITES = ("dailyledger", "northwind-times", "gardenersguide", "techbyte", "the-curious-reader",
         "valleyweekly", "openhistory", "citybeat")


@dataclass(frozen=True)
class Page:
    url: str
    title: str
    body: str  # the main text; "" for a boilerplate-only page
    charset: str
    declared: str  # "both", "header", "meta" or "none"
    site: str

    @property
    def content_type(self) -> str:
        if self.declared in ("both", "header"):
            return f"text/html; charset={self.charset.upper() if self.charset != 'utf-8' else 'UTF-8'}"
        return "text/html"


def make_page(rng: random.Random, index: int, title: str, body: str, site: str | None = None,
              editions: int = 1) -> Page:
    """A page of one of the news ``SITES`` (or of ``site``, a slug such as ``ace-deals``), on one
    of the site's ``editions`` hosts (``www.SITE.example.com``, ``www.SITE-1.example.com``, ...;
    chosen by ``index``, so the other bytes do not change and copies of a page share a host)."""
    site = site or rng.choice(SITES)
    edition = index % editions
    host = f"{site}-{edition}" if edition else site
    charset, declared = rng.choices(CHARSETS, weights=(10, 3, 3, 2, 2, 2))[0]
    # URLs must be ASCII (WARC headers are): keep ASCII letters and digits of the title.
    words = ("".join(c for c in w.lower() if c.isascii() and c.isalnum()) for w in title.split()[:6])
    slug = "-".join(w for w in words if w) or "article"
    url = f"http://www.{host}.example.com/{rng.randint(2009, 2020)}/{rng.randint(1, 12):02d}/{slug}-{index}.html"
    return Page(url, title, body, charset, declared, site)


def _nav(rng: random.Random, site: str) -> str:
    items = ["Home", "News", "World", "Business", "Technology", "Sport", "Culture", "Opinion",
             "Travel", "Video", "Podcasts", "Newsletters"]
    links = "".join(f'<li><a href="/{i.lower()}/">{i}</a></li>' for i in rng.sample(items, 7))
    return f'<header class="site-header"><a class="logo" href="/">{site.replace("-", " ").title()}</a>' \
           f'<nav class="main-menu"><ul>{links}</ul></nav>' \
           f'<form class="search" action="/search"><input name="q" placeholder="Search..."></form></header>'


def _cookie_banner() -> str:
    return ('<div id="cookie-consent" class="banner">We use cookies to improve your experience, '
            'personalise ads and analyse traffic. By continuing to browse you agree to our use of '
            'cookies. <button>Accept all</button> <button>Manage settings</button></div>')


def _sidebar(rng: random.Random) -> str:
    related = "".join(f'<li><a href="/p/{rng.randint(1000, 99999)}">{t}</a></li>' for t in rng.sample(
        ["10 things you missed this week", "The best photos of the year", "Readers' letters",
         "Weather forecast", "Most popular stories", "Editor's picks", "Watch: highlights",
         "Sign up for alerts"], 4))
    return ('<aside class="sidebar"><div class="ad-slot" data-ad="300x250">Advertisement</div>'
            f'<h3>Related posts</h3><ul>{related}</ul>'
            '<div class="ad-slot" data-ad="300x600">Sponsored content</div></aside>')


def _footer(rng: random.Random, site: str) -> str:
    return (f'<footer><p>&copy; {rng.randint(2012, 2020)} {site.replace("-", " ").title()} Media Ltd. '
            'All rights reserved.</p><p><a href="/about">About us</a> | <a href="/contact">Contact</a> | '
            '<a href="/privacy">Privacy Policy</a> | <a href="/terms">Terms of Use</a> | '
            '<a href="/advertise">Advertise with us</a></p></footer>')


def blocks_html(blocks, css_class: str) -> str:
    """The main content of a low-quality page (``low_quality.Block`` list) as HTML: consecutive
    list items form one ``<ul>``, consecutive table rows one ``<table>``."""
    out, run_tag = [], None
    closers = {"li": "</ul>", "tr": "</table>"}
    for b in blocks:
        if run_tag and b.tag != run_tag:
            out.append(closers[run_tag])
            run_tag = None
        text = html.escape(b.text)
        if b.tag in closers and run_tag is None:
            out.append("<ul>" if b.tag == "li" else '<table class="specs">')
            run_tag = b.tag
        if b.tag == "li":
            out.append(f"<li>{text}</li>")
        elif b.tag == "tr":
            key, _, value = b.text.partition(": ")
            out.append(f"<tr><th>{html.escape(key)}</th><td>{html.escape(value)}</td></tr>")
        elif b.tag == "link":
            rest = html.escape(b.text[len(b.anchor):])
            out.append(f'<p class="entry"><a href="{html.escape(b.href)}">{html.escape(b.anchor)}</a>{rest}</p>')
        elif b.tag == "button":
            out.append(f'<button type="button">{text}</button>')
        else:
            out.append(f"<{b.tag}>{text}</{b.tag}>")
    if run_tag:
        out.append(closers[run_tag])
    return f'<div class="{css_class}">' + "".join(out) + "</div>"


def _thin_chrome(rng: random.Random, site: str, style: str) -> tuple[str, str]:
    """Header and footer of a low-quality site of ``style`` (``low_quality_lexicon.SITE_STYLES``)."""
    from .low_quality_lexicon import SITE_STYLES

    menu, footer = SITE_STYLES[style]
    name = html.escape(site.replace("-", " ").title())
    links = "".join(f'<a href="/{i.lower().replace(" ", "-")}">{html.escape(i)}</a>'
                    for i in rng.sample(menu, rng.randint(5, 8)))
    notes = " | ".join(html.escape(i) for i in rng.sample(footer, rng.randint(3, 5)))
    return (f'<div class="top"><a class="brand" href="/">{name}</a><div class="menu">{links}</div></div>',
            f'<div class="bottom"><p>{notes}</p><p>&copy; {rng.randint(2010, 2020)} {name}</p></div>')


def render(page: Page, rng: random.Random, main_html: str | None = None, style: str = "news") -> bytes:
    """The HTML document encoded in the page's charset (unencodable characters as references).

    ``main_html`` replaces the article (``blocks_html`` of a low-quality page). ``style`` is the
    site's chrome: ``news`` (cookie banner, menu, sidebar, footer: every article page), ``bare``
    (none: a page that is nothing but its main block) or a ``SITE_STYLES`` name."""
    meta = ""
    if page.declared in ("both", "meta"):
        meta = f'<meta http-equiv="Content-Type" content="text/html; charset={page.charset}">'
    paras = "".join(f"<p>{html.escape(p)}</p>" for p in page.body.split("\n") if p.strip())
    article = (f'<article><h1>{html.escape(page.title)}</h1><p class="byline">By Staff Reporter</p>'
               f'{paras}<div class="share">Share this: Facebook Twitter Email</div></article>'
               if page.body else "")
    if main_html is not None:
        article = main_html
    if style == "news":
        body = f"{_cookie_banner()}{_nav(rng, page.site)}<main>{article}{_sidebar(rng)}</main>{_footer(rng, page.site)}"
    elif style == "bare":
        body = f"<main>{article}</main>"
    else:
        header, footer = _thin_chrome(rng, page.site, style)
        body = f"{header}<main>{article}</main>{footer}"
    doc = (f"<!DOCTYPE html>\n<html lang=\"en\"><head>{meta}<title>{html.escape(page.title)}</title>"
           '<script>window.dataLayer=window.dataLayer||[];</script>'
           '<link rel="stylesheet" href="/static/site.css"></head>\n<body>'
           f"{body}</body></html>\n")
    return doc.encode(page.charset, errors="xmlcharrefreplace")

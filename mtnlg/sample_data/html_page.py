"""Web pages as Common Crawl fetched them: a main article wrapped in real-looking boilerplate.

Navigation menus, cookie banners, ads, "related posts" sidebars and footers surround the
article, so text extraction (jusText) has real work to do.  A few charsets are used, declared
in the HTTP header, the ``<meta>`` tag, both or neither, as on the real web.
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


def make_page(rng: random.Random, index: int, title: str, body: str) -> Page:
    site = rng.choice(SITES)
    charset, declared = rng.choices(CHARSETS, weights=(10, 3, 3, 2, 2, 2))[0]
    # URLs must be ASCII (WARC headers are): keep ASCII letters and digits of the title.
    words = ("".join(c for c in w.lower() if c.isascii() and c.isalnum()) for w in title.split()[:6])
    slug = "-".join(w for w in words if w) or "article"
    url = f"http://www.{site}.example.com/{rng.randint(2009, 2020)}/{rng.randint(1, 12):02d}/{slug}-{index}.html"
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


def render(page: Page, rng: random.Random) -> bytes:
    """The HTML document encoded in the page's charset (unencodable characters as references)."""
    meta = ""
    if page.declared in ("both", "meta"):
        meta = f'<meta http-equiv="Content-Type" content="text/html; charset={page.charset}">'
    paras = "".join(f"<p>{html.escape(p)}</p>" for p in page.body.split("\n") if p.strip())
    article = (f'<article><h1>{html.escape(page.title)}</h1><p class="byline">By Staff Reporter</p>'
               f'{paras}<div class="share">Share this: Facebook Twitter Email</div></article>'
               if page.body else "")
    doc = (f"<!DOCTYPE html>\n<html lang=\"en\"><head>{meta}<title>{html.escape(page.title)}</title>"
           '<script>window.dataLayer=window.dataLayer||[];</script>'
           '<link rel="stylesheet" href="/static/site.css"></head>\n<body>'
           f"{_cookie_banner()}{_nav(rng, page.site)}<main>{article}{_sidebar(rng)}</main>"
           f"{_footer(rng, page.site)}</body></html>\n")
    return doc.encode(page.charset, errors="xmlcharrefreplace")

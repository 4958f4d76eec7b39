"""The article text a page declares in its schema.org JSON-LD (``articleBody``).

News sites that show a teaser to readers without a subscription, or that render the article with
JavaScript, often still serve the whole article in ``<script type="application/ld+json">`` for
search engines: the visible DOM then holds a caption and "read the full article", the JSON-LD
the article.  ``curation.extraction.main_text`` uses this text only when what it found in the
DOM is short and the declared body is several times longer (docs/extraction.md: 2 of the 990
evaluation pages, both paywalled articles).
"""
from __future__ import annotations

import html
import json
import re

_TAG_RE = re.compile(r"<[a-zA-Z/!]")
_MAX_NODES = 10_000  # a bound on the JSON walked per script (hostile pages)


def _bodies(value) -> list[str]:
    """Every ``articleBody`` string in one decoded JSON-LD value (objects, ``@graph`` lists and
    nested items alike), walked iteratively."""
    out, stack, seen = [], [value], 0
    while stack and seen < _MAX_NODES:
        x = stack.pop()
        seen += 1
        if isinstance(x, dict):
            body = x.get("articleBody")
            if isinstance(body, str):
                out.append(body)
            stack.extend(v for v in x.values() if isinstance(v, (dict, list)))
        elif isinstance(x, list):
            stack.extend(v for v in x if isinstance(v, (dict, list)))
    return out


def _as_text(body: str) -> str:
    """Paragraphs separated by blank lines.  Some sites put HTML in the string: then it is read
    as HTML (blocks and ``<br>`` break lines, inline tags do not); entities are decoded."""
    if _TAG_RE.search(body):
        from curation.extraction.page import read_page

        page = read_page(f"<html><body>{body}</body></html>")
        return "\n\n".join(p.text for p in page.paragraphs) if page is not None else ""
    lines = (" ".join(line.split()) for line in html.unescape(body).splitlines())
    return "\n\n".join(line for line in lines if line)


def declared_article_body(scripts: list[str]) -> str:
    """The longest ``articleBody`` declared in these JSON-LD script contents, as text; "" when
    none parses or declares one."""
    best = ""
    for script in scripts:
        try:
            value = json.loads(script)
        except (ValueError, RecursionError):  # invalid JSON; JSON nested deeper than Python recurses
            continue
        for body in _bodies(value):
            if len(body) > len(best):
                best = body
    return _as_text(best) if best else ""

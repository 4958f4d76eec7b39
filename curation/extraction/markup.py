"""Cheap checks on raw markup, run before any parser: how deep a browser would nest it, and
how many paragraph elements it opens.

Both walk the tags a browser would see as tags: the content of ``<script>``, ``<style>``,
``<template>``, ``<textarea>``, ``<title>``, ``<noscript>``, ... and of comments is text to a
browser, so a script that builds HTML in strings (``'<div>'`` opened, ``'<\\/div>'`` closed
escaped) adds nothing.  Depth follows the browser's rules closely enough never to exceed the
depth of the tree a browser builds: an end tag closes the elements opened after its start tag
(``<div><span></div>`` leaves nothing open), an end tag with no open start tag is ignored,
void and implied-end elements (``<br>``, ``<p>``, ``<li>``, ``<td>``, ...) never deepen but an
implied-end element closes what was opened inside it, and a new ``<a>`` closes an open one.  One linear scan; no parser (a parser is quadratic in depth on
hostile input: 100,000 nested divs take Lexbor 20 s).
"""
from __future__ import annotations

import re
from typing import Iterator

MAX_HTML_DEPTH = 512
"""Deeper markup is removed as ``markup_too_deep`` before extraction: parsers and
main-content passes are quadratic in depth, and libxml2 stops at 256 levels anyway.  Real
pages stay far below: the deepest of the 990 pages of the extraction evaluation set nests
40 levels by this scan, 41 in the tree Lexbor builds (``bench/extraction/extract.py --depth``)."""

MAX_JUSTEXT_BLOCKS = 2000
"""jusText's context pass walks runs of short paragraphs from each one (quadratic): 4,000
one-word ``<p>``s take seconds, 20,000 minutes.  Pages that open more paragraph elements are
extracted with a linear extractor instead; real pages stay far below (hundreds)."""

_TOKEN_RE = re.compile(rb"<!--|<(/?)([a-zA-Z][a-zA-Z0-9:-]*)")
_TAG_END_RE = re.compile(rb"[>\"']")
# Elements whose content is text to a browser: skipped to their end tag.
_RAW_TEXT = frozenset(b"script style textarea title xmp iframe noembed noframes noscript".split())
# Elements whose content is not rendered as the page's tree (or is foreign markup with its own
# rules): skipped to the matching end tag, counting nested ones.
_NESTED_SKIP = frozenset(b"template svg math".split())
_VOID = frozenset(b"area base br col embed hr img input link meta param source track wbr keygen".split())
_IMPLIED_END = frozenset(b"p li td th tr dt dd option optgroup tbody thead tfoot colgroup rt rp".split())
"""Elements whose end is implied by their next sibling: not counted as a level (an unclosed
``<p>`` per paragraph is normal), but they close what was opened inside them, as a browser
does: ``<p><strong>a<p>b`` leaves no ``<strong>`` open."""
_REOPEN_CLOSES = frozenset(b"a button nobr form".split())
_BLOCK_NAMES = frozenset(
    b"blockquote body br caption center col colgroup dd div dl dt fieldset form h1 h2 h3 h4 h5 h6 "
    b"legend li optgroup option p pre table td textarea tfoot th thead tr ul".split())
_END_RE_CACHE: dict[bytes, re.Pattern] = {}


def _end_re(name: bytes) -> re.Pattern:
    pat = _END_RE_CACHE.get(name)
    if pat is None:
        pat = _END_RE_CACHE[name] = re.compile(rb"<(/?)" + name + rb"[\s/>]", re.I)
    return pat


def _skip_nested(data: bytes, name: bytes, pos: int) -> int:
    """Position after the end tag matching an open ``<name>`` whose start tag ends at pos."""
    depth, pat = 1, _end_re(name)
    while depth:
        m = pat.search(data, pos)
        if m is None:
            return len(data)
        depth += -1 if m.group(1) else 1
        pos = m.end()
    close = data.find(b">", pos - 1)
    return len(data) if close < 0 else close + 1


def _tag_end(data: bytes, pos: int) -> int:
    """Position just after the ``>`` that ends the tag whose attributes start at pos, skipping
    quoted values (``data-x="<strong>..."`` holds no tag); -1 when the tag never ends."""
    while True:
        m = _TAG_END_RE.search(data, pos)
        if m is None:
            return -1
        if m.group(0) == b">":
            return m.end()
        close = data.find(m.group(0), m.end())
        if close < 0:
            return -1
        pos = close + 1


def _tags(data: bytes) -> Iterator[tuple[bool, bytes, bool]]:
    """``(closing, lowercase name, self_closing)`` of every tag a browser would parse as one."""
    pos = 0
    while True:
        m = _TOKEN_RE.search(data, pos)
        if m is None:
            return
        if m.group(0) == b"<!--":
            end = data.find(b"-->", m.end())
            if end < 0:
                return
            pos = end + 3
            continue
        closing, name = m.group(1) == b"/", m.group(2).lower()
        pos = data.find(b">", m.end()) + 1 if closing else _tag_end(data, m.end())
        if pos <= 0:
            return  # an unterminated tag swallows the rest of the page, as in a browser
        selfc = data[pos - 2:pos - 1] == b"/"
        if not closing:
            if name in _RAW_TEXT:
                end = _end_re(name).search(data, pos)
                while end is not None and not end.group(1):
                    end = _end_re(name).search(data, end.end())
                if end is None:
                    return
                pos = end.end()
                yield False, name, True  # seen, but holds nothing
                continue
            if name in _NESTED_SKIP and not selfc:
                pos = _skip_nested(data, name, pos)
                yield False, name, True
                continue
            if name == b"plaintext":
                return
        yield closing, name, selfc


def markup_depth(html: str | bytes, limit: int | None = None) -> int:
    """How deep the page's elements nest (the body counted as level 0's child), estimated in
    one linear scan.  With ``limit``, stops as soon as the depth exceeds it."""
    data = html.encode("utf-8", "ignore") if isinstance(html, str) else html
    stack: list[bytes] = []
    open_count: dict[bytes, int] = {}
    markers = 0  # implied-end elements on the stack: scopes, not levels
    deepest = 0

    def close(name: bytes) -> int:
        closed_markers = 0
        while True:
            top = stack.pop()
            open_count[top] -= 1
            closed_markers += top in _IMPLIED_END
            if top == name:
                return closed_markers

    for closing, name, selfc in _tags(data):
        if name in _VOID:
            continue
        if closing:
            if open_count.get(name):
                markers -= close(name)
            continue
        if selfc and name in _NESTED_SKIP or name in _RAW_TEXT:
            continue
        if (name in _REOPEN_CLOSES or name in _IMPLIED_END) and open_count.get(name):
            markers -= close(name)
        stack.append(name)
        open_count[name] = open_count.get(name, 0) + 1
        if name in _IMPLIED_END:
            markers += 1
            continue
        if len(stack) - markers > deepest:
            deepest = len(stack) - markers
            if limit is not None and deepest > limit:
                return deepest
    return deepest


def _few_tags(html: str | bytes, limit: int) -> bool:
    """Whether the page holds at most ``limit`` "<": then no count of opened elements (each
    opened by a tag, which starts with "<") can exceed ``limit``, and the scan is not needed.
    One C-level count; most pages of the sample mix hold a few hundred tags."""
    return html.count(b"<" if isinstance(html, bytes) else "<") <= limit


def markup_too_deep(html: str | bytes, limit: int = MAX_HTML_DEPTH) -> bool:
    """Whether the page nests deeper than ``limit`` (``markup_depth``)."""
    return not _few_tags(html, limit) and markup_depth(html, limit) > limit


def too_many_blocks(html: str | bytes, limit: int = MAX_JUSTEXT_BLOCKS) -> bool:
    """Whether the page opens more than ``limit`` of jusText's paragraph-splitting elements
    (tags inside scripts, styles and comments not counted)."""
    if _few_tags(html, limit):
        return False
    data = html.encode("utf-8", "ignore") if isinstance(html, str) else html
    n = 0
    for closing, name, _ in _tags(data):
        if not closing and name in _BLOCK_NAMES:
            n += 1
            if n > limit:
                return True
    return False


def parsed_depth(html: str) -> int:
    """The depth of the tree a browser builds (Lexbor, as selectolax parses), counted as
    ``markup_depth`` counts (``<html>`` is level 1): the reference the scan is checked against in
    tests and ``bench/extraction/extract.py --depth``.  Never run in the job: parsing is quadratic in
    depth on hostile markup, which is what ``markup_depth`` guards against."""
    from selectolax.lexbor import LexborHTMLParser

    deepest, stack = 0, [(LexborHTMLParser(html).root, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        child = node.child
        while child is not None:
            if child.tag and child.tag[0] != "-":  # elements only: no text, comment, doctype
                stack.append((child, depth + 1))
            child = child.next
    return deepest

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


_NAME = rb"[a-zA-Z][a-zA-Z0-9:-]*+"
_ATTRS = rb"""(?:[^>"']++|"[^"]*+"|'[^']*+')*+"""  # possessive: a tag that never ends fails in one pass
_SCAN_RE = re.compile(
    rb"<!--(?:(?:[^-]++|-(?!->))*+(-->))?"  # 1: a comment's end
    rb"|</(" + _NAME + rb")[^>]*+(>)?"  # 2: an end tag's name, 3: its ">"
    rb"|<((?i:" + b"|".join(sorted(_RAW_TEXT)) + rb"))(?![a-zA-Z0-9:-])" + _ATTRS  # 4: raw text
    + rb"(?:>(?:[^<]++|<(?!/(?i:\4)[\s/>]))*+(</(?i:\4)[\s/>]))?"  # 5: the end tag that closes it
    rb"|<(" + _NAME + rb")" + _ATTRS + rb"(>)?", re.S)  # 6: a start tag's name, 7: its ">"
"""Every token ``_tags`` finds, one match each (its search, the tag's end, quoted values and a
raw-text element's content are all in the pattern): the scan's Python work is one step per tag.
A token that does not end (no ``-->``, no ``>``, no end tag for raw text) matches without its
last group, and the scan stops there, as ``_tags`` does."""


_PLAIN, _IMPLIED, _REOPENS, _SKIPPED, _NESTED, _STOP = range(6)
_NAME_KINDS: dict[bytes, tuple[bytes, int]] = {}


def _name_kind(raw: bytes) -> tuple[bytes, int]:
    """A start tag's name as written -> (lower case, what the scan does with it); cached."""
    got = _NAME_KINDS.get(raw)
    if got is None:
        name = raw.lower()
        kind = (_SKIPPED if name in _VOID else _NESTED if name in _NESTED_SKIP else _STOP if name == b"plaintext"
                else _IMPLIED if name in _IMPLIED_END else _REOPENS if name in _REOPEN_CLOSES else _PLAIN)
        if len(_NAME_KINDS) >= 10_000:
            _NAME_KINDS.clear()
        got = _NAME_KINDS[raw] = (name, kind)
    return got


def markup_depth(html: str | bytes, limit: int | None = None) -> int:
    """How deep the page's elements nest (the body counted as level 0's child), estimated in
    one linear scan.  With ``limit``, stops as soon as the depth exceeds it.

    The tags are ``_tags``'s, read with ``_SCAN_RE``: each ``finditer`` match is one token,
    and the search restarts only after ``<template>``, ``<svg>`` and ``<math>``, whose content
    is skipped with its nesting counted (tests/curation/test_markup_scan.py checks it against
    the scan over ``_tags``)."""
    data = html.encode("utf-8", "ignore") if isinstance(html, str) else html
    stack: list[bytes] = []
    open_count: dict[bytes, int] = {}
    depth = deepest = 0  # depth: elements on the stack that are levels (not implied-end scopes)
    kinds = _NAME_KINDS
    pos = 0
    while pos is not None:
        resume, pos = pos, None
        for m in _SCAN_RE.finditer(data, resume):
            token = m.lastindex
            if token == 7:  # a start tag
                raw = m.group(6)
                name, kind = kinds.get(raw) or _name_kind(raw)
                if kind == _PLAIN:
                    stack.append(name)
                    open_count[name] = open_count.get(name, 0) + 1
                    depth += 1
                    if depth > deepest:
                        deepest = depth
                        if limit is not None and deepest > limit:
                            return deepest
                elif kind == _IMPLIED or kind == _REOPENS:
                    if open_count.get(name):
                        depth -= _close(stack, open_count, name)
                    stack.append(name)
                    open_count[name] = open_count.get(name, 0) + 1
                    if kind == _REOPENS:
                        depth += 1
                        if depth > deepest:
                            deepest = depth
                            if limit is not None and deepest > limit:
                                return deepest
                elif kind == _NESTED:
                    if data[m.end() - 2] != 47:  # not "/>": its content is skipped
                        pos = _skip_nested(data, name, m.end())
                        break
                elif kind == _STOP:
                    return deepest
            elif token == 3:  # an end tag
                name = m.group(2).lower()
                if open_count.get(name):  # (a void element is never open)
                    depth -= _close(stack, open_count, name)
            elif token != 1 and token != 5:  # a token that never ends swallows the rest, as in a browser
                return deepest
    return deepest


def _close(stack: list[bytes], open_count: dict[bytes, int], name: bytes) -> int:
    """Pop the stack down to the innermost open ``name``; how many levels (elements that are
    not implied-end scopes) went."""
    levels = 0
    while True:
        top = stack.pop()
        open_count[top] -= 1
        levels += top not in _IMPLIED_END
        if top == name:
            return levels


def _few_tags(html: str | bytes, limit: int) -> bool:
    """Whether the page holds at most ``limit`` "<": then no count of opened elements (each
    opened by a tag, which starts with "<") can exceed ``limit``, and the scan is not needed.
    One C-level count; most pages of the sample mix hold a few hundred tags."""
    return html.count(b"<" if isinstance(html, bytes) else "<") <= limit


MAX_UNSCANNED_TAGS = 5000
"""A page with at most this many "<" may be parsed before its depth is scanned: whatever it
nests, Lexbor's parse stays bounded (about 20 ms at the worst nesting measured, 5,000 nested
``<div>`` or ``<li>``: bench/RESULTS.md, "The read stage: issue 52 item 2"; 98% of the real
pages of the annotated sets have fewer).  The early language decision uses this."""


def parse_is_bounded(html: str | bytes) -> bool:
    """Whether ``html`` is small enough in tags (``MAX_UNSCANNED_TAGS``) to be parsed unscanned."""
    return _few_tags(html, MAX_UNSCANNED_TAGS)


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

"""A parsed page as the extractor sees it: elements (with furniture/body hints) and paragraphs.

``read_page(html)`` parses with Lexbor (selectolax; an HTML5 parser, so the tree is the one a
browser builds) and walks it once, iteratively (no recursion limit), into flat lists:

- ``elements``: every rendered element in document (pre-)order, with its parent's index, the
  index just past its subtree (``end``: element ``j`` is inside ``i`` iff ``i <= j < end[i]``)
  and the hints of ``curation.extraction.vocabulary.classify``;
- ``paragraphs``: the text between block boundaries, each with the element that holds it and
  how many of its characters sit in links and in ``<time>`` elements.

Hidden elements (``hidden``, ``aria-hidden="true"``, inline ``display:none``) and everything in
``NOT_TEXT`` are skipped; ``<br>`` becomes a line break inside its paragraph; the characters in
``<figcaption>`` are counted (``curation.extraction.main_text`` decides about captions).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from curation.extraction.vocabulary import BLOCK_TAGS, CELL_SEPARATOR, CELLS, HINTS, NOT_TEXT, classify

_INVISIBLE_RE = re.compile("[\u00ad\u200b\u200c\u200d\u2060\ufeff]")  # soft hyphen, zero widths
_IN_LINK, _IN_TIME, _IN_CAPTION = 1, 2, 4


@dataclass
class Paragraph:
    element: int  # index of the element that holds the text
    tag: str  # that element's tag
    text: str
    links: int  # characters inside <a>
    timed: int  # characters inside <time>
    captioned: int  # characters inside <figcaption>
    lead_link: int = 0  # characters of the link its text starts with (a teaser's title)


@dataclass
class Page:
    tags: list[str] = field(default_factory=list)
    parent: list[int] = field(default_factory=list)  # -1 for the root (body)
    end: list[int] = field(default_factory=list)
    furniture: list[bool] = field(default_factory=list)
    body_hint: list[bool] = field(default_factory=list)
    names: list[str] = field(default_factory=list)  # the class attribute ("" when none)
    paragraphs: list[Paragraph] = field(default_factory=list)
    tree: object = None  # the parsed document (selectolax), for ``json_ld``

    def json_ld(self) -> list[str]:
        """The contents of the page's ``<script type="application/ld+json">`` elements, head and
        body (looked up only when asked: most pages never need them)."""
        if self.tree is None:
            return []
        return [s.text(deep=True) for s in self.tree.css("script")
                if "ld+json" in (s.attributes.get("type") or "").lower()]

    def add(self, tag: str, parent: int, furniture: bool, body_hint: bool, name: str = "") -> int:
        self.tags.append(tag)
        self.names.append(name)
        self.parent.append(parent)
        self.end.append(0)
        self.furniture.append(furniture)
        self.body_hint.append(body_hint)
        return len(self.tags) - 1


def _clean(parts: list[str]) -> str:
    text = "".join(parts)
    if not text.isascii():  # (a search in C: str.translate looks every character up in a dict)
        text = _INVISIBLE_RE.sub("", text)
    if "\n" not in text:
        return " ".join(text.split())
    lines = (" ".join(line.split()) for line in text.split("\n"))
    return "\n".join(line for line in lines if line)


def parse_html(html: str):
    """The page parsed by Lexbor (selectolax's ``LexborHTMLParser``)."""
    from selectolax.lexbor import LexborHTMLParser

    return LexborHTMLParser(html)


_NOT_TEXT_QUERY = 'script:not([type*="ld+json" i]), style'


def page_text(tree, max_chars: int) -> str:
    """The first ``max_chars`` characters of the text of the page's ``<body>``, a line per text
    node, "" without a body: a cheap look at the page for the early language decision
    (``curation.language``), all in Lexbor's C code, before any walk.

    It removes the page's scripts (except JSON-LD, which ``Page.json_ld`` reads) and styles from
    ``tree``, the only elements of ``NOT_TEXT`` that hold much text: ``read_page`` skips them
    anyway, so its result on the tree is the same (tests/curation/test_early_language.py)."""
    body = tree.body
    if body is None:
        return ""
    for node in tree.css(_NOT_TEXT_QUERY):
        node.decompose()
    return body.text(separator="\n", skip_empty=True)[:max_chars]


def read_page(html) -> Page | None:
    """The page's elements and paragraphs, or None when it has no ``<body>``; ``html``: the
    markup, or the page already parsed (``parse_html``).

    One loop over the tree's nodes, its state in local variables (it runs for every node of
    every page: bench/RESULTS.md, "The read stage: issue 52 item 2"); the current paragraph is
    ``parts`` with its character counts, flushed into ``Paragraph`` at block boundaries."""
    tree = parse_html(html) if isinstance(html, str) else html
    body = tree.body
    if body is None:
        return None
    page = Page(tree=tree)
    tags, names, parents, ends, furniture, body_hint = (page.tags, page.names, page.parent, page.end,
                                                        page.furniture, page.body_hint)
    paragraphs = page.paragraphs
    page.add("body", -1, False, False)
    # The paragraph being collected: its element, text parts, characters in links, <time> and
    # <figcaption>, and the characters of the link it opens with, counted until its first text
    # outside a link (a card's headline, ``curation.extraction.edges``).
    owner, parts, links, timed, captioned, lead_link, lead_open = 0, [], 0, 0, 0, 0, True

    def flush(new_owner: int) -> None:
        nonlocal owner, parts, links, timed, captioned, lead_link, lead_open
        if parts:
            text = _clean(parts)
            if text:
                paragraphs.append(Paragraph(owner, tags[owner], text, links, timed, captioned, lead_link))
            parts, links, timed, captioned, lead_link, lead_open = [], 0, 0, 0, 0, True
        owner = new_owner

    text_id = _text_id()
    # Frames: [next node to visit, element index, flags, is_block].
    stack = [[body.child, 0, 0, True]]
    while stack:
        frame = stack[-1]
        node = frame[0]
        if node is None:
            stack.pop()
            index = frame[1]
            ends[index] = len(tags)
            if frame[3] and stack:  # a block closes: the text after it is a new paragraph
                flush(parents[index])
            continue
        frame[0] = node.next
        if node.tag_id == text_id:  # (an int: cheaper than the tag's name, half the nodes are text)
            if node.is_empty_text_node:  # only ASCII whitespace (layout between tags): a space
                parts.append(" ")
                continue
            t = node.text_content
            if t:
                # Source newlines are layout, not breaks: <br> adds the only "\n".
                parts.append(t.replace("\n", " "))
                flags = frame[2]
                if lead_open and not t.isspace():
                    if flags & _IN_LINK:
                        lead_link += len(t.strip())
                    else:
                        lead_open = False
                if flags:
                    n = len(t.strip())
                    if flags & _IN_LINK:
                        links += n
                    if flags & _IN_TIME:
                        timed += n
                    if flags & _IN_CAPTION:
                        captioned += n
            continue
        tag = node.tag
        if not tag or tag[0] == "-" or tag in NOT_TEXT:
            continue  # comments, doctype, scripts, ...
        if tag == "br":
            parts.append("\n")
            continue
        attrs = node.attributes
        if attrs:
            if "hidden" in attrs or attrs.get("aria-hidden") == "true":
                continue
            style = attrs.get("style")
            if style and "display:none" in style.replace(" ", "").lower():
                continue
            name = attrs.get("class")
            hints = HINTS.get((tag, name, attrs.get("id"), attrs.get("itemprop"))) or classify(tag, attrs)
            name = name or ""
        else:
            hints = _NO_ATTRS.get(tag)
            if hints is None:
                if len(_NO_ATTRS) >= 10_000:  # any name can be a tag: bounded
                    _NO_ATTRS.clear()
                hints = _NO_ATTRS[tag] = classify(tag, attrs)
            name = ""
        index = len(tags)
        tags.append(tag)
        names.append(name)
        parents.append(frame[1])
        ends.append(0)
        furniture.append(hints[0])
        body_hint.append(hints[1])
        block = tag in BLOCK_TAGS
        if block:
            flush(index)
        elif tag in CELLS and parts and not parts[-1].isspace():
            parts.append(CELL_SEPARATOR)
        stack.append([node.child, index, frame[2] | _FLAGS.get(tag, 0), block])
    flush(0)
    return page


_FLAGS = {"a": _IN_LINK, "time": _IN_TIME, "figcaption": _IN_CAPTION}
_TEXT_ID: list[int] = []


def _text_id() -> int:
    """Lexbor's ``tag_id`` of a text node (asked of Lexbor once, not assumed)."""
    if not _TEXT_ID:
        _TEXT_ID.append(parse_html("<p>x</p>").css_first("p").child.tag_id)
    return _TEXT_ID[0]
_NO_ATTRS: dict[str, tuple[bool, bool]] = {}
"""``classify``'s hints of an element without attributes, by tag (filled as tags are met)."""

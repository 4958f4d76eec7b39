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

from dataclasses import dataclass, field

from curation.extraction.vocabulary import BLOCK_TAGS, CELL_SEPARATOR, CELLS, NOT_TEXT, classify

_INVISIBLE = str.maketrans("", "", "\u00ad\u200b\u200c\u200d\u2060\ufeff")  # soft hyphen, zero widths
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


def _hidden(attrs: dict) -> bool:
    if "hidden" in attrs or attrs.get("aria-hidden") == "true":
        return True
    style = attrs.get("style")
    return bool(style) and "display:none" in style.replace(" ", "").lower()


def _clean(parts: list[str]) -> str:
    text = "".join(parts)
    if not text.isascii():
        text = text.translate(_INVISIBLE)
    if "\n" not in text:
        return " ".join(text.split())
    lines = (" ".join(line.split()) for line in text.split("\n"))
    return "\n".join(line for line in lines if line)


class _Collector:
    """Accumulates the text of the current paragraph until a block boundary."""

    def __init__(self, page: Page):
        self.page = page
        self.owner = 0
        self.parts: list[str] = []
        self.links = 0
        self.timed = 0
        self.captioned = 0
        # Characters of the link the paragraph opens with, counted until its first text
        # outside a link: a card's headline (``curation.extraction.edges``).
        self.lead_link, self.lead_open = 0, True

    def text(self, t: str, flags: int) -> None:
        # Source newlines are layout, not breaks: <br> adds the only "\n" (see ``br``).
        self.parts.append(t.replace("\n", " "))
        if self.lead_open and not t.isspace():
            if flags & _IN_LINK:
                self.lead_link += len(t.strip())
            else:
                self.lead_open = False
        if flags:
            n = len(t.strip())
            if flags & _IN_LINK:
                self.links += n
            if flags & _IN_TIME:
                self.timed += n
            if flags & _IN_CAPTION:
                self.captioned += n

    def br(self) -> None:
        self.parts.append("\n")

    def cell(self) -> None:
        if self.parts and not self.parts[-1].isspace():
            self.parts.append(CELL_SEPARATOR)

    def flush(self, new_owner: int) -> None:
        if not self.parts:
            self.owner = new_owner
            return
        text = _clean(self.parts)
        if text:
            self.page.paragraphs.append(Paragraph(self.owner, self.page.tags[self.owner], text,
                                                  self.links, self.timed, self.captioned, self.lead_link))
        self.owner, self.parts, self.links, self.timed, self.captioned = new_owner, [], 0, 0, 0
        self.lead_link, self.lead_open = 0, True


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
    markup, or the page already parsed (``parse_html``)."""
    tree = parse_html(html) if isinstance(html, str) else html
    body = tree.body
    if body is None:
        return None
    page = Page(tree=tree)
    page.add("body", -1, False, False)
    out = _Collector(page)
    # Frames: [next node to visit, element index, flags, is_block].
    stack = [[body.child, 0, 0, True]]
    while stack:
        frame = stack[-1]
        node = frame[0]
        if node is None:
            stack.pop()
            index = frame[1]
            page.end[index] = len(page.tags)
            if frame[3] and stack:  # a block closes: the text after it is a new paragraph
                out.flush(page.parent[index])
            continue
        frame[0] = node.next
        tag = node.tag
        if tag == "-text":
            t = node.text_content
            if t:
                out.text(t, frame[2])
            continue
        if not tag or tag[0] == "-" or tag in NOT_TEXT:
            continue  # comments, doctype, scripts, ...
        if tag == "br":
            out.br()
            continue
        attrs = node.attributes
        if attrs and _hidden(attrs):
            continue
        furniture, body_hint = classify(tag, attrs)
        index = page.add(tag, frame[1], furniture, body_hint, attrs.get("class") or "")
        block = tag in BLOCK_TAGS
        if block:
            out.flush(index)
        elif tag in CELLS:
            out.cell()
        flags = (frame[2] | (_IN_LINK if tag == "a" else 0) | (_IN_TIME if tag == "time" else 0)
                 | (_IN_CAPTION if tag == "figcaption" else 0))
        stack.append([node.child, index, flags, block])
    out.flush(0)
    return page

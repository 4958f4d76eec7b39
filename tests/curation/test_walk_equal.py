"""The extractor's walk after issue 52 (one loop with local state, class/id hints cached per
name with digits folded) gives what it gave before: ``classify`` against its old code on
generated names, and ``read_page``'s elements and paragraphs on real pages against a walk kept
here as it was."""
from __future__ import annotations

import gzip
import random
import re
from pathlib import Path

import pytest

from curation.extraction import vocabulary as v
from curation.extraction.page import Page, Paragraph, parse_html, read_page
from curation.readers import decode_html

FIXTURES = Path(__file__).parent / "fixtures"


def old_words(name: str) -> list[str]:
    return re.findall(r"[a-z][a-z0-9]*|[0-9]+", re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name).lower())


def old_classify(tag: str, attrs: dict) -> tuple[bool, bool]:
    """``vocabulary.classify`` as of 52f5aa7 (without its cache)."""
    cls, ident, prop = attrs.get("class"), attrs.get("id"), attrs.get("itemprop")
    names = (cls.split() if cls else []) + (ident.split() if ident else [])

    def names_furniture() -> bool:
        hit = False
        for name in names:
            named = False
            for w in old_words(name):
                if w in v._CONTENT_WORDS:
                    named = None
                elif w in v._LAYOUT_WORDS:
                    named = False
                    break
                elif w in v._FURNITURE_WORDS or w.startswith(v._FURNITURE_STEMS):
                    named = True
            if named is None:
                return False
            hit = hit or named
        return hit

    def names_body() -> bool:
        return any(set(old_words(n)) & v._DOC_KINDS and set(old_words(n)) & v._DOC_PARTS for n in names)

    furniture = tag in v.FURNITURE_TAGS or (tag not in v._NEVER_FURNITURE and names_furniture())
    return furniture, not furniture and (prop == "articleBody" or names_body())


WORDS = sorted(v._CONTENT_WORDS | v._LAYOUT_WORDS | v._FURNITURE_WORDS | v._DOC_KINDS | v._DOC_PARTS
               | set(v._FURNITURE_STEMS)) + ["x", "wrap", "box", "col", "row", "12", "7b", "ad2", "Post"]


def random_name(rng: random.Random) -> str:
    parts = [rng.choice(WORDS) for _ in range(rng.randrange(1, 4))]
    if rng.random() < 0.3:
        parts = [p.capitalize() for p in parts]
    name = rng.choice(["-", "_", "__", ""]).join(parts)
    if rng.random() < 0.4:
        name += rng.choice(["-", "", "_"]) + str(rng.randrange(100000))
    if rng.random() < 0.2:
        name = str(rng.randrange(10)) + name
    return name


@pytest.mark.parametrize("seed", range(20))
def test_classify_equals_its_old_code(seed):
    rng = random.Random(seed)
    for _ in range(500):
        attrs = {}
        if rng.random() < 0.8:
            attrs["class"] = " ".join(random_name(rng) for _ in range(rng.randrange(0, 4)))
        if rng.random() < 0.5:
            attrs["id"] = random_name(rng)
        if rng.random() < 0.1:
            attrs["itemprop"] = rng.choice(["articleBody", "text", "name"])
        tag = rng.choice(["div", "section", "article", "nav", "aside", "main", "p", "span", "form", "body"])
        assert v.classify(tag, attrs) == old_classify(tag, attrs), (tag, attrs)


def old_read_page(html: str) -> Page | None:
    """``page.read_page`` as of 52f5aa7 (its collector inlined), on the old ``classify``."""
    tree = parse_html(html)
    body = tree.body
    if body is None:
        return None
    page = Page(tree=tree)
    page.add("body", -1, False, False)
    state = {"owner": 0, "parts": [], "links": 0, "timed": 0, "captioned": 0, "lead_link": 0, "lead_open": True}

    def flush(new_owner):
        if state["parts"]:
            text = "".join(state["parts"])
            if not text.isascii():
                text = text.translate(str.maketrans("", "", "\u00ad\u200b\u200c\u200d\u2060\ufeff"))
            if "\n" not in text:
                text = " ".join(text.split())
            else:
                text = "\n".join(x for x in (" ".join(line.split()) for line in text.split("\n")) if x)
            if text:
                page.paragraphs.append(Paragraph(state["owner"], page.tags[state["owner"]], text, state["links"],
                                                 state["timed"], state["captioned"], state["lead_link"]))
            state.update(parts=[], links=0, timed=0, captioned=0, lead_link=0, lead_open=True)
        state["owner"] = new_owner

    stack = [[body.child, 0, 0, True]]
    while stack:
        frame = stack[-1]
        node = frame[0]
        if node is None:
            stack.pop()
            page.end[frame[1]] = len(page.tags)
            if frame[3] and stack:
                flush(page.parent[frame[1]])
            continue
        frame[0] = node.next
        tag = node.tag
        if tag == "-text":
            t = node.text_content
            if t:
                state["parts"].append(t.replace("\n", " "))
                if state["lead_open"] and not t.isspace():
                    if frame[2] & 1:
                        state["lead_link"] += len(t.strip())
                    else:
                        state["lead_open"] = False
                n = len(t.strip())
                for bit, key in ((1, "links"), (2, "timed"), (4, "captioned")):
                    if frame[2] & bit:
                        state[key] += n
            continue
        if not tag or tag[0] == "-" or tag in v.NOT_TEXT:
            continue
        if tag == "br":
            state["parts"].append("\n")
            continue
        attrs = node.attributes
        style = (attrs.get("style") or "").replace(" ", "").lower()
        if attrs and ("hidden" in attrs or attrs.get("aria-hidden") == "true" or "display:none" in style):
            continue
        furniture, body_hint = old_classify(tag, attrs)
        index = page.add(tag, frame[1], furniture, body_hint, attrs.get("class") or "")
        block = tag in v.BLOCK_TAGS
        if block:
            flush(index)
        elif tag in v.CELLS and state["parts"] and not state["parts"][-1].isspace():
            state["parts"].append(v.CELL_SEPARATOR)
        flags = frame[2] | {"a": 1, "time": 2, "figcaption": 4}.get(tag, 0)
        stack.append([node.child, index, flags, block])
    flush(0)
    return page


def fields(page: Page | None):
    if page is None:
        return None
    return (page.tags, page.parent, page.end, page.furniture, page.body_hint, page.names,
            [vars(p) for p in page.paragraphs])


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*/*.html.gz")), ids=lambda p: p.name)
def test_read_page_equals_the_old_walk_on_real_pages(path):
    html = decode_html(gzip.decompress(path.read_bytes()))
    assert fields(read_page(html)) == fields(old_read_page(html))


def test_read_page_equals_the_old_walk_on_small_pages():
    for html in ["<p>a<br>b</p>", "<table><tr><td>x</td><td> </td><td>y</td></tr></table>",
                 "<div hidden>h</div><div style='display: none'>n</div><p aria-hidden=true>a</p><p>ok</p>",
                 "<a href=x>lead link</a> then text<time>today</time><figure><figcaption>cap</figcaption></figure>",
                 "<p>soft\u00adhyphen zero\u200bwidth</p>", "", "<html><head></head></html>",
                 "<p>a<b>b</b>\t<i>c</i>\n \r\n<i>d</i>\x0c<i>e</i></p>", "<td>x</td>\n  <td>y</td>",
                 "<p>\u00a0<b>nbsp</b>\u2003<i>em space</i></p>", "<p>a<!-- c --> <b>b</b></p>"]:
        assert fields(read_page(html)) == fields(old_read_page(html)), html

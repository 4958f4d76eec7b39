"""The edges of an article: what sits next to the body but is not the article.

Two structural signals, no words of the page's text (docs/extraction.md has the measurements):

- **Teaser lists** (``mark_teaser_lists``): other articles' cards ("related", "more stories",
  "trending", a sidebar of deals): a container whose children repeat one template (the same tag
  and class) and each is a *card*: short, opening with a headline-long link, followed by an
  excerpt that is not a link.  Each card is worth a little prose, so together they can outweigh
  a short article and take the main-text choice with them; marked as furniture they are cut
  like a comment section (and restored, like any cut, when they hold most of the page: a
  listing page).  A paragraph that opens with a short link (a term, a name) is not a title:
  glossaries and in-article lists stay.
- **After the body** (``continues_body``): paragraphs around the chosen element are taken in
  when they are substantial (leads and standfirsts sit just outside the body container), but
  after the body's last paragraph come author bios, newsletter and donation calls, reader
  letters and comment prompts.  There only blocks that continue the body are taken: an element
  of the same tag and class as the body's own block at that level (an article split into
  ``section.article-section`` siblings around an advertisement, a Drupal body of repeated
  ``field--item`` blocks).

And one signal from the text's shape: **calls at the end** (``drop_trailing_calls``).  The last
paragraphs of the text, when short and holding a link ("Sign up for our newsletter", "Follow
us on ...", "Submit a letter via this form", "Support our journalism"), are calls to the
reader, not the article: up to three are dropped from the end, stopping at the first longer
or link-free paragraph.
"""
from __future__ import annotations

from curation.extraction.page import Page

ITEMS = frozenset("li dd dt td th".split())
"""Items of a list or table: a list of links that ends an article is its content (sources,
further reading), not a call."""


def mark_teaser_lists(page: Page, chars: list[int], links: list[int], params) -> None:
    """Mark as furniture the containers holding ``params.teaser_min_items`` or more cards of one
    template that make up at least half of the container's characters.  ``chars``/``links``:
    characters and link characters of every element's subtree."""
    n = len(page.tags)
    if n < 2 or not params.teaser_lists:
        return
    parent, paras = page.parent, page.paragraphs
    first = [-1] * n  # each element's first paragraph: where a card's title would be
    for k, p in enumerate(paras):
        if first[p.element] < 0:
            first[p.element] = k
    for i in range(n - 1, 0, -1):  # children come after their parent: one reverse pass
        f, j = first[i], parent[i]
        if f >= 0 and (first[j] < 0 or f < first[j]):
            first[j] = f
    title, longest, excerpt = params.teaser_title_chars, params.teaser_max_chars, params.teaser_excerpt_chars
    cards: dict[tuple[int, str, str], list[int]] = {}  # (container, tag, class) -> [cards, chars]
    for i in range(1, n):
        f = first[i]
        if (f < 0 or paras[f].lead_link < title or chars[i] > longest
                or chars[i] - links[i] < excerpt):
            continue
        group = cards.setdefault((parent[i], page.tags[i], page.names[i]), [0, 0])
        group[0] += 1
        group[1] += chars[i]
    for (container, _, _), (count, total) in cards.items():
        if count >= params.teaser_min_items and 2 * total >= chars[container]:
            page.furniture[container] = True


def body_path(page: Page, best: int, region: int) -> dict[int, int]:
    """For each element strictly between ``region`` and ``best`` (and ``region`` itself): its
    child on the way down to ``best``."""
    path = {}
    c = best
    while c > region:
        path[page.parent[c]] = c
        c = page.parent[c]
    return path


def continues_body(page: Page, i: int, path: dict[int, int]) -> bool:
    """Whether element ``i`` (after the body, inside the region) lies in a block that repeats
    the body's own block where it branches off the path down to the body: the same tag and
    the same class attribute."""
    parent, tags, names = page.parent, page.tags, page.names
    while i >= 0:
        q = parent[i]
        c = path.get(q)
        if c is not None:
            return i != c and tags[i] == tags[c] and names[i] == names[c]
        i = q
    return False


def drop_trailing_calls(decided: list, params) -> None:
    """In ``decided`` (``(paragraph, keep)`` in document order), mark as dropped the kept
    paragraphs at the end that are shorter than ``params.call_max_chars`` and hold a link, at
    most ``params.call_max_paragraphs`` of them; the first list item stops it (``ITEMS``)."""
    dropped = 0
    for j in range(len(decided) - 1, -1, -1):
        p, keep = decided[j]
        if not keep:
            continue
        if (dropped >= params.call_max_paragraphs or not p.links or len(p.text) >= params.call_max_chars
                or p.tag in ITEMS):
            return
        decided[j] = (p, False)
        dropped += 1

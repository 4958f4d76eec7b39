"""Main text of a web page: find the part of the DOM that holds the article, keep its prose.

The design (docs/extraction.md has the measurements behind each step):

1. ``read_page``: one Lexbor parse and one linear walk into elements and paragraphs.
2. Every paragraph gets a value: its characters, minus twice its link characters, minus a fixed
   cost (``paragraph_cost``).  Long prose is worth a lot; menu items, buttons, link lists and
   one-word labels are worth nothing or less.  No word lists: it works in any language.
3. The *cover*: walking down from ``<body>``, the deepest element that still holds
   ``cover_share`` of all positive value.  Elements whose class/id names them furniture
   (comments, sharing, related links, ...; ``vocabulary``) are then cut away, except the ones
   that hold the cover; a cut that would remove more value than it leaves is undone (a whole
   page wrapped in ``<form class="...">`` must survive), and the cover is found again.
4. From the cover, climb to the ancestor with the best value where negative paragraphs weigh
   ``negative_weight`` times: this joins an article split into sibling blocks without taking
   in the page around it.  An element named as the article body (``entry-content``,
   ``itemprop=articleBody``) holding ``body_hint_share`` of the value wins over the climb.
5. Keep every paragraph of that element, except link-dense ones (``max_link_density``), the
   ones in link-dense sub-containers (lists of related links with their heading) or in long
   lists and tables of worthless items (``list_min_chars``), dates alone
   (``<time>``), image captions (credits, photo notes; unless captions hold most of the page's
   text: a gallery) and headings whose section kept nothing.  Paragraphs up to ``extend_levels``
   levels around it are kept too when they are substantial prose (``extend_min_value``): leads
   and standfirsts often sit just outside the body container; after the body's last paragraph
   only blocks that continue it count (bios, newsletter boxes and "more from" follow articles),
   and short linked calls at the very end are dropped (``curation.extraction.edges``).
6. When the text kept is short (``declared_max_chars``) and the page declares its article in
   schema.org JSON-LD (``articleBody``) at ``declared_ratio`` times that length, the declared
   body follows the text (the headline and teaser the DOM shows come first): paywalled and
   script-rendered articles show a teaser in the DOM and the whole article to search engines
   (``curation.extraction.structured``).
"""
from __future__ import annotations

from dataclasses import dataclass

from curation.extraction.edges import body_path, continues_body, drop_trailing_calls, mark_teaser_lists
from curation.extraction.page import Page, Paragraph, read_page
from curation.extraction.structured import declared_article_body
from curation.extraction.vocabulary import HEADINGS, LISTS, TEXT_BLOCKS


@dataclass(frozen=True)
class MainTextParams:
    """Tuning of ``extract_main_text``; defaults chosen on the development half of the
    evaluation pages (docs/extraction.md)."""

    paragraph_cost: float = 25.0
    """Characters a paragraph must have (beyond its links) to add value."""
    link_cost: float = 2.0
    """Each link character costs this much: link text is navigation until proven otherwise."""
    cover_share: float = 0.8
    """The cover holds at least this share of the page's positive value."""
    restore_ratio: float = 1.0
    """A cut furniture element is restored when it holds more than this times the value kept."""
    thread_max_rest: float = 500.0
    """Cut siblings of one template (posts named "comment") are restored together, as above,
    only when the rest of the page is worth less than this: a forum thread, not an article."""
    negative_weight: float = 5.0
    """Weight of negative paragraphs when climbing from the cover."""
    body_hint_share: float = 0.3
    """An element named as the article body wins when it holds this share of the value."""
    extend_levels: int = 3
    """Levels above the chosen element searched for lead paragraphs."""
    extend_min_value: float = 30.0
    """Value a paragraph outside the chosen element needs to be kept."""
    extend_after_body: bool = False
    """True also adds such paragraphs after the chosen element's last one when they do not
    continue it (``curation.extraction.edges.continues_body``): the behaviour before issue 47."""
    max_link_density: float = 0.5
    """Paragraphs with more link characters than this share are dropped."""
    link_list_density: float = 0.5
    """Sub-containers with more link characters than this share are dropped ..."""
    link_list_share: float = 0.5
    """... when they hold less than this share of the chosen element's characters."""
    time_share: float = 0.9
    """Paragraphs that are this much ``<time>`` (a date line) are dropped."""
    list_min_chars: int = 1000
    """A list or table of at least this many characters none of whose items has a positive
    value is dropped."""
    declared_max_chars: int = 1000
    """Text shorter than this (about 150 words) is checked against the JSON-LD ``articleBody``."""
    declared_ratio: float = 3.0
    """... which replaces it when it is at least this many times longer."""
    teaser_lists: bool = False
    """True marks teaser lists as furniture (``curation.extraction.edges.mark_teaser_lists``).
    Off: on the tuning halves it gained on one set (scrapinghub, +0.004 F1, mostly one page),
    on the held-out halves it cost recall (docs/extraction.md)."""
    teaser_title_chars: int = 30
    """A card of a teaser list opens with a link of at least this many characters (a headline;
    ``curation.extraction.edges``) ..."""
    teaser_max_chars: int = 600
    """... holds at most this many characters ..."""
    teaser_excerpt_chars: int = 25
    """... of which at least this many outside links (an excerpt) ..."""
    teaser_min_items: int = 3
    """... and a container of this many cards of one template is a teaser list."""
    call_max_chars: int = 150
    """The text ends with up to ``call_max_paragraphs`` paragraphs shorter than this that hold a
    link: newsletter, donation and "follow us" calls, "submit a letter via this form" ..."""
    call_max_paragraphs: int = 3
    """... dropped from the end (``curation.extraction.edges.drop_trailing_calls``)."""
    keep_headline: bool = True
    """False drops the headlines (``<h1>``) before the text's first paragraph: the annotated
    sets measured and trafilatura treat the headline as metadata, not text (docs/extraction.md
    has the figures both ways)."""

    def __post_init__(self):
        for name in ("cover_share", "body_hint_share", "max_link_density", "link_list_density",
                     "link_list_share", "time_share"):
            if not 0 < getattr(self, name) <= 1:
                raise ValueError(f"{name} must be in (0, 1], got {getattr(self, name)}")
        if self.call_max_paragraphs < 0:
            raise ValueError(f"call_max_paragraphs must be >= 0, got {self.call_max_paragraphs}")
        if self.thread_max_rest < 0:
            raise ValueError(f"thread_max_rest must be >= 0, got {self.thread_max_rest}")
        if self.extend_levels < 0:
            raise ValueError(f"extend_levels must be >= 0, got {self.extend_levels}")
        if self.list_min_chars < 0:
            raise ValueError(f"list_min_chars must be >= 0, got {self.list_min_chars}")
        if self.declared_max_chars < 0:
            raise ValueError(f"declared_max_chars must be >= 0, got {self.declared_max_chars}")
        if self.declared_ratio < 1:
            raise ValueError(f"declared_ratio must be >= 1, got {self.declared_ratio}")
        for name in ("teaser_title_chars", "teaser_max_chars", "teaser_excerpt_chars", "teaser_min_items",
                     "call_max_chars"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")


DEFAULT_PARAMS = MainTextParams()


class _Tree:
    """Per-element sums of the paragraphs kept so far, and tree navigation."""

    def __init__(self, page: Page, values: list[float], params: MainTextParams):
        self.page, self.values, self.params = page, values, params
        n = len(page.tags)
        self.kids: list[list[int]] = [[] for _ in range(n)]
        for i in range(1, n):
            self.kids[page.parent[i]].append(i)

    def sum_up(self, kept: list[int]) -> None:
        page, neg = self.page, self.params.negative_weight
        n = len(page.tags)
        mass, score, chars, links = [0.0] * n, [0.0] * n, [0] * n, [0] * n
        for k in kept:
            p, v = page.paragraphs[k], self.values[k]
            i = p.element
            if v > 0:
                mass[i] += v
                score[i] += v
            else:
                score[i] += v * neg
            chars[i] += len(p.text)
            links[i] += p.links
        parent = page.parent
        for i in range(n - 1, 0, -1):  # children come after their parent: one reverse pass
            j = parent[i]
            mass[j] += mass[i]
            score[j] += score[i]
            chars[j] += chars[i]
            links[j] += links[i]
        self.mass, self.score, self.chars, self.links = mass, score, chars, links

    def cover(self) -> int:
        need = self.params.cover_share * self.mass[0]
        e = 0
        while need > 0:
            nxt = next((c for c in self.kids[e] if self.mass[c] >= need), None)
            if nxt is None or self.page.tags[nxt] in TEXT_BLOCKS:
                return e
            e = nxt
        return e

    def ancestors(self, i: int):
        while i >= 0:
            yield i
            i = self.page.parent[i]


def _cut_furniture(tree: _Tree, protected: set[int]) -> tuple[list[int], dict[int, int]]:
    """Paragraphs outside unprotected furniture, and for each cut element the topmost one."""
    page = tree.page
    top = [-1] * len(page.tags)
    for i in range(1, len(page.tags)):
        t = top[page.parent[i]]
        top[i] = t if t >= 0 else (i if page.furniture[i] and i not in protected else -1)
    kept, cut = [], {}
    for k, p in enumerate(page.paragraphs):
        t = top[p.element]
        if t < 0:
            kept.append(k)
        else:
            cut[t] = t
    return kept, cut


def _choose(tree: _Tree) -> tuple[int, list[int]]:
    """The element that holds the main text, and the paragraphs left after furniture cuts."""
    params, page = tree.params, tree.page
    everything = list(range(len(page.paragraphs)))
    tree.sum_up(everything)
    mark_teaser_lists(page, tree.chars, tree.links, params)
    first = tree.cover()
    before = tree.mass  # value of every element before any cut
    protected = set(tree.ancestors(first))
    for _ in range(3):
        kept, cut = _cut_furniture(tree, protected)
        tree.sum_up(kept)
        best = tree.cover()
        # Cut siblings of one template weigh together: the posts of a forum thread are each
        # named "comment", and together they are the page.
        groups: dict[tuple, list[int]] = {}
        for t in cut:
            groups.setdefault((page.parent[t], page.tags[t], page.names[t]), []).append(t)
        biggest = max(groups.values(), key=lambda g: sum(before[t] for t in g), default=None)
        if biggest is None or sum(before[t] for t in biggest) <= params.restore_ratio * tree.mass[best]:
            break
        if len(biggest) > 1 and tree.mass[best] >= params.thread_max_rest:
            break  # an article with its comments below, not a thread of posts
        protected.update(biggest)
    top = best
    for e in tree.ancestors(best):
        if tree.score[e] > tree.score[top]:
            top = e
    best = top
    total = tree.mass[0]
    hinted = [i for i, h in enumerate(page.body_hint) if h and tree.mass[i] >= params.body_hint_share * total]
    if hinted:
        most = max(tree.mass[i] for i in hinted)
        best = [i for i in hinted if tree.mass[i] >= 0.9 * most][-1]  # the innermost near the top
    return best, kept


def _link_lists(tree: _Tree, root: int, skip: int | None = None) -> list[bool]:
    """For each element under ``root``: whether it lies in a small link-dense container, or in
    a long list or table of items none of which is worth anything (tag clouds, archive and
    index listings: thousands of one-word items next to an article), below ``root``; the
    subtree of ``skip`` is judged separately."""
    page, params = tree.page, tree.params
    limit = params.link_list_share * tree.chars[root]
    flagged = [False] * len(page.tags)
    for i in range(root + 1, page.end[root]):
        if skip is not None and skip <= i < page.end[skip]:
            continue
        flagged[i] = flagged[page.parent[i]] or (
            tree.links[i] > params.link_list_density * tree.chars[i] and tree.chars[i] < limit) or (
            page.tags[i] in LISTS and tree.mass[i] == 0 and tree.chars[i] >= params.list_min_chars)
    return flagged


def _drop_empty_sections(kept: list[tuple[Paragraph, bool]]) -> list[Paragraph]:
    """Drop headings whose section (up to the next heading of the same or a higher level)
    keeps no paragraph: the title of a removed "related articles" list."""
    out = []
    for i, (p, keep) in enumerate(kept):
        if not keep:
            continue
        if p.tag in HEADINGS:
            level, empty = p.tag[1], True
            for q, keep_q in kept[i + 1:]:
                if q.tag in HEADINGS:
                    if q.tag[1] <= level:
                        break
                elif keep_q:
                    empty = False
                    break
            if empty:
                continue
        out.append(p)
    return out


def extract_main_text(html, params: MainTextParams = DEFAULT_PARAMS) -> str:
    """The main text of an HTML page (its markup, or the page parsed by ``page.parse_html``):
    paragraphs separated by blank lines, ``<br>`` as line breaks; "" when the page has no body
    or no text."""
    page = read_page(html)
    if page is None:
        return ""
    text = _dom_text(page, params) if page.paragraphs else ""
    if len(text) < params.declared_max_chars:
        declared = declared_article_body(page.json_ld())
        if len(declared) >= params.declared_ratio * max(1, len(text)):
            # The DOM's paragraphs (headline, standfirst) first, those the body repeats left out.
            shown = [p for p in text.split("\n\n") if p and p not in declared]
            return "\n\n".join(shown + [declared])
    return text


def _dom_text(page: Page, params: MainTextParams) -> str:
    """Steps 2-5 of the module's design on a page with paragraphs."""
    captions = sum(p.captioned for p in page.paragraphs)
    gallery = 2 * captions > sum(len(p.text) for p in page.paragraphs)  # captions ARE the text
    if gallery:  # "slide-caption" names them furniture; here they are the article
        page.furniture = [f and t != "figcaption" for f, t in zip(page.furniture, page.tags)]
    page.paragraphs = [p for p in page.paragraphs if p.timed < params.time_share * len(p.text)
                       and (gallery or 2 * p.captioned < len(p.text))]
    values = [len(p.text) - params.link_cost * p.links - params.paragraph_cost for p in page.paragraphs]
    tree = _Tree(page, values, params)
    best, kept = _choose(tree)
    region = best
    for _ in range(params.extend_levels):
        if region > 0:
            region = page.parent[region]
    in_best = _link_lists(tree, best)
    in_region = _link_lists(tree, region, skip=best)
    end, end_region = page.end[best], page.end[region]
    inside = {page.paragraphs[k].text for k in kept if best <= page.paragraphs[k].element < end}
    decided = []
    # Around the body, only leads come before it; after it, only blocks that continue it
    # (``edges.continues_body``): what follows an article's last paragraph is its edge.
    last = max((k for k in kept if best <= page.paragraphs[k].element < end), default=-1)
    path = body_path(page, best, region)
    for k in kept:
        p = page.paragraphs[k]
        i = p.element
        linky = p.links > params.max_link_density * len(p.text)
        if best <= i < end:
            decided.append((p, not linky and not in_best[i]))
        elif (region <= i < end_region and values[k] >= params.extend_min_value and p.text not in inside
              and (k < last or params.extend_after_body or continues_body(page, i, path))):
            # (a standfirst that repeats the first paragraph is not added twice)
            decided.append((p, not linky and not in_region[i]))
    drop_trailing_calls(decided, params)
    if not params.keep_headline:  # the first <h1> before any paragraph of text
        first_text = next((j for j, (p, keep) in enumerate(decided) if keep and p.tag not in HEADINGS),
                          len(decided))
        decided = [(p, keep and not (j < first_text and p.tag == "h1"))
                   for j, (p, keep) in enumerate(decided)]
    return "\n\n".join(p.text for p in _drop_empty_sections(decided))

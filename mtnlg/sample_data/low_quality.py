"""Low-quality web pages that pass every heuristic filter: work for the quality classifier.

Real crawls are full of pages that are fluent, English, long enough and not repetitive enough
for the Gopher/C4 rules, yet worthless as training text: keyword-stuffed SEO pages, product and
classified-listing pages, templated scraper pages, machine-translated text, link farms and
pages that are nothing but a cookie-consent wall.  Each generator here returns one such page as
blocks (heading, paragraph, list item, table row, link paragraph, button) that
``html_page.render`` turns into the page's main content.  Text comes from spun templates
(``low_quality_lexicon.py``, written for this project) and, where such sites scrape or
translate real text, from the sample's own Wikipedia pool; every draw goes through the given
``random.Random``, so a seed fixes every page.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Callable

from . import low_quality_lexicon as lex
from .text_pool import ChunkPool, split_sentences, vocabulary, wiki_articles

_SPUN = re.compile(r"\[([^\[\]]*)\]")


@dataclass(frozen=True)
class Block:
    tag: str
    """``h1``, ``h2``, ``h3``, ``p``, ``li`` (consecutive items form one list), ``tr`` (a
    "key: value" table row), ``link`` (a paragraph that begins with a link) or ``button``."""
    text: str
    href: str = ""
    anchor: str = ""
    """``link`` only: the linked words at the start of ``text``."""


@dataclass
class LowQualityPage:
    kind: str
    title: str
    blocks: list[Block] = field(default_factory=list)
    site: str = ""
    """The site's slug (its host name is ``www.<site>.example.com``)."""
    style: str = "portal"
    """The site's chrome (``html_page.render``): ``bare`` for a consent wall, otherwise one of
    ``low_quality_lexicon.SITE_STYLES``: such sites are not the sample's news sites."""

    @property
    def text(self) -> str:
        return "\n".join(b.text for b in self.blocks)


def spin(template: str, rng: random.Random, **slots: object) -> str:
    """One spun variant: each ``[a|b|c]`` becomes one alternative, then ``{slot}``s are filled;
    the first letter is capitalised, as a sentence."""
    text = _SPUN.sub(lambda m: rng.choice(m.group(1).split("|")), template).format(**slots)
    return text[:1].upper() + text[1:]


def _brand(rng: random.Random) -> str:
    return f"{rng.choice(lex.BRAND_HEADS)} {rng.choice(lex.BRAND_TAILS)}"


def _slug(*parts: str) -> str:
    return "-".join(re.sub(r"[^a-z0-9]+", "-", p.lower()).strip("-") for p in parts if p)


def _title_case(text: str) -> str:
    return " ".join(w[:1].upper() + w[1:] for w in text.split())


def seo_page(rng: random.Random, pools: dict[str, ChunkPool]) -> LowQualityPage:
    kw, offer = rng.choice(lex.SEO_KEYWORDS)
    city, brand, year = rng.choice(lex.CITIES), _brand(rng), rng.choice(lex.YEARS)

    def said(template: str) -> str:
        return spin(template, rng, kw=kw, offer=offer, city=city, brand=brand, year=year,
                    mod=rng.choice(lex.SEO_MODIFIERS), n=rng.randint(5, 30),
                    pct=rng.choice((10, 15, 20, 25, 30, 40, 50)))

    sentences = [said(t) for t in rng.sample(lex.SEO_SENTENCES, len(lex.SEO_SENTENCES))]
    mod = rng.choice(lex.SEO_MODIFIERS)
    site = _slug(brand) if rng.random() < 0.5 else _slug(mod, kw, city)  # or an exact-match domain
    title = _title_case(f"{mod} {kw} in {city} {year}") + f" | {brand}"
    page = LowQualityPage("keyword_stuffed_seo", title, site=site, style="business")
    page.blocks.append(Block("h1", _title_case(f"{mod} {kw} in {city}")))
    for heading, part in ((None, sentences[0:4]), (f"{kw} {city}", sentences[4:8]),
                          (f"Why choose {brand}", sentences[8:12])):
        if heading:
            page.blocks.append(Block("h2", _title_case(heading)))
        page.blocks.append(Block("p", " ".join(part)))
    page.blocks.append(Block("h2", "Frequently Asked Questions"))
    for i, q in enumerate(rng.sample(lex.SEO_QUESTIONS, 2)):
        page.blocks += [Block("h3", said(q)), Block("p", " ".join(sentences[12 + 2 * i: 14 + 2 * i]))]
    page.blocks.append(Block("p", " ".join(sentences[16:])))
    related = [f"{m} {kw} {c}" for m, c in zip(rng.sample(lex.SEO_MODIFIERS, 2),
                                                 rng.sample(lex.CITIES, 2))]
    related += [f"{kw} near me", f"{kw} prices {year}"]
    rng.shuffle(related)
    page.blocks += [Block("h2", "Related Searches"), Block("p", ", ".join(related) + ".")]
    return page


def product_page(rng: random.Random, pools: dict[str, ChunkPool]) -> LowQualityPage:
    product, features, specs = rng.choice(lex.PRODUCTS)
    brand = rng.choice(lex.BRAND_HEADS) + rng.choice(("Tech", "Home", "Life", "Gear", "Pro", "Co"))
    name = f"{brand} {rng.choice(lex.PRODUCT_ADJECTIVES)} {_title_case(product)}"
    price = rng.randint(15, 180)
    old = int(price * rng.uniform(1.2, 1.8))
    site = _slug(brand, rng.choice(("store", "shop", "outlet", "direct")))
    page = LowQualityPage("product_page", f"{name} | Buy online at the best price", site=site, style="shop")
    page.blocks += [
        Block("h1", name),
        Block("p", f"Rated {rng.randint(40, 49) / 10} out of 5 stars by {rng.randint(12, 2400)} "
                   f"customers. {rng.choice(('Best seller', 'Top rated', 'New arrival', 'Deal of the day'))}."),
        Block("p", f"Now ${price}.99, was ${old}.99. You save {round(100 * (old - price) / old)} percent. "
                   + rng.choice(("In stock and ready to ship.", "Only a few left in stock.", "Ships within two days."))),
        Block("button", "Add to Cart"), Block("button", "Buy Now"), Block("h2", "About this item")]
    for feat in rng.sample(features, min(4, len(features))):
        page.blocks.append(Block("li", feat.upper() + ": " + spin(lex.FEATURE_BULLET, rng, f=feat)))
    page.blocks.append(Block("h2", "Product Description"))
    pitch = []
    for t in rng.sample(lex.PRODUCT_PITCH, len(lex.PRODUCT_PITCH)):
        f1, f2 = rng.sample(features, 2)
        pitch.append(spin(t, rng, name=name, product=product, feature=f1, feature2=f2,
                          price=f"${rng.choice((25, 35, 49))}"))
    page.blocks += [Block("p", " ".join(pitch[:3])), Block("p", " ".join(pitch[3:]))]
    page.blocks.append(Block("h2", "Specifications"))
    page.blocks += [Block("tr", f"{k}: {rng.choice(v)}") for k, v in specs.items()]
    page.blocks.append(Block("tr", f"Brand: {brand}"))
    page.blocks.append(Block("h2", "Customer Reviews"))
    for review, who in zip(rng.sample(lex.REVIEWS, 3), rng.sample(lex.FIRST_NAMES, 3)):
        page.blocks.append(Block("p", f"{review} Reviewed by {who}, verified buyer."))
    page.blocks.append(Block("h2", "Customers who viewed this item also viewed"))
    for other, _, _ in rng.sample(lex.PRODUCTS, 3):
        price = rng.randint(12, 150)
        page.blocks.append(Block("li", f"{rng.choice(lex.BRAND_HEADS)} {_title_case(other)} from ${price}.99"))
    return page


def listing_page(rng: random.Random, pools: dict[str, ChunkPool]) -> LowQualityPage:
    what, templates = rng.choice(lex.LISTINGS)
    city, total = rng.choice(lex.CITIES), rng.randint(40, 900)
    shown = rng.randint(4, 6)
    site = _slug(city, rng.choice(("ads", "classifieds", "market", "trader", "swap")))
    page = LowQualityPage("listing_page", f"{_title_case(what)} in {city} - {total} results", site=site,
                          style="marketplace")
    page.blocks += [Block("h1", _title_case(f"{what} in {city}")),
                    Block("p", spin(lex.LISTING_INTRO, rng, k=shown, total=total, what=what, city=city))]
    for _ in range(shown):
        slots = dict(area=rng.choice(lex.AREAS), year=rng.randint(2008, 2020), car=rng.choice(lex.CARS),
                     job=rng.choice(lex.JOBS), rooms=rng.choice(("one", "two", "three", "four")))
        if what.startswith("apartments"):
            slots["price"] = f"${rng.randint(8, 35)}00"
            head = f"{slots['rooms']} bedroom apartment in {slots['area']}"
        elif what.startswith("used cars"):
            slots["price"] = f"${rng.randint(3, 28)},{rng.randint(0, 9)}00"
            head = f"{slots['year']} {slots['car']}"
        else:
            slots["price"], head = f"${rng.randint(12, 24)}", f"{slots['job']} in {slots['area']}"
        page.blocks += [Block("h2", _title_case(head)),
                        Block("p", " ".join(spin(templates[i], rng, **slots) for i in
                                            sorted(rng.sample(range(len(templates)), rng.randint(4, 6))))),
                        Block("p", f"Posted {rng.randint(2, 20)} {rng.choice(('days', 'hours'))} ago")]
    page.blocks.append(Block("p", spin("[Next page|Load more results|See more {what}]", rng, what=what)))
    return page


def templated_page(rng: random.Random, pools: dict[str, ChunkPool]) -> LowQualityPage:
    """A scraper site's generated page: a word-dictionary page or an auto-built tag page."""
    if rng.random() < 0.5:
        vocab = vocabulary()
        word = rng.choice(vocab)
        rhymes = [w for w in vocab if w[-3:] == word[-3:] and w != word][:8] or rng.sample(vocab, 4)
        starts = [w for w in vocab if w[:3] == word[:3] and w != word][:8] or rng.sample(vocab, 4)
        examples = [s for a in rng.sample(wiki_articles(), 40) for p in a["paragraphs"]
                    for s in split_sentences(p) if f" {word} " in s and len(s.split()) < 40][:3]
        slots = dict(word=word, letters=len(word), first=word[0].upper(), last=word[-1].upper(),
                     vowels=sum(c in "aeiou" for c in word), moves=rng.randint(2, 90),
                     rank=rng.randint(100, 9000), rhymes=", ".join(rhymes), prefix=word[:3],
                     starts=", ".join(starts), example=" ".join(examples) or "No example found yet.")
        page = LowQualityPage("templated", f"{word.capitalize()} - meaning, definition and rhymes",
                              site=_slug(rng.choice(("word", "define", "meaning", "lexi")),
                                         rng.choice(("hub", "finder", "base", "zone", "point"))))
        page.blocks.append(Block("h1", f"What does {word} mean?"))
        said = [spin(t, rng, **slots) for t in lex.WORD_PAGE]
        page.blocks += [Block("p", " ".join(said[:3])), Block("h2", "Rhymes and related words"),
                        Block("p", said[3]), Block("p", said[4]), Block("h2", "Examples"),
                        Block("p", said[5]), Block("p", " ".join(said[6:]))]
        return page
    articles = rng.sample(wiki_articles(), 9)
    title, others = articles[0]["title"], articles[1:]
    said = [spin(t, rng, title=title, others=", ".join(a["title"] for a in others[4:]))
            for t in lex.TAG_PAGE]
    site = _slug(rng.choice(lex.BRAND_HEADS), rng.choice(("news", "feed", "buzz", "trends")))
    page = LowQualityPage("templated", f"{title} - news, photos and videos", site=site)
    page.blocks += [Block("h1", f"{title}: latest news"), Block("p", " ".join(said[:2])),
                    Block("h2", "Top stories")]
    for art, head in zip(others[:4], rng.sample(lex.TAG_HEADLINES, 4)):
        lead = split_sentences(art["paragraphs"][0])[0]  # the scraped opening sentence as a teaser
        page.blocks += [Block("h3", head.format(art["title"])),
                        Block("p", f"{lead} {rng.choice(lex.TAG_TEASER_END)}")]
    page.blocks.append(Block("p", said[2]))
    return page


def _mistranslate(sentence: str, rng: random.Random) -> str:
    out = []
    for w in sentence.split():
        low = w.lower()
        if low in ("the", "a", "an") and rng.random() < 0.45:
            continue
        if low in lex.MT_PREPOSITIONS and rng.random() < 0.3:
            w = rng.choice([p for p in lex.MT_PREPOSITIONS if p != low])
        elif low in lex.MT_REPLACEMENTS:
            rep = lex.MT_REPLACEMENTS[low]
            w = rep[:1].upper() + rep[1:] if w[:1].isupper() else rep
        out.append(w)
    for i in range(1, len(out) - 2):  # word order of the source language leaks through
        if rng.random() < 0.06 and out[i].isalpha() and out[i + 1].isalpha():
            out[i], out[i + 1] = out[i + 1], out[i]
    text = " ".join(out)
    return text[:1].upper() + text[1:]


def machine_translated_page(rng: random.Random, pools: dict[str, ChunkPool]) -> LowQualityPage:
    chunks = pools["wiki"].take_words(rng.randint(220, 380))
    title = wiki_articles()[chunks[0][0].origin]["title"]
    site = _slug(rng.choice(lex.BRAND_HEADS), rng.choice(("info", "wiki", "facts", "knowledge")))
    page = LowQualityPage("machine_translated", spin(rng.choice(lex.MT_TITLES), rng, title=title), site=site)
    page.blocks.append(Block("h1", title))
    for chunk in chunks:
        page.blocks.append(Block("p", " ".join(_mistranslate(u.text, rng) for u in chunk)))
    return page


def link_farm_page(rng: random.Random, pools: dict[str, ChunkPool]) -> LowQualityPage:
    cat = rng.choice(lex.DIRECTORY_CATEGORIES)
    topics = lex.DIRECTORY_TOPICS[cat]
    site = _slug(rng.choice(lex.BRAND_HEADS), rng.choice(("links", "directory", "web-guide", "sites")))
    page = LowQualityPage("link_farm", f"{cat} Web Directory - Page {rng.randint(2, 30)}", site=site,
                          style="directory")
    page.blocks += [Block("h1", f"{cat} Directory"),
                    Block("p", " ".join(spin(t, rng, cat=cat.lower()) for t in lex.LINK_FARM_INTRO))]
    for _ in range(rng.randint(10, 14)):
        site, topic = _brand(rng), rng.choice(topics)
        host = "www." + re.sub(r"[^a-z]", "", (site + topic).lower())[:24] + ".example.com"
        blurbs = " ".join(spin(t, rng, site=site, topic=topic, year=rng.randint(1995, 2015))
                          for t in rng.sample(lex.DIRECTORY_BLURBS, 3))
        page.blocks.append(Block("link", f"{site} - {blurbs} {host}", href=f"http://{host}/", anchor=site))
    page.blocks.append(Block("p", spin("[Submit your site|Add a link|Suggest a site] to the {cat} directory. "
                                       "[Featured listings|Premium listings] from ${p} per year.",
                                       rng, cat=cat.lower(), p=rng.choice((9, 19, 29, 49)))))
    return page


def cookie_consent_page(rng: random.Random, pools: dict[str, ChunkPool]) -> LowQualityPage:
    site = _brand(rng)
    title = rng.choice((site, f"{site} - Privacy settings", "Before you continue"))
    page = LowQualityPage("cookie_consent", title, site=_slug(site), style="bare")
    page.blocks.append(Block("h1", rng.choice(("Before you continue", "Your privacy choices",
                                                "Privacy settings", "Cookie consent", f"Welcome to {site}"))))
    # The notice, then what each kind of cookie does: two long paragraphs, as consent walls have.
    notice = sorted(rng.sample(range(6), rng.randint(4, 6)))
    kinds = sorted(rng.sample(range(6, len(lex.CONSENT_TEMPLATES)), rng.randint(2, 4)))
    partners = rng.randint(120, 980)
    for part in (notice, kinds):
        said = (spin(lex.CONSENT_TEMPLATES[i], rng, site=site, partners=partners) for i in part)
        page.blocks.append(Block("p", " ".join(said)))
    page.blocks.append(Block("h2", rng.choice(("We and our partners process data to",
                                                "Purposes", "How we use your data"))))
    page.blocks += [Block("li", p) for p in rng.sample(lex.CONSENT_PURPOSES, rng.randint(4, 7))]
    vendors = {f"{rng.choice(lex.VENDOR_HEADS)}{rng.choice(lex.VENDOR_TAILS)} {rng.choice(lex.VENDOR_FORMS)}"
               for _ in range(rng.randint(8, 16))}
    page.blocks.append(Block("p", "Our partners include " + ", ".join(sorted(vendors)) + " and others."))
    page.blocks += [Block("button", b) for b in rng.sample(lex.CONSENT_BUTTONS, 3)]
    return page


GENERATORS: dict[str, Callable[[random.Random, dict[str, ChunkPool]], LowQualityPage]] = {
    "keyword_stuffed_seo": seo_page, "product_page": product_page, "listing_page": listing_page,
    "templated": templated_page, "machine_translated": machine_translated_page,
    "link_farm": link_farm_page, "cookie_consent": cookie_consent_page,
}
LOW_QUALITY_KINDS = tuple(GENERATORS)
CSS_CLASS = {"product_page": "product-detail", "listing_page": "search-results",
             "link_farm": "directory", "cookie_consent": "consent-dialog"}
"""The class of the main block's ``<div>`` (``content`` for the other kinds), as such sites name it."""


def low_quality_page(kind: str, rng: random.Random, pools: dict[str, ChunkPool]) -> LowQualityPage:
    if kind not in GENERATORS:
        raise ValueError(f"unknown low-quality kind {kind!r}; expected one of {LOW_QUALITY_KINDS}")
    return GENERATORS[kind](rng, pools)

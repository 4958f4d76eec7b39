"""Decide every document of the corpus: its source, text and primary ground-truth category.

Sizes follow the blend (half blend weight, half uniform, so small sources still get
documents); planted categories scale with ``docs`` and have floors, so even a tiny corpus has
every kind of problem.  Everything is drawn from string-seeded ``random.Random`` instances, so
a seed fixes the corpus exactly.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from . import low_quality, planting
from .families import FAMILIES
from .sources import BLEND_WEIGHTS, CC_SLUGS, SOURCE_SLUGS, UNUSED_PILE_SLUG
from .text_pool import build_pools, vocabulary

MIN_WORDS, MAX_WORDS = 200, 900

# Source patterns cycled through when planting (within-source and cross-source on purpose).
EXACT_DUP_GROUPS = (("pile_cc", "pile_cc"), ("openwebtext2", "realnews"), ("books3", "gutenberg_pg19"),
                    ("cc_2020_50", "cc_2021_04"), ("wikipedia", "wikipedia", "pile_cc"),
                    ("cc_stories", "books3"), ("cc_2021_04", "cc_2021_04"), ("stackexchange", "pile_cc"))
NEAR_DUP_WITHIN = ("openwebtext2", "pile_cc", "wikipedia", "realnews", "books3", "arxiv")
NEAR_DUP_CROSS = (("openwebtext2", "realnews"), ("pile_cc", "openwebtext2"), ("wikipedia", "pile_cc"),
                  ("books3", "cc_stories"), ("realnews", "pile_cc"), ("bookcorpus2", "books3"))
SPAM_SOURCES = ("cc_2020_50", "cc_2021_04", "pile_cc", "cc_2021_04", "openwebtext2", "cc_2020_50")
NON_ENGLISH_SOURCES = ("cc_2020_50", "cc_2021_04", "pile_cc", "realnews", "openwebtext2")
CONTAMINATED_SOURCES = ("openwebtext2", "wikipedia", "realnews", "cc_2021_04", "books3", "pile_cc")
TOO_SHORT_SOURCES = ("pile_cc", "cc_2020_50", "realnews", "cc_stories", "openwebtext2", "cc_2021_04",
                     "stackexchange")


@dataclass
class PlannedDoc:
    source: str  # source slug
    title: str
    text: str  # the document text (for CC: the page's main article, "" for boilerplate only)
    category: str  # primary ground-truth category
    detail: dict[str, Any] = field(default_factory=dict)
    render_seed: int = 0  # CC pages: seeds the boilerplate, so duplicate pages are byte-identical
    id: str = ""  # assigned when placed in a file


@dataclass
class Plan:
    docs: list[PlannedDoc]
    exact_groups: list[list[PlannedDoc]]
    near_pairs: list[tuple[PlannedDoc, PlannedDoc, float, float]]  # a, b, jaccard, target
    lambada: list[dict]
    squad: list[dict]


def source_quotas(docs: int) -> dict[str, int]:
    slugs = list(SOURCE_SLUGS.values())
    uniform = 1.0 / len(slugs)
    quotas = {SOURCE_SLUGS[n]: max(4, round(docs * (0.5 * w + 0.5 * uniform))) for n, w in BLEND_WEIGHTS.items()}
    quotas[UNUSED_PILE_SLUG] = max(3, docs // 100)
    return quotas


def make_plan(docs: int, seed: int) -> Plan:
    rng = random.Random(f"{seed}/plan")
    pools = build_pools(seed)
    vocab = vocabulary()
    out: list[PlannedDoc] = []

    def body(slug: str, words: int | None = None) -> tuple[str, str]:
        return FAMILIES[slug](pools, rng, words or rng.randint(MIN_WORDS, MAX_WORDS))

    def add(slug: str, title: str, text: str, category: str, **detail: Any) -> PlannedDoc:
        d = PlannedDoc(slug, title, text, category, detail, render_seed=rng.getrandbits(32))
        out.append(d)
        return d

    exact_groups = []
    for g in range(max(6, docs // 60)):
        members = EXACT_DUP_GROUPS[g % len(EXACT_DUP_GROUPS)]
        title, text = body(members[0])
        seed_html = rng.getrandbits(32)
        group = [add(s, title, text, "exact_duplicates") for s in members]
        for d in group:  # CC copies of one page render identically (same page, two crawls)
            d.render_seed = seed_html
        exact_groups.append(group)

    near_pairs = []
    for r in range(max(1, docs // 800)):
        for i, level in enumerate(planting.NEAR_DUP_LEVELS):
            within = NEAR_DUP_WITHIN[(i + r) % len(NEAR_DUP_WITHIN)]
            for a_src, b_src in ((within, within), NEAR_DUP_CROSS[(i + r) % len(NEAR_DUP_CROSS)]):
                title, text = body(a_src, rng.randint(500, MAX_WORDS))
                variant, j = planting.near_duplicate(text, level, rng, vocab)
                a = add(a_src, title, text, "near_duplicates")
                b = add(b_src, title, variant, "near_duplicates")
                near_pairs.append((a, b, j, level))

    for i in range(max(10, docs * 3 // 100)):
        kind = planting.SPAM_KINDS[i % len(planting.SPAM_KINDS)]
        slug = SPAM_SOURCES[i % len(SPAM_SOURCES)]
        text = planting.spam(kind, rng)
        if kind == "boilerplate_only" and slug in CC_SLUGS:
            text = ""  # the page is nothing but navigation, ads and footer
        add(slug, "Great deals", text, "spam", kind=kind)

    for i in range(max(8, docs * 15 // 1000)):
        lang, text = planting.non_english(i, rng)
        add(NON_ENGLISH_SOURCES[i % len(NON_ENGLISH_SOURCES)], text.split(".")[0][:60], text,
            "non_english", lang=lang)

    passages = planting.eval_passages(64)
    lambada = [{"text": p["text"]} for p in passages[0::2]]
    squad = planting.squad_rows(passages[1::2], rng)
    for i in range(max(6, docs // 100)):
        slug = CONTAMINATED_SOURCES[i % len(CONTAMINATED_SOURCES)]
        task, passage = ("lambada", lambada[(i // 2) % len(lambada)]["text"]) if i % 2 == 0 else \
                        ("squad_v2", squad[(i // 2) % len(squad)]["context"])
        title, text = body(slug)
        paras = text.split("\n\n")
        paras.insert(max(1, len(paras) // 2), passage)
        add(slug, title, "\n\n".join(paras), "contaminated", task=task, passage=passage)

    for i in range(max(6, docs // 100)):
        add(TOO_SHORT_SOURCES[i % len(TOO_SHORT_SOURCES)], "Note", planting.too_short(rng), "too_short")

    planted: dict[str, int] = {}
    for d in out:
        planted[d.source] = planted.get(d.source, 0) + 1
    for slug, quota in source_quotas(docs).items():
        for _ in range(max(2, quota - planted.get(slug, 0))):
            title, text = body(slug)
            add(slug, title, text, "clean")

    # After the clean fill, so they add to the Common Crawl quotas instead of displacing clean
    # pages (the classifier's precision is measured against those).
    for i in range(max(2 * len(low_quality.LOW_QUALITY_KINDS), docs * 4 // 100)):
        kind = low_quality.LOW_QUALITY_KINDS[i % len(low_quality.LOW_QUALITY_KINDS)]
        page = low_quality.low_quality_page(kind, rng, pools)
        add(CC_SLUGS[i % len(CC_SLUGS)], page.title, page.text, "low_quality", kind=kind, page=page)
    return Plan(out, exact_groups, near_pairs, lambada, squad)

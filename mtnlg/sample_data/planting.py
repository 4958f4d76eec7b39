"""What gets planted: near-duplicate variants at measured Jaccard, spam, too-short and
non-English documents, and the eval-task passages used for contamination.

Jaccard here is always the TRUE Jaccard of word 5-gram sets of the texts as written
(lowercased, whitespace-split), the same definition the ground truth records.
"""
from __future__ import annotations

import random

from .text_pool import eval_source_articles, non_english_texts, split_sentences

NEAR_DUP_LEVELS = (0.95, 0.9, 0.85, 0.7, 0.5, 0.3)
SPAM_KINDS = ("keyword_stuffing", "link_farm", "repeated_lines", "boilerplate_only", "gibberish")


def shingles(text: str, n: int = 5) -> set[tuple[str, ...]]:
    words = text.lower().split()
    if len(words) < n:
        return {tuple(words)}
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def jaccard(a: str, b: str) -> float:
    sa, sb = shingles(a), shingles(b)
    return len(sa & sb) / len(sa | sb) if sa | sb else 1.0


def near_duplicate(base: str, target: float, rng: random.Random, vocab: list[str]) -> tuple[str, float]:
    """Edit ``base`` until its Jaccard with ``base`` falls to just below ``target``.

    Single-word substitutions spread over the text (each breaks up to five 5-grams) give
    fine control at every level; the returned Jaccard is measured, not estimated, and is the
    first value at or below ``target`` (within about 1% of it for 300+ word documents).
    """
    words = base.split(" ")
    base_set = shingles(base)
    positions = [i for i, w in enumerate(words) if w and "\n" not in w]
    rng.shuffle(positions)
    replacements = [rng.choice(vocab) for _ in positions]

    def edited(k: int) -> tuple[str, float]:
        out = list(words)
        for i, r in zip(positions[:k], replacements[:k]):
            out[i] = r
        text = " ".join(out)
        s = shingles(text)
        return text, len(s & base_set) / len(s | base_set)

    # Jaccard falls (almost) monotonically with the number of edits applied in this fixed
    # order: binary-search the fewest edits that reach the target, then measure exactly.
    lo, hi = 1, len(positions)
    if edited(hi)[1] > target:
        raise ValueError(f"cannot reach Jaccard {target} by word edits")
    while lo < hi:
        mid = (lo + hi) // 2
        if edited(mid)[1] <= target:
            hi = mid
        else:
            lo = mid + 1
    return edited(lo)


def spam(kind: str, rng: random.Random) -> str:
    """A low-quality page body of the given kind (long enough to pass a length filter)."""
    if kind == "keyword_stuffing":
        kws = rng.sample(["cheap", "best", "buy", "online", "discount", "casino", "loans", "free",
                          "pills", "replica", "watches", "bonus", "deal", "sale", "win"], 6)
        return " ".join(rng.choice(kws) for _ in range(rng.randint(250, 400)))
    if kind == "link_farm":
        sites = [f"http://{rng.choice(['best', 'top', 'cheap', 'free'])}-{rng.choice(['deals', 'loans', 'pills', 'slots'])}{rng.randint(1, 9999)}.example.com/"
                 for _ in range(rng.randint(120, 200))]
        return "\n".join(f"Click here {s} {s}page{i}.html" for i, s in enumerate(sites))
    if kind == "repeated_lines":
        line = rng.choice(["Buy now and save big on all items!", "This domain may be for sale.",
                           "Subscribe to our newsletter for the latest updates.",
                           "Limited time offer, act now!"])
        return "\n".join([line] * rng.randint(80, 150))
    if kind == "boilerplate_only":
        parts = ["Home", "About us", "Contact", "Privacy Policy", "Terms of Service", "Sitemap",
                 "Login", "Register", "Cart", "Careers", "Cookie settings", "Accessibility"]
        lines = [" | ".join(rng.sample(parts, 6)) for _ in range(rng.randint(40, 70))]
        lines.append(f"Copyright {rng.randint(2005, 2020)} All rights reserved.")
        return "\n".join(lines)
    if kind == "gibberish":
        alphabet = "#$%&*@!^~<>{}[]|/\\=+_0123456789xzqjk"
        return " ".join("".join(rng.choice(alphabet) for _ in range(rng.randint(3, 12)))
                        for _ in range(rng.randint(250, 400)))
    raise ValueError(f"unknown spam kind {kind!r}; expected one of {SPAM_KINDS}")


def too_short(rng: random.Random) -> str:
    return rng.choice(["Click here to continue.", "Page not found.", "Loading...",
                       "Thanks for reading!", "Comments are closed.", "404 Not Found",
                       "Hello world.", "Coming soon.", "See you next week, everyone!"])


def non_english(index: int, rng: random.Random) -> tuple[str, str]:
    """(language code, text) of real non-English text, cycling through the languages."""
    rows = non_english_texts()
    row = rows[index % len(rows)]
    sentences = list(row["sentences"])
    rng.shuffle(sentences)
    joiner = "\n\n" if row["source"] == "bgwiki" else " "
    return row["lang"], joiner.join(s if s.rstrip()[-1:] in ".!?" else s + "." for s in sentences)


def eval_passages(count: int) -> list[dict]:
    """LAMBADA-style passages (several sentences ending in a target word) from held-out text."""
    out = []
    for art in eval_source_articles():
        for para in art["paragraphs"]:
            sents = split_sentences(para)
            if len(sents) >= 3 and 60 <= len(para.split()) <= 220:
                out.append({"title": art["title"], "text": para})
    return out[:count]


def squad_rows(passages: list[dict], rng: random.Random) -> list[dict]:
    """SQuAD v2 rows (HF layout) on the passages: a cloze question per passage, some unanswerable."""
    rows = []
    for i, p in enumerate(passages):
        context = p["text"]
        sents = split_sentences(context)
        sent = sents[1]
        cands = [w.strip(".,;:()") for w in sent.split()[1:] if w[:1].isupper() and len(w) > 3]
        if cands and i % 4 != 3:
            ans = cands[0]
            question = f"What name completes this statement: {sent.replace(ans, '____', 1)}"
            answers = {"text": [ans], "answer_start": [context.index(ans, context.index(sent))]}
        else:  # v2's unanswerable questions
            question = f"What did the author of the passage about {p['title']} eat for breakfast?"
            answers = {"text": [], "answer_start": []}
        rows.append({"id": f"sample-squad-{i:05d}", "title": p["title"], "context": context,
                     "question": question, "answers": answers})
    return rows

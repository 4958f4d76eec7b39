"""Per-source document formats, templated around real text from the pools.

Each family returns ``(title, text)`` for a document of about ``words`` words, shaped like
its source: books are long literary prose, Wikipedia an article, StackExchange a Q/A thread,
PubMed a structured abstract, ArXiv LaTeX, GitHub code.  Only the wrapping is synthetic; the
sentences, speeches and code lines are the real texts listed in LICENSES.md.
"""
from __future__ import annotations

import random
from typing import Callable

from .text_pool import ChunkPool, Unit, wiki_articles

Pools = dict[str, ChunkPool]
Family = Callable[[Pools, random.Random, int], tuple[str, str]]


def _para(chunk: list[Unit]) -> str:
    return " ".join(u.text for u in chunk)


def _prose(pool: ChunkPool, words: int) -> list[str]:
    return [_para(c) for c in pool.take_words(words)]


def _title_of(chunk_origin: int) -> str:
    return wiki_articles()[chunk_origin]["title"]


def wikipedia(pools: Pools, rng: random.Random, words: int) -> tuple[str, str]:
    chunks = pools["wiki"].take_words(words)
    title = _title_of(chunks[0][0].origin)
    paras = [_para(c) for c in chunks]
    if len(paras) > 4:  # a section heading, as Pile Wikipedia keeps them as plain lines
        paras.insert(len(paras) // 2, rng.choice(["History", "Overview", "Background", "Legacy"]))
    return title, title + "\n\n" + "\n\n".join(paras)


def web_article(pools: Pools, rng: random.Random, words: int) -> tuple[str, str]:
    chunks = pools["wiki"].take_words(words)
    title = f"{rng.choice(['Why', 'How', 'What we know about', 'The story of', 'A guide to'])} " \
            f"{_title_of(chunks[0][0].origin)}"
    return title, title + "\n\n" + "\n\n".join(_para(c) for c in chunks)


def news(pools: Pools, rng: random.Random, words: int) -> tuple[str, str]:
    chunks = pools["wiki"].take_words(words)
    city = rng.choice(["LONDON", "NEW YORK", "SYDNEY", "TORONTO", "CHICAGO", "DUBLIN"])
    title = f"{_title_of(chunks[0][0].origin)}: {rng.choice(['new report', 'what experts say', 'a look back', 'explained'])}"
    paras = [_para(c) for c in chunks]
    paras[0] = f"{city} (Sample Wire) - {paras[0]}"
    return title, "\n\n".join(paras)


def book(pools: Pools, rng: random.Random, words: int) -> tuple[str, str]:
    """Long literary prose: play speeches retold as quoted narrative."""
    chunks = pools["speech"].take_words(words)
    verbs = ["said", "replied", "answered", "cried", "whispered", "went on"]
    paras = [f"\u201c{u.text}\u201d {rng.choice(verbs)} {u.speaker}." for c in chunks for u in c]
    chapter = rng.randint(1, 40)
    return f"Chapter {chapter}", f"CHAPTER {chapter}\n\n" + "\n\n".join(paras)


def gutenberg(pools: Pools, rng: random.Random, words: int) -> tuple[str, str]:
    """PG-19 style: the play text itself, speaker names in capitals."""
    chunks = pools["speech"].take_words(words)
    lines = [f"{u.speaker.upper()}. {u.text}" for c in chunks for u in c]
    return "Play", "\n\n".join(lines)


def story(pools: Pools, rng: random.Random, words: int) -> tuple[str, str]:
    chunks = pools["speech"].take_words(words)
    paras = [f"{c[0].speaker} thought about it for a long time. \u201c{_para(c)}\u201d" for c in chunks]
    return "Story", "\n\n".join(paras)


def stackexchange(pools: Pools, rng: random.Random, words: int) -> tuple[str, str]:
    chunks = pools["pydocs"].take_words(words)
    q = chunks[0]
    subject = " ".join(q[0].text.split()[:8]).rstrip(".,:")
    question = f"How does this work in Python: {subject}?"
    answers = "\n\n".join(f"A:\n\n{_para(c)}" for c in chunks[1:]) or "A:\n\nSee the reference manual."
    return question, f"Q:\n\n{question}\n\n{_para(q)}\n\n{answers}"


def pubmed(pools: Pools, rng: random.Random, words: int) -> tuple[str, str]:
    chunks = pools["wiki"].take_words(words)
    title = f"A study of {_title_of(chunks[0][0].origin).lower()} in a sample population."
    labels = ["BACKGROUND", "OBJECTIVE", "METHODS", "RESULTS", "CONCLUSIONS"]
    parts = [f"{labels[min(i, 4)]}: {_para(c)}" for i, c in enumerate(chunks)]
    return title, title + "\n" + " ".join(parts)


def nih_exporter(pools: Pools, rng: random.Random, words: int) -> tuple[str, str]:
    chunks = pools["wiki"].take_words(words)
    body = " ".join(_para(c) for c in chunks)
    return "Grant", f"DESCRIPTION (provided by applicant): {body} PUBLIC HEALTH RELEVANCE: " \
                    f"This project will advance the understanding of {_title_of(chunks[0][0].origin).lower()}."


def arxiv(pools: Pools, rng: random.Random, words: int) -> tuple[str, str]:
    chunks = pools["wiki"].take_words(words)
    sections = ["Introduction", "Related work", "Method", "Results", "Discussion"]
    out = [r"\section{" + sections[0] + "}"]
    for i, c in enumerate(chunks):
        if i and i % 2 == 0:
            out.append(r"\section{" + sections[min(i // 2, 4)] + "}")
        eq = rf"$x_{{{i}}} = \alpha_{{{i}}} + \sum_{{k=1}}^{{n}} \beta_k$"
        out.append(f"{_para(c)} We write {eq} for the quantity of interest \\cite{{ref{i}}}.")
    return "Paper", "\n\n".join(out)


def github(pools: Pools, rng: random.Random, words: int) -> tuple[str, str]:
    chunks = pools["code"].take_words(words)
    return "code", "\n".join(u.text for c in chunks for u in c)


def freelaw(pools: Pools, rng: random.Random, words: int) -> tuple[str, str]:
    chunks = pools["wiki"].take_words(words)
    return "Opinion", "UNITED STATES COURT OF APPEALS\n\nOPINION\n\n" + "\n\n".join(_para(c) for c in chunks)


FAMILIES: dict[str, Family] = {
    "books3": book, "openwebtext2": web_article, "stackexchange": stackexchange,
    "pubmed_abstracts": pubmed, "wikipedia": wikipedia, "gutenberg_pg19": gutenberg,
    "bookcorpus2": book, "nih_exporter": nih_exporter, "pile_cc": web_article, "arxiv": arxiv,
    "github": github, "freelaw": freelaw, "cc_2020_50": web_article, "cc_2021_04": web_article,
    "realnews": news, "cc_stories": story,
}

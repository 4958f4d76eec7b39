"""Real text from the committed assets, handed out in chunks that do not repeat by accident.

Documents are built by concatenating *chunks* (a few consecutive sentences of one real text).
A pool deals its chunks in a shuffled cycle, so no chunk is used twice until every chunk has
been used once; each later cycle shifts the chunk boundaries, so a reused chunk only partly
overlaps its earlier use.  That keeps the word-5-gram Jaccard of unplanted document pairs far
below any dedup threshold (tests check < 0.2 on the default corpus), which the planted near
duplicates then stand out against.
"""
from __future__ import annotations

import functools
import gzip
import json
import os
import random
import re
from dataclasses import dataclass

ASSETS_DIR = os.path.join(os.path.dirname(__file__), "assets")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"“(])")


def load_asset(name: str) -> list[dict]:
    with gzip.open(os.path.join(ASSETS_DIR, name), "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def split_sentences(paragraph: str) -> list[str]:
    return [s for s in _SENTENCE_END.split(paragraph) if s.strip()]


@dataclass(frozen=True)
class Unit:
    """One sentence (or speech, or code line) and the text it came from."""

    text: str
    origin: int  # index of the article / play / file, so chunks never straddle two texts
    speaker: str = ""


class ChunkPool:
    """Deals chunks of ``chunk_units`` consecutive units in non-repeating shuffled cycles."""

    def __init__(self, name: str, units: list[Unit], chunk_units: int, seed: int) -> None:
        if len(units) < chunk_units * 4:
            raise ValueError(f"pool {name!r} has only {len(units)} units")
        self.name = name
        self.units = units
        self.chunk_units = chunk_units
        self._seed = seed
        self._cycle = -1
        self._order: list[int] = []

    def _new_cycle(self) -> None:
        self._cycle += 1
        k = self.chunk_units
        # Shift boundaries by a different amount each cycle (0, 1, 2, ... mod k).
        offset = self._cycle % k
        starts = list(range(offset, len(self.units) - k + 1, k))
        random.Random(f"{self._seed}/{self.name}/{self._cycle}").shuffle(starts)
        self._order = starts

    def next_chunk(self) -> list[Unit]:
        if not self._order:
            self._new_cycle()
        start = self._order.pop()
        chunk = self.units[start : start + self.chunk_units]
        # Keep a chunk inside one origin text: cut it where the next text begins.
        return [u for u in chunk if u.origin == chunk[0].origin]

    def take_words(self, min_words: int) -> list[list[Unit]]:
        """Chunks until at least ``min_words`` words are collected."""
        chunks, words = [], 0
        while words < min_words:
            chunk = self.next_chunk()
            chunks.append(chunk)
            words += sum(len(u.text.split()) for u in chunk)
        return chunks


@functools.lru_cache(maxsize=1)
def _raw_assets() -> dict[str, list[dict]]:
    return {n: load_asset(f"{n}.jsonl.gz") for n in
            ("enwiki", "shakespeare", "python_topics", "python_code", "non_english")}


# Texts held out of every pool: the eval-task passages come from them, so a task passage
# appears in training documents only where it is planted on purpose.
HELD_OUT_WIKI_ARTICLES = 8


def wiki_articles() -> list[dict]:
    return _raw_assets()["enwiki"]


def eval_source_articles() -> list[dict]:
    return wiki_articles()[-HELD_OUT_WIKI_ARTICLES:]


def non_english_texts() -> list[dict]:
    return _raw_assets()["non_english"]


def code_files() -> list[dict]:
    return _raw_assets()["python_code"]


def build_pools(seed: int) -> dict[str, ChunkPool]:
    """The pools every document family draws from (fresh cursors for each corpus)."""
    raw = _raw_assets()
    wiki_units = [
        Unit(s, i) for i, art in enumerate(raw["enwiki"][:-HELD_OUT_WIKI_ARTICLES])
        for para in art["paragraphs"] for s in split_sentences(para)
    ]
    speech_units = [
        Unit(text, i, speaker) for i, play in enumerate(raw["shakespeare"])
        for speaker, text in play["speeches"]
    ]
    docs_units = []
    for i, topic in enumerate(raw["python_topics"]):
        for para in re.split(r"\n\s*\n", topic["text"]):
            para = " ".join(para.split())
            # Prose only: grammar productions, tables and heading underlines are not sentences.
            if len(para.split()) < 8 or "|" in para or "::=" in para or set(para) <= set("*=-~ "):
                continue
            docs_units.extend(Unit(s, i) for s in split_sentences(para))
    code_units = [
        Unit(line, i) for i, f in enumerate(raw["python_code"]) for line in f["code"].splitlines()
    ]
    return {
        "wiki": ChunkPool("wiki", wiki_units, 4, seed),
        "speech": ChunkPool("speech", speech_units, 6, seed),
        "pydocs": ChunkPool("pydocs", docs_units, 4, seed),
        "code": ChunkPool("code", code_units, 30, seed),
    }


def vocabulary() -> list[str]:
    """Distinct lowercase words of the wiki text: replacements for near-duplicate edits."""
    words = {w.strip(".,;:()\"'").lower() for a in wiki_articles()[:30]
             for p in a["paragraphs"] for w in p.split()}
    return sorted(w for w in words if w.isalpha() and 3 <= len(w) <= 12)

"""Planted near-duplicate pairs whose true Jaccard is known exactly.

Each pair is a base text of distinct made-up words and a variant made by random word
substitutions, insertions and deletions until its word-5-gram Jaccard with the base falls to a
target.  The recorded ``jaccard`` is not the target: it is computed afterwards on exactly the
shingle sets fuzzy dedup uses (``curation.minhash.shingles``, word 5-grams, lowercase), so
recall can be measured against the truth.  Different pairs share no shingle (fresh words
everywhere), so every pair is independent of the others.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from curation.lsh import exact_jaccard
from curation.minhash import shingles

SYLLABLES = ("ka", "lo", "mi", "ne", "su", "ta", "ri", "po", "ve", "da", "qu", "zo", "fe", "hu",
             "bi", "gra", "stel", "mon", "ark", "ul")


@dataclass(frozen=True)
class PlantedPair:
    a: str
    b: str
    text_a: str
    text_b: str
    jaccard: float


class _Words:
    """Distinct pseudo-words: syllables plus a running number, never reused."""

    def __init__(self, rng: random.Random) -> None:
        self.rng, self.n = rng, 0

    def __call__(self) -> str:
        self.n += 1
        return "".join(self.rng.choice(SYLLABLES) for _ in range(self.rng.randint(1, 3))) + str(self.n)


def jaccard(a: str, b: str, n: int = 5) -> float:
    return exact_jaccard(shingles(a, n), shingles(b, n))


def variant(words: list[str], target: float, rng: random.Random, fresh: _Words) -> tuple[list[str], float]:
    """Edit a copy of ``words`` until its shingle Jaccard with them is <= target."""
    base, out = " ".join(words), list(words)
    j = 1.0
    while j > target:
        op, i = rng.random(), rng.randrange(len(out))
        if op < 0.6:
            out[i] = fresh()
        elif op < 0.8:
            out.insert(i, fresh())
        elif len(out) > 20:
            del out[i]
        j = jaccard(base, " ".join(out))
    return out, j


def planted_pairs(n: int, low: float, high: float, seed: int = 0,
                  words: tuple[int, int] = (120, 360)) -> list[PlantedPair]:
    """``n`` pairs with target Jaccard uniform in [low, high]; ids ``p<i>a`` / ``p<i>b``."""
    rng = random.Random(seed)
    fresh = _Words(rng)
    pairs = []
    for i in range(n):
        base = [fresh() for _ in range(rng.randint(*words))]
        target = rng.uniform(low, high)
        edited, j = (base, 1.0) if target >= 1.0 else variant(base, target, rng, fresh)
        pairs.append(PlantedPair(f"p{i:04d}a", f"p{i:04d}b", " ".join(base), " ".join(edited), j))
    return pairs

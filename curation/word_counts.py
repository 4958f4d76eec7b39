"""Per-word counts of the Gopher rules from one pass over the text's code points.

``word_counts(text)`` describes the words of ``text.split()``: their lengths, how many of them
(and how many characters) consist of punctuation only, and how many hold no alphabetic
character (``str.isalpha``).

Why not a regex per count: the whole-word regexes (a look-behind at every candidate character;
for non-ASCII text a character class of every alphabetic code point, searched range by range)
were a quarter of the heuristic stage.  Here every code point is classified by one table
look-up (built once per process from ``str.isspace`` / ``str.isalpha``, so words are exactly
``str.split``'s), words are the runs of non-space code points, and each count is an integer
sum over those runs.  ``tests/curation/test_heuristics.py`` checks every count against its
plain word-by-word definition.
"""
from __future__ import annotations

import functools
import string
import sys
from typing import NamedTuple

import numpy as np

PUNCTUATION = string.punctuation + "“”‘’«»…–—"
"""A word made only of these characters is punctuation, not a word, for the mean length."""
_SPACE, _ALPHA, _PUNCT = 1, 2, 4


class WordCounts(NamedTuple):
    lengths: np.ndarray
    """Characters of each word (int64), in order."""
    punct_words: int
    punct_word_chars: int
    no_alpha_words: int


@functools.lru_cache(maxsize=1)
def _classes() -> np.ndarray:
    """One byte of flags per code point (built once per process, ~0.1 s)."""
    every = "".join(map(chr, range(sys.maxunicode + 1)))
    n = len(every)
    table = np.fromiter(map(str.isspace, every), bool, n).astype(np.uint8) * _SPACE
    table |= np.fromiter(map(str.isalpha, every), bool, n).astype(np.uint8) * _ALPHA
    table[[ord(c) for c in PUNCTUATION]] |= _PUNCT
    return table


@functools.lru_cache(maxsize=1)
def _ascii_classes() -> np.ndarray:
    return _classes()[:128].copy()


def word_counts(text: str) -> WordCounts:
    if text.isascii():  # one byte per character: a smaller array and table
        flags = _ascii_classes()[np.frombuffer(text.encode("ascii"), np.uint8)]
    else:
        flags = _classes()[np.frombuffer(text.encode("utf-32-le", "surrogatepass"), np.uint32)]
    m = len(flags)
    inside = np.zeros(m + 2, np.bool_)
    np.equal(flags & _SPACE, 0, out=inside[1:-1])
    bounds = np.flatnonzero(inside[1:] != inside[:-1])  # start, end, start, end, ... of the words
    if not len(bounds):
        return WordCounts(np.zeros(0, np.int64), 0, 0, 0)
    lengths = bounds[1::2] - bounds[0::2]
    # Sums over [start, end) of each word and over the gap after it (dropped): reduceat needs
    # indices below m, and the last word's end may be m.
    at = bounds[:-1] if bounds[-1] == m else bounds
    punct = np.add.reduceat((flags & _PUNCT) != 0, at, dtype=np.int64)[0::2]
    alpha = np.add.reduceat((flags & _ALPHA) != 0, at, dtype=np.int64)[0::2]
    punct_only = punct == lengths
    return WordCounts(lengths, int(np.count_nonzero(punct_only)), int(lengths[punct_only].sum()),
                      int(np.count_nonzero(alpha == 0)))

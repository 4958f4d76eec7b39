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

``document_words(text)`` is the one word split all the Gopher rules share: the words, their ids
(first seen first) and lengths for the n-gram measures, and the counts above plus the stop words.
Every count is a property of the word alone, so it is computed once per distinct word and cached
across documents (``_WORD_FLAGS``): a document's words are mostly ones met before, and the counts
become sums over the distinct words weighted by their occurrences.
"""
from __future__ import annotations

import functools
import itertools
import string
import sys
from typing import NamedTuple

import numpy as np

PUNCTUATION = string.punctuation + "“”‘’«»…–—"
"""A word made only of these characters is punctuation, not a word, for the mean length."""
_SPACE, _ALPHA, _PUNCT = 1, 2, 4
STOP_WORDS = frozenset({"the", "be", "to", "of", "and", "that", "have", "with"})
"""Gopher's stop words: a word counts when, less its leading and trailing ASCII punctuation and
lowercased, it is one of them."""
# Only ASCII letters lowercase to the letters of the stop words (U+212A KELVIN SIGN -> "k" is the
# one non-ASCII letter lowercasing to ASCII), so a word counts when its stripped core is one of
# the stop words' ASCII case variants.
STOP_FORMS = frozenset("".join(v) for w in STOP_WORDS for v in itertools.product(*((c, c.upper()) for c in w)))


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


_PUNCT_ONLY, _NO_ALPHA, _STOP = 1, 2, 4
_CACHED_WORDS = 500_000
"""Words whose flags are kept (~60 MB at most; emptied when full, which costs time, never a
result)."""


class _WordFlags(dict):
    """word -> ``_PUNCT_ONLY | _NO_ALPHA | _STOP`` bits, computed the first time a word is met."""

    def __missing__(self, word: str) -> int:
        flags = ((_PUNCT_ONLY if not word.strip(PUNCTUATION) else 0)
                 | (0 if any(map(str.isalpha, word)) else _NO_ALPHA)
                 | (_STOP if word.strip(string.punctuation) in STOP_FORMS else 0))
        if len(self) >= _CACHED_WORDS:
            self.clear()
        self[word] = flags
        return flags


_WORD_FLAGS = _WordFlags()


class DocumentWords(NamedTuple):
    words: list[str]
    """``text.split()``."""
    ids: np.ndarray
    """Each word's id (int64): 0, 1, 2, ... in order of first occurrence."""
    lengths: np.ndarray
    """Characters of each word (int64), in order."""
    counts: WordCounts
    """The counts of ``word_counts(text)`` (its ``lengths`` are ``lengths``)."""
    stop_words: int
    """Words that are stop words (``STOP_FORMS`` once stripped of ASCII punctuation)."""


def document_words(text: str) -> DocumentWords:
    """The words of ``text.split()`` with their ids, lengths and counts, from one dict pass over
    the words and per-distinct-word flags."""
    words = text.split()
    n = len(words)
    first: dict[str, int] = {}  # each distinct word -> the position of its first occurrence
    where = np.fromiter(map(first.setdefault, words, range(n)), np.int64, n)
    k = len(first)
    dense = np.empty(n, np.int64)
    dense[np.fromiter(first.values(), np.int64, k)] = np.arange(k)
    ids = dense[where]
    occurrences = np.bincount(ids, minlength=k)
    distinct_lengths = np.fromiter(map(len, first), np.int64, k)
    flags = np.fromiter(map(_WORD_FLAGS.__getitem__, first), np.int64, k)
    punct = (flags & _PUNCT_ONLY) != 0
    counts = WordCounts(distinct_lengths[ids], int(occurrences[punct].sum()),
                        int((occurrences * distinct_lengths)[punct].sum()),
                        int(occurrences[(flags & _NO_ALPHA) != 0].sum()))
    return DocumentWords(words, ids, counts.lengths, counts, int(occurrences[(flags & _STOP) != 0].sum()))

"""64-bit hashes of the words decontamination reads, straight from a text's code points in numpy.

Decontamination scans every document for task n-grams (``curation.ngram_index``).  Splitting a
document into Python word strings (``curation.decontamination.words``: a regex pass, lower
case, apostrophe variants read as ``'``) and hashing each string was most of the stage's CPU,
though nearly every document matches nothing and its words are never looked at.
``text_word_hashes`` gives the same words' hashes without making the words: the text's code
points as a numpy array, a table lookup per code point for "word character" (what the regex's
``\\w`` matches: ``str.isalnum()`` or ``_``), apostrophe variant and lower case, and a polynomial
hash of each word's code points.  A document with a hash hit is then split into word strings
the usual way, to check the hit word for word.

The hash of a word is a function of its code points only (``word_hashes`` computes the same
values from word strings, for the task texts), so equal words hash alike.  Unequal words may
collide (then only the word-for-word check costs more).  Two characters lower-case differently
in context than alone: U+0130 (one code point, two in lower case) and U+03A3 (final sigma); a
text holding either returns None and the caller splits it into strings.
"""
from __future__ import annotations

import functools
import re
from typing import Sequence

import numpy as np

APOSTROPHES = "'\u2019\u2018\u02bc\u00b4`\u2032"
"""``curation.decontamination._APOSTROPHES``: a word may hold one between two word characters;
every one of them reads as ``'``."""
CONTEXT_CHARS = ("\u0130", "\u03a3")
"""Characters whose lower case is not one code point of its own (see the module docstring)."""
CHUNK = 1 << 20
"""Code points hashed per numpy pass (a longer text is cut at whitespace): bounds the arrays."""
_R = 0x9FB21C651E98DF25  # odd: invertible mod 2^64
_R_INV = pow(_R, -1, 1 << 64)
_LEN = np.uint64(0xC2B2AE3D27D4EB4F)
_EMPTY = np.empty(0, dtype=np.uint64)


@functools.lru_cache(maxsize=1)
def _tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per code point: whether it is a word character; whether it is an apostrophe variant and
    not a word character; and the code point it reads as in a word (lower case, ``'`` for an
    apostrophe variant), 0 for a character that is neither.  Made from one string of every
    code point: the regex's own ``\\W`` marks the others, ``str.lower`` maps them (its only
    one-to-many character, U+0130, is split off: ``CONTEXT_CHARS``)."""
    n = 0x110000
    every = np.arange(n, dtype=np.uint32).tobytes().decode("utf-32-le", "surrogatepass")
    word = _code_points(re.sub(r"\W", "\0", every)) != 0
    i = ord(CONTEXT_CHARS[0])
    lower = every[:i].lower() + every[i] + every[i + 1:].lower()
    key = np.where(word, _code_points(lower), 0).astype(np.uint64)
    apostrophe = np.zeros(n, dtype=bool)
    for c in APOSTROPHES:
        apostrophe[ord(c)] = not word[ord(c)]
        key[ord(c)] = ord("'")
    return word, apostrophe, key


@functools.lru_cache(maxsize=4)
def _powers(n: int) -> tuple[np.ndarray, np.ndarray]:
    """``R^i`` and ``R^-i`` mod 2^64 for ``i < n``."""
    up = np.full(n, _R, dtype=np.uint64)
    up[0] = 1
    down = np.full(n, _R_INV, dtype=np.uint64)
    down[0] = 1
    return np.cumprod(up), np.cumprod(down)


def powers(n: int) -> tuple[np.ndarray, np.ndarray]:
    """``R^i`` and ``R^-i`` mod 2^64 for (at least) ``i < n``; up to ``CHUNK`` kept for reuse."""
    return _powers(CHUNK) if n <= CHUNK else _powers.__wrapped__(n)


def _segment_hashes(values: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The hash of each segment ``values[s:s + k]`` (``values`` 0 between segments):
    ``sum(v_i * R^(i - s))``, mixed with the length, then murmur3's finaliser."""
    if not len(starts):
        return _EMPTY
    n = len(values) + 1
    up, down = powers(n)
    terms = np.empty(n, dtype=np.uint64)
    np.multiply(values, up[:n - 1], out=terms[:-1])
    terms[-1] = 0
    h = np.add.reduceat(terms, starts) * down[starts]
    h[lengths == 0] = 0
    h ^= lengths.astype(np.uint64) * _LEN
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xFF51AFD7ED558CCD)
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xC4CEB53FE1A85EC3)
    h ^= h >> np.uint64(33)
    return h


def _code_points(text: str) -> np.ndarray:
    """The code points, in the narrowest array that holds them (a Latin-1 text: one byte each)."""
    try:
        return np.frombuffer(text.encode("latin-1"), dtype=np.uint8)
    except UnicodeEncodeError:
        pass
    data = text.encode("utf-16-le", "surrogatepass")
    if len(data) == 2 * len(text):  # no code point above U+FFFF
        return np.frombuffer(data, dtype=np.uint16)
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def word_hashes(words: Sequence[str]) -> np.ndarray:
    """The hash of each word string (as ``text_word_hashes`` gives it for the same word)."""
    if not words:
        return _EMPTY
    lengths = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
    starts = np.cumsum(lengths) - lengths
    return _segment_hashes(_code_points("".join(words)).astype(np.uint64), starts, lengths)


def text_words(text: str) -> tuple[np.ndarray, np.ndarray]:
    """``(hashes, first character)`` of the words of a text holding none of ``CONTEXT_CHARS``,
    in one numpy pass (no cut: the caller bounds the text's length)."""
    word, apostrophe, key = _tables()
    cps = _code_points(text)
    values = key[cps]  # 0 outside words
    if any(c in text for c in APOSTROPHES):
        # an apostrophe is inside a word only with a word character on both sides of it
        at = np.flatnonzero(apostrophe[cps])
        left, right = at - 1, np.minimum(at + 1, len(cps) - 1)
        joins = (at > 0) & (at < len(cps) - 1) & word[cps[left]] & word[cps[right]]
        values[at[~joins]] = 0
    member = values != 0
    change = np.flatnonzero(member[1:] != member[:-1]) + 1
    edges = np.concatenate(([0] if member[0] else [], change, [len(cps)] if member[-1] else []))
    edges = edges.astype(np.int64)
    starts, ends = edges[0::2], edges[1::2]
    return _segment_hashes(values, starts, ends - starts), starts


def text_word_hashes(text: str) -> np.ndarray | None:
    """``word_hashes(curation.decontamination.words(text))`` without making the words; None
    for a text holding one of ``CONTEXT_CHARS``."""
    if any(c in text for c in CONTEXT_CHARS):
        return None
    if not text:
        return _EMPTY
    if len(text) <= CHUNK:
        return text_words(text)[0]
    out, pos = [], 0
    while pos < len(text):  # cut after a space or newline: no word spans one
        end = pos + CHUNK
        if end < len(text):
            cut = max(text.rfind(" ", pos, end), text.rfind("\n", pos, end))
            if cut < 0:
                cut = min((i for i in (text.find(" ", end), text.find("\n", end)) if i >= 0),
                          default=len(text) - 1)
            end = cut + 1
        out.append(text_words(text[pos:end])[0])
        pos = end
    return np.concatenate(out)

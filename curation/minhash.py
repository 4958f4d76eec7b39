"""MinHash signatures (and the shingle-hash sets exact verification compares) for fuzzy dedup.

Shingles are word n-grams (default) or character n-grams of the canonical text (lowercased,
whitespace-split).  Each shingle gets a fast 32-bit non-cryptographic hash computed with numpy
for all shingles of a document at once: every word (or character) is hashed once and the n
hashes of a shingle are combined polynomially mod 2^64, then avalanched with MurmurHash3's
64-bit finalizer.  ``shingle_hasher(kind)`` is the same function for one shingle string, so

    datasketch.MinHash(num_perm, seed, hashfunc=shingle_hasher(kind), scheme=...)

fed ``shingles(text, n, kind)`` gives bitwise the signature ``text_signature`` computes (both
the default ``affine32`` scheme of datasketch >= 2.0 and ``legacy``; tests compare them).
"""
from __future__ import annotations

from functools import lru_cache
from typing import Callable, Literal

import numpy as np

ShingleKind = Literal["word", "char"]

# Documents with fewer distinct shingles than this are not fuzzy-deduped: their MinHash is too
# noisy to estimate Jaccard (a 5-shingle document shares 1/5 of itself with anything containing
# one phrase).  Exact dedup still applies to them.  Config: dedup.fuzzy.min_shingles.
MIN_SHINGLES = 10

_MERSENNE_PRIME = np.uint64((1 << 61) - 1)
_MAX_HASH32 = np.uint64((1 << 32) - 1)
_M64 = (1 << 64) - 1
_POLY = 0x100000001B3  # FNV-1a 64-bit prime: the base of the polynomial shingle combination
_C1, _C2 = 0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53  # MurmurHash3 fmix64 constants


def _words(text: str) -> list[str]:
    return text.lower().split()


def shingles(text: str, n: int = 5, kind: ShingleKind = "word") -> set[str]:
    """Word n-grams (lowercase words joined by one space) or character n-grams of the
    whitespace-collapsed lowercase text.  Text shorter than one n-gram yields one shingle of the
    whole text (empty text yields none)."""
    _check_n(n)
    words = _words(text)
    if kind == "word":
        if len(words) <= n:
            return {" ".join(words)} if words else set()
        return {" ".join(words[i : i + n]) for i in range(len(words) - n + 1)}
    if kind == "char":
        flat = " ".join(words)
        if len(flat) <= n:
            return {flat} if flat else set()
        return {flat[i : i + n] for i in range(len(flat) - n + 1)}
    raise _kind_error(kind)


def _check_n(n: int) -> None:
    if n < 1:
        raise ValueError(f"shingle size must be >= 1 (setting 'ngram'), got {n}")


def _kind_error(kind: str) -> ValueError:
    return ValueError(f"unknown shingle kind {kind!r} (setting 'shingle'); expected 'word' or 'char'")


# -- one shingle at a time (the reference definition; datasketch's hashfunc) ------------------
# A shingle's hash is a polynomial (Horner, base _POLY, mod 2^64) over its units -- the UTF-8
# bytes of a word shingle, the code points of a character shingle -- avalanched with fmix64 and
# cut to 32 bits.  Polynomial hashes of all substrings come from one prefix sum, so a whole
# document is hashed with a few numpy passes instead of one Python call per shingle.
def _poly_fmix(units) -> int:
    h = 0
    for u in units:
        h = (h * _POLY + u) & _M64
    h ^= h >> 33
    h = (h * _C1) & _M64
    h ^= h >> 33
    h = (h * _C2) & _M64
    h ^= h >> 33
    return h & 0xFFFFFFFF


def word_shingle_hash(shingle: str) -> int:
    """32-bit hash of a word shingle (words joined by one space): polynomial over its UTF-8 bytes."""
    return _poly_fmix(shingle.encode("utf-8"))


def char_shingle_hash(shingle: str) -> int:
    """32-bit hash of a character shingle: polynomial over its code points."""
    return _poly_fmix(ord(c) for c in shingle)


def shingle_hasher(kind: ShingleKind = "word") -> Callable[[str], int]:
    """The per-shingle hash function of ``kind``; pass it as datasketch's ``hashfunc``."""
    if kind == "word":
        return word_shingle_hash
    if kind == "char":
        return char_shingle_hash
    raise _kind_error(kind)


# -- all shingles of a text at once ------------------------------------------------------------
_POWERS = np.ones(1, dtype=np.uint64)      # _POLY^j mod 2^64
_INV_POWERS = np.ones(1, dtype=np.uint64)  # _POLY^-j mod 2^64 (_POLY is odd, so invertible)


def _cumulative_powers(base: int, size: int) -> np.ndarray:
    out = np.empty(size, dtype=np.uint64)
    out[0] = 1
    np.cumprod(np.full(size - 1, base, dtype=np.uint64), out=out[1:])  # wraps mod 2^64
    return out


def _powers(length: int) -> tuple[np.ndarray, np.ndarray]:
    global _POWERS, _INV_POWERS
    if len(_POWERS) < length:
        size = max(length, 2 * len(_POWERS), 1 << 14)
        with np.errstate(over="ignore"):
            _POWERS = _cumulative_powers(_POLY, size)
            _INV_POWERS = _cumulative_powers(pow(_POLY, -1, 1 << 64), size)
    return _POWERS, _INV_POWERS


def _range_hashes(units: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """_poly_fmix(units[s:e]) for every (s, e), vectorized: P^(e-1) * (T[e] - T[s]) where T is
    the prefix sum of units[j] * P^-j (all mod 2^64)."""
    pw, inv = _powers(len(units) + 1)
    with np.errstate(over="ignore"):
        prefix = np.zeros(len(units) + 1, dtype=np.uint64)
        np.cumsum(units * inv[: len(units)], out=prefix[1:])
        h = (prefix[ends] - prefix[starts]) * pw[ends - 1]
        h ^= h >> np.uint64(33)
        h *= np.uint64(_C1)
        h ^= h >> np.uint64(33)
        h *= np.uint64(_C2)
        h ^= h >> np.uint64(33)
    return (h & _MAX_HASH32).astype(np.uint32)


def shingle_hashes(text: str, n: int = 5, kind: ShingleKind = "word") -> np.ndarray:
    """uint32 hash of every shingle position of ``text`` (repeats included; empty text: none).
    ``set(shingle_hashes(t)) == {shingle_hasher(kind)(s) for s in shingles(t)}``."""
    _check_n(n)
    flat = " ".join(_words(text))
    if not flat:
        return np.zeros(0, dtype=np.uint32)
    if kind == "word":
        units = np.frombuffer(flat.encode("utf-8"), dtype=np.uint8)
        spaces = np.flatnonzero(units == 32)
        if len(spaces) < n:  # n or fewer words: one shingle of the whole text
            return _range_hashes(units.astype(np.uint64), np.zeros(1, np.int64), np.array([len(units)]))
        starts = np.concatenate([[0], spaces[: len(spaces) - n + 1] + 1])
        ends = np.concatenate([spaces[n - 1 :], [len(units)]])
    elif kind == "char":
        units = np.frombuffer(flat.encode("utf-32-le"), dtype=np.uint32)
        count = max(len(units) - n + 1, 1)
        starts = np.arange(count)
        ends = np.minimum(starts + n, len(units))
    else:
        raise _kind_error(kind)
    return _range_hashes(units.astype(np.uint64), starts, ends)


def distinct_at_least(hashes: np.ndarray, k: int) -> bool:
    """Whether ``hashes`` holds at least k distinct values (cheap for ordinary documents)."""
    if len(hashes) < k:
        return False
    return len(np.unique(hashes[: 4 * k])) >= k or len(np.unique(hashes)) >= k


# -- MinHash ----------------------------------------------------------------------------------
@lru_cache(maxsize=16)
def permutations(num_perm: int, seed: int, scheme: str) -> tuple[np.ndarray, np.ndarray]:
    """The (a, b) permutation parameters datasketch draws for (num_perm, seed, scheme)."""
    gen = np.random.RandomState(seed)
    if scheme == "legacy":
        ab = np.array(
            [
                (gen.randint(1, _MERSENNE_PRIME, dtype=np.uint64), gen.randint(0, _MERSENNE_PRIME, dtype=np.uint64))
                for _ in range(num_perm)
            ],
            dtype=np.uint64,
        ).T
        return ab[0].copy(), ab[1].copy()
    if scheme == "affine32":
        # Odd multipliers make h -> a*h + b mod 2^32 a bijection (datasketch >= 2.0 default).
        a = gen.randint(0, 1 << 31, num_perm, dtype=np.uint32) * np.uint32(2) + np.uint32(1)
        b = gen.randint(0, 1 << 32, num_perm, dtype=np.uint32)
        return a[:, None].copy(), b[:, None].copy()
    raise ValueError(f"unknown MinHash scheme {scheme!r} (setting 'scheme'); expected 'affine32' or 'legacy'")


def _fmix32(h: np.ndarray) -> np.ndarray:
    """MurmurHash3's 32-bit finalizer, the pre-mix datasketch applies in the affine schemes."""
    h = h ^ (h >> np.uint32(16))
    h = h * np.uint32(0x85EBCA6B)
    h = h ^ (h >> np.uint32(13))
    h = h * np.uint32(0xC2B2AE35)
    return h ^ (h >> np.uint32(16))


# Shingles processed per step: bounds the (num_perm x chunk) intermediate to a few MB.
_CHUNK = 8192


def signature_from_hashes(hashes: np.ndarray, num_perm: int = 128, seed: int = 1,
                          scheme: str = "affine32") -> np.ndarray:
    """MinHash signature of a set given its element hashes (repeats allowed: min ignores them).
    uint32 (affine32) or uint64 (legacy) array of length num_perm; no hashes: all-max."""
    if num_perm < 1:
        raise ValueError(f"num_perm must be >= 1 (setting 'num_perm'), got {num_perm}")
    a, b = permutations(num_perm, seed, scheme)
    if scheme == "legacy":
        sig = np.full(num_perm, _MAX_HASH32, dtype=np.uint64)
        hv_all = np.asarray(hashes, dtype=np.uint64)
    else:
        sig = np.full(num_perm, np.uint32(0xFFFFFFFF), dtype=np.uint32)
        hv_all = _fmix32(np.asarray(hashes, dtype=np.uint32))
    with np.errstate(over="ignore"):  # wrap-around multiplication is the intended arithmetic
        for start in range(0, len(hv_all), _CHUNK):
            hv = hv_all[start : start + _CHUNK][None, :]
            if scheme == "legacy":
                phv = ((a[:, None] * hv + b[:, None]) % _MERSENNE_PRIME) & _MAX_HASH32
            else:
                phv = a * hv  # (num_perm, chunk), in place below: one temporary
                phv += b
            np.minimum(sig, phv.min(axis=1), out=sig)
    return sig


def signature(shingle_set, num_perm: int = 128, seed: int = 1, scheme: str = "affine32",
              kind: ShingleKind = "word") -> np.ndarray:
    """MinHash signature of a set of shingle strings, hashed by ``shingle_hasher(kind)``."""
    h = shingle_hasher(kind)
    return signature_from_hashes(np.fromiter((h(s) for s in shingle_set), dtype=np.uint64),
                                 num_perm, seed, scheme)


def text_signature(text: str, n: int = 5, kind: ShingleKind = "word", num_perm: int = 128,
                   seed: int = 1, scheme: str = "affine32",
                   min_shingles: int = MIN_SHINGLES) -> np.ndarray | None:
    """MinHash signature of a text's shingles (the fast path the pipeline uses), or None when
    the text has fewer than ``min_shingles`` distinct shingles."""
    hashes = shingle_hashes(text, n, kind)
    if not distinct_at_least(hashes, min_shingles):
        return None
    return signature_from_hashes(hashes, num_perm, seed, scheme)


# -- many texts at once (the pipeline's path) --------------------------------------------------
# Per-document numpy calls cost about a microsecond each and a document needs some thirty, a
# third of the time for a 3 KB text.  ``text_signatures`` hashes and permutes a whole batch of
# texts with one set of numpy calls and gives, text by text, exactly ``text_signature``'s result.
_WS = np.zeros(256, dtype=bool)
_WS[[9, 10, 11, 12, 13, 28, 29, 30, 31, 32]] = True  # str.split()'s ASCII whitespace
_PREFIX = 40  # distinct_at_least's cheap look at the first hashes (>= 4 * min_shingles)


def _normalized(text: str) -> str:
    """Lowercased text whose whitespace (as str.split sees it) is all ASCII, ready for _WS."""
    low = text.lower()
    return low if low.isascii() else " ".join(low.split())


def _batch_shingles(texts: list[str], n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(units, starts, ends, doc) of every word-shingle position of every text, in text order."""
    parts = [_normalized(t) for t in texts]
    big = "\n".join(parts).encode("utf-8")
    raw = np.frombuffer(big, dtype=np.uint8)
    ws = _WS[raw]
    # Collapse whitespace runs to one space (the separator "\n" between texts is one too).
    keep = ~ws
    keep[1:] |= ~ws[:-1]
    units = np.where(ws, np.uint8(32), raw)[keep]
    lens = np.fromiter((len(p) for p in parts), dtype=np.int64, count=len(parts)) if big.isascii() \
        else np.fromiter((len(p.encode("utf-8")) for p in parts), dtype=np.int64, count=len(parts))
    doc_start = np.zeros(len(parts), dtype=np.int64)
    np.cumsum(lens[:-1] + 1, out=doc_start[1:])  # raw offsets of each text
    kept_before = np.concatenate([[0], np.cumsum(keep)])
    doc_start = kept_before[doc_start]  # offsets in the collapsed units
    sp = units == 32
    word = ~sp
    ws_start = np.flatnonzero(word & np.concatenate([[True], sp[:-1]]))
    ws_end = np.flatnonzero(word & np.concatenate([sp[1:], [True]])) + 1
    wdoc = np.searchsorted(doc_start, ws_start, side="right") - 1
    nwords = np.bincount(wdoc, minlength=len(parts))
    m = len(ws_start) - n + 1
    if m > 0:
        ok = wdoc[: m] == wdoc[n - 1 :]
        starts, ends, doc = ws_start[:m][ok], ws_end[n - 1 :][ok], wdoc[:m][ok]
    else:
        starts = ends = doc = np.zeros(0, dtype=np.int64)
    short = np.flatnonzero((nwords > 0) & (nwords < n))
    if len(short):  # fewer than n words: one shingle of the whole text
        first = np.concatenate([[0], np.cumsum(nwords)])[short]
        starts = np.concatenate([starts, ws_start[first]])
        ends = np.concatenate([ends, ws_end[first + nwords[short] - 1]])
        doc = np.concatenate([doc, short])
        order = np.argsort(doc, kind="stable")
        starts, ends, doc = starts[order], ends[order], doc[order]
    return units, starts, ends, doc


def text_signatures(texts: list[str], n: int = 5, kind: ShingleKind = "word", num_perm: int = 128,
                    seed: int = 1, scheme: str = "affine32",
                    min_shingles: int = MIN_SHINGLES) -> list[np.ndarray | None]:
    """``[text_signature(t, n, kind, num_perm, seed, scheme, min_shingles) for t in texts]``,
    bitwise, computed for the whole batch at once (word shingles, affine32 scheme; other
    settings go text by text)."""
    return [f and f[0] for f in text_features(texts, n, kind, num_perm, seed, scheme, min_shingles)]


def text_features(texts: list[str], n: int = 5, kind: ShingleKind = "word", num_perm: int = 128,
                  seed: int = 1, scheme: str = "affine32", min_shingles: int = MIN_SHINGLES,
                  with_sets: bool = False) -> list[tuple[np.ndarray, np.ndarray | None] | None]:
    """Per text: None (fewer than ``min_shingles`` distinct shingles), else (MinHash signature
    as ``text_signature`` computes it, and with ``with_sets`` the sorted distinct shingle
    hashes, ``curation.lsh.hash_set``, for exact Jaccard).  One set of numpy calls for the whole
    batch (word shingles, affine32 scheme; other settings go text by text)."""
    _check_n(n)
    if kind != "word" or scheme != "affine32" or not texts:
        if kind not in ("word", "char"):
            raise _kind_error(kind)
        return [_one_text_features(t, n, kind, num_perm, seed, scheme, min_shingles, with_sets)
                for t in texts]
    if num_perm < 1:
        raise ValueError(f"num_perm must be >= 1 (setting 'num_perm'), got {num_perm}")
    units, starts, ends, doc = _batch_shingles(texts, n)
    hashes = _range_hashes(units.astype(np.uint64), starts, ends) if len(starts) else \
        np.zeros(0, dtype=np.uint32)
    ndocs = len(texts)
    npos = np.bincount(doc, minlength=ndocs)
    first = np.zeros(ndocs + 1, dtype=np.int64)
    np.cumsum(npos, out=first[1:])
    # distinct_at_least, vectorized over the first _PREFIX hashes of each text.
    valid = npos >= min_shingles
    if min_shingles > 1 and valid.any():
        cand = np.flatnonzero(valid)
        look = min(_PREFIX, max(4 * min_shingles, 1))
        idx = first[cand][:, None] + np.minimum(np.arange(look)[None, :], npos[cand][:, None] - 1)
        head = np.sort(hashes[idx], axis=1)
        distinct = 1 + np.count_nonzero(head[:, 1:] != head[:, :-1], axis=1)
        for j in np.flatnonzero(distinct < min_shingles):  # rare: look at the whole text
            d = cand[j]
            valid[d] = distinct_at_least(hashes[first[d] : first[d + 1]], min_shingles)
    a, b = permutations(num_perm, seed, scheme)
    a, b = a.ravel(), b.ravel()
    out: list[tuple[np.ndarray, np.ndarray | None] | None] = [None] * ndocs
    docs = np.flatnonzero(npos > 0)  # invalid texts ride along in the reduction, then dropped
    hv_all = _fmix32(hashes)
    ends = first[docs + 1]
    i = 0
    with np.errstate(over="ignore"):
        while i < len(docs):
            # whole texts, up to about _CHUNK shingles per step (at least one text)
            j = max(int(np.searchsorted(ends, first[docs[i]] + _CHUNK, side="right")), i + 1)
            group = docs[i:j]
            lo, hi = first[group[0]], ends[j - 1]
            if hi - lo > _CHUNK:  # one long text: block by block, or (num_perm x its shingles)
                d = int(group[0])  # would be held at once (gigabytes for a page of megabytes)
                if valid[d]:
                    out[d] = (signature_from_hashes(hashes[lo:hi], num_perm, seed, scheme),
                              np.unique(hashes[lo:hi]) if with_sets else None)
                i = j
                continue
            # (num_perm, shingles): contiguous rows, so reduceat along them is vectorized
            p = np.multiply.outer(a, hv_all[lo:hi])
            p += b[:, None]
            sigs = np.minimum.reduceat(p, first[group] - lo, axis=1).T.copy()
            for d, sig in zip(group.tolist(), sigs):
                if valid[d]:
                    out[d] = (sig, np.unique(hashes[first[d] : first[d + 1]]) if with_sets else None)
            i = j
    return out


def _one_text_features(text, n, kind, num_perm, seed, scheme, min_shingles, with_sets):
    hashes = shingle_hashes(text, n, kind)
    if not distinct_at_least(hashes, min_shingles):
        return None
    return signature_from_hashes(hashes, num_perm, seed, scheme), np.unique(hashes) if with_sets else None

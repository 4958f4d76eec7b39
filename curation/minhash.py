"""MinHash signatures and LSH band keys for fuzzy deduplication.

Signatures are bitwise identical to ``datasketch.MinHash(num_perm, seed, hashfunc=shingle_hash,
scheme=...)`` fed the same shingles (both the default ``affine32`` scheme of datasketch >= 2.0
and ``legacy``), computed with numpy over all shingles at once instead of one update per
shingle.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Literal

import numpy as np
import xxhash

ShingleKind = Literal["word", "char"]

# Documents with fewer shingles than this are not fuzzy-deduped: their MinHash is too noisy to
# estimate Jaccard (a 5-shingle document shares 1/5 of itself with anything containing one
# phrase).  Exact dedup still applies to them.
MIN_SHINGLES = 10

_MERSENNE_PRIME = np.uint64((1 << 61) - 1)
_MAX_HASH32 = np.uint64((1 << 32) - 1)


def shingle_hash(shingle: bytes | str) -> int:
    """32-bit xxhash of a shingle (UTF-8 encoded if str); pass this as datasketch's hashfunc."""
    if isinstance(shingle, str):
        shingle = shingle.encode("utf-8")
    return xxhash.xxh32_intdigest(shingle)


def shingles(text: str, n: int = 5, kind: ShingleKind = "word") -> set[str]:
    """Word n-grams (lowercase words joined by one space) or character n-grams of the
    whitespace-collapsed lowercase text.  Text shorter than one n-gram yields one shingle of the
    whole text (empty text yields none)."""
    if n < 1:
        raise ValueError(f"shingle size n must be >= 1, got {n}")
    words = text.lower().split()
    if kind == "word":
        if len(words) <= n:
            return {" ".join(words)} if words else set()
        return {" ".join(words[i : i + n]) for i in range(len(words) - n + 1)}
    if kind == "char":
        flat = " ".join(words)
        if len(flat) <= n:
            return {flat} if flat else set()
        return {flat[i : i + n] for i in range(len(flat) - n + 1)}
    raise ValueError(f"unknown shingle kind {kind!r} (setting 'shingle_kind'); expected 'word' or 'char'")


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
        return a, b
    raise ValueError(f"unknown MinHash scheme {scheme!r} (setting 'scheme'); expected 'affine32' or 'legacy'")


def _fmix32(h: np.ndarray) -> np.ndarray:
    """MurmurHash3's 32-bit finalizer, the pre-mix datasketch applies in the affine schemes."""
    h = h ^ (h >> np.uint32(16))
    h = h * np.uint32(0x85EBCA6B)
    h = h ^ (h >> np.uint32(13))
    h = h * np.uint32(0xC2B2AE35)
    return h ^ (h >> np.uint32(16))


# Shingles processed per step: bounds the (num_perm x chunk) intermediate to a few MB.
_CHUNK = 4096


def signature(
    shingle_set: set[str] | list[str], num_perm: int = 128, seed: int = 1, scheme: str = "affine32"
) -> np.ndarray:
    """MinHash signature: uint32 array (affine32) or uint64 array (legacy) of length num_perm.
    An empty input gives the all-max signature, as an un-updated datasketch MinHash."""
    if num_perm < 1:
        raise ValueError(f"num_perm must be >= 1, got {num_perm}")
    a, b = permutations(num_perm, seed, scheme)
    hashes = [shingle_hash(s) for s in shingle_set]
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
                phv = a[:, None] * hv + b[:, None]
            np.minimum(sig, phv.min(axis=1), out=sig)
    return sig


def estimated_jaccard(sig_a: np.ndarray, sig_b: np.ndarray) -> float:
    """Fraction of equal signature positions."""
    if len(sig_a) != len(sig_b):
        raise ValueError(f"signatures differ in length: {len(sig_a)} vs {len(sig_b)}")
    return float(np.count_nonzero(sig_a == sig_b)) / len(sig_a)


def exact_jaccard(a_shingles: set, b_shingles: set) -> float:
    """|A & B| / |A | B|; 0.0 for two empty sets."""
    union = len(a_shingles | b_shingles)
    return len(a_shingles & b_shingles) / union if union else 0.0


@lru_cache(maxsize=64)
def lsh_params(threshold: float, num_perm: int) -> tuple[int, int]:
    """(bands, rows) minimizing 0.5 * false positive + 0.5 * false negative probability, the
    same rule and result as ``datasketch.MinHashLSH(threshold, num_perm)``."""
    from scipy.integrate import quad

    if not 0.0 < threshold < 1.0:
        raise ValueError(f"LSH threshold must be in (0, 1), got {threshold}")
    if num_perm < 2:
        raise ValueError(f"num_perm must be >= 2 for LSH, got {num_perm}")
    best, opt = float("inf"), (0, 0)
    for b in range(1, num_perm + 1):
        for r in range(1, num_perm // b + 1):
            fp, _ = quad(lambda s: 1 - (1 - s ** float(r)) ** float(b), 0.0, threshold)
            fn, _ = quad(lambda s: 1 - (1 - (1 - s ** float(r)) ** float(b)), threshold, 1.0)
            error = 0.5 * fp + 0.5 * fn
            if error < best:
                best, opt = error, (b, r)
    return opt


def band_keys(sig: np.ndarray, bands: int, rows: int) -> list[tuple[int, bytes]]:
    """One key per band: (band index, 16-byte xxh3-128 digest of the band's values).
    Two documents are LSH candidates when they share any (band, digest) pair."""
    if bands * rows > len(sig):
        raise ValueError(f"bands * rows = {bands * rows} exceeds the signature length {len(sig)}")
    return [(i, xxhash.xxh3_128_digest(sig[i * rows : (i + 1) * rows].tobytes())) for i in range(bands)]

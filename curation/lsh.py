"""LSH banding of MinHash signatures and the similarity of candidate pairs.

Two documents are candidates when their signatures agree on all ``rows`` values of at least one
of ``bands`` bands: probability ``1 - (1 - s^rows)^bands`` for Jaccard s.  ``lsh_params`` picks
(bands, rows) for a threshold the way datasketch and BigCode do (minimise weighted false
positive + false negative probability mass); candidates are then verified by the exact Jaccard
of the two shingle-hash sets (``hash_jaccard``) or by the signature estimate.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
import xxhash


@lru_cache(maxsize=64)
def lsh_params(threshold: float, num_perm: int,
               weights: tuple[float, float] = (0.5, 0.5)) -> tuple[int, int]:
    """(bands, rows) minimising ``weights[0] * FP + weights[1] * FN``, where FP is the
    candidate probability integrated over Jaccard [0, threshold) and FN the miss probability
    over [threshold, 1].  With (0.5, 0.5) this is ``datasketch.MinHashLSH(threshold, num_perm)``'s
    rule and result; verified candidates justify weighting misses far more (see
    ``curation.fuzzy_config.FuzzyDedupConfig.false_negative_weight``)."""
    if not 0.0 < threshold < 1.0:
        raise ValueError(f"LSH threshold must be in (0, 1) (setting 'threshold'), got {threshold}")
    if num_perm < 2:
        raise ValueError(f"num_perm must be >= 2 for LSH (setting 'num_perm'), got {num_perm}")
    w_fp, w_fn = weights
    layouts = np.array([(b, r) for b in range(1, num_perm + 1) for r in range(1, num_perm // b + 1)],
                       dtype=np.float64)
    bands, rows = layouts[:, :1], layouts[:, 1:]
    # Both integrands are polynomials in s of degree b * r <= num_perm, which Gauss-Legendre
    # quadrature with n nodes integrates exactly for n >= (num_perm + 1) / 2: datasketch's
    # adaptive quad up to rounding (same layout for every threshold 0.05..0.95, num_perm
    # 16..256 and weight tried), without scipy and for all layouts at once.
    nodes, node_weights = np.polynomial.legendre.leggauss(num_perm // 2 + 1)

    def integral(lo: float, hi: float, f) -> np.ndarray:
        s = (hi - lo) / 2 * nodes + (hi + lo) / 2
        return (hi - lo) / 2 * (f(s[None, :]) @ node_weights)

    fp = integral(0.0, threshold, lambda s: 1 - (1 - s**rows) ** bands)
    fn = integral(threshold, 1.0, lambda s: (1 - s**rows) ** bands)
    best = int(np.argmin(w_fp * fp + w_fn * fn))  # the first minimum, as datasketch's loop keeps
    return int(layouts[best, 0]), int(layouts[best, 1])


def candidate_probability(jaccard: float, bands: int, rows: int) -> float:
    """P(two documents of true Jaccard s share at least one band) = 1 - (1 - s^r)^b."""
    return 1.0 - (1.0 - jaccard**rows) ** bands


def band_keys(sig: np.ndarray, bands: int, rows: int) -> list[tuple[int, bytes]]:
    """One key per band: (band index, 8-byte xxh3-64 digest of the band's values).
    Two documents are LSH candidates when they share any (band, digest) pair.  (A digest
    collision between different band values makes a false candidate, which verification
    rejects; at 10^9 documents about 0.03 such collisions are expected per band.)"""
    if bands * rows > len(sig):
        raise ValueError(f"bands * rows = {bands * rows} exceeds the signature length {len(sig)}")
    return [(i, xxhash.xxh3_64_digest(sig[i * rows : (i + 1) * rows].tobytes())) for i in range(bands)]


def estimated_jaccard(sig_a: np.ndarray, sig_b: np.ndarray) -> float:
    """Fraction of equal signature positions."""
    if len(sig_a) != len(sig_b):
        raise ValueError(f"signatures differ in length: {len(sig_a)} vs {len(sig_b)}")
    return float(np.count_nonzero(sig_a == sig_b)) / len(sig_a)


def exact_jaccard(a_shingles: set, b_shingles: set) -> float:
    """|A & B| / |A | B|; 0.0 for two empty sets."""
    union = len(a_shingles | b_shingles)
    return len(a_shingles & b_shingles) / union if union else 0.0


def hash_set(hashes: np.ndarray) -> np.ndarray:
    """The sorted distinct values of a shingle-hash array: the compact set ``hash_jaccard``
    compares (4 bytes per distinct shingle)."""
    return np.unique(np.asarray(hashes, dtype=np.uint32))


def hash_jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """Exact Jaccard of two ``hash_set`` arrays (sorted, distinct); 0.0 for two empty sets.
    Equal to ``exact_jaccard`` of the shingle strings unless two different shingles share a
    32-bit hash (about n^2 / 2^33 pairs among n shingles: negligible for documents)."""
    if len(a) == 0 and len(b) == 0:
        return 0.0
    both = len(np.intersect1d(a, b, assume_unique=True))
    return both / (len(a) + len(b) - both)

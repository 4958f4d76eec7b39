"""MinHash is bitwise datasketch; LSH parameters match datasketch; exact-dedup keep rule."""
from __future__ import annotations

import datasketch
import numpy as np
import pytest

from curation.document import Document
from curation.exact_dedup import canonical_text, keep_rank, text_hash
from curation.lsh import band_keys, candidate_probability, estimated_jaccard, exact_jaccard, lsh_params
from curation.minhash import (
    MIN_SHINGLES, shingle_hasher, shingle_hashes, shingles, signature, signature_from_hashes, text_signature,
)

TEXT = ("It was the best of times, it was the worst of times, it was the age of wisdom, it was the age "
        "of foolishness, it was the epoch of belief, it was the epoch of incredulity.")


@pytest.mark.parametrize("scheme", ["affine32", "legacy"])
@pytest.mark.parametrize("num_perm, seed", [(128, 1), (100, 42), (7, 0)])
@pytest.mark.parametrize("kind", ["word", "char"])
def test_signature_bitwise_equals_datasketch(scheme, num_perm, seed, kind):
    text = TEXT * 3 + " Ünïcode wörds — and   odd\tspacing."
    sh = shingles(text, 5, kind)
    ref = datasketch.MinHash(num_perm=num_perm, seed=seed, hashfunc=shingle_hasher(kind), scheme=scheme)
    for s in sh:
        ref.update(s)
    ours = text_signature(text, 5, kind, num_perm, seed, scheme)  # the vectorized path
    assert ours.dtype == ref.hashvalues.dtype
    assert np.array_equal(ours, ref.hashvalues)
    assert np.array_equal(signature(sh, num_perm, seed, scheme, kind), ref.hashvalues)


@pytest.mark.parametrize("kind", ["word", "char"])
@pytest.mark.parametrize("text", ["", "one", "two words", "a b c d e", "a b c d e f g", "repeat " * 30])
def test_vectorized_hashes_equal_per_shingle_hashes(kind, text):
    assert set(shingle_hashes(text, 5, kind).tolist()) == {shingle_hasher(kind)(s) for s in shingles(text, 5, kind)}


def test_update_batch_with_default_scheme_is_bitwise_equal():
    text = " ".join(f"w{i % 97}x{i % 13}" for i in range(3000))
    ref = datasketch.MinHash(num_perm=128, hashfunc=shingle_hasher("word"))
    ref.update_batch(list(shingles(text)))
    assert np.array_equal(text_signature(text), ref.hashvalues)
    assert text_signature("repeat " * 300) is None  # one distinct shingle: not fuzzy-deduped
    assert text_signature("repeat " * 300, min_shingles=1) is not None
    long = " ".join(f"u{i}" for i in range(40_000))  # grows the cached power tables
    assert set(shingle_hashes(long).tolist()) == {shingle_hasher()(s) for s in shingles(long)}


def test_signature_of_many_shingles_and_empty():
    many = {f"shingle {i}" for i in range(10_000)}  # crosses the chunk boundary
    ref = datasketch.MinHash(num_perm=64, hashfunc=shingle_hasher("word"))
    ref.update_batch(list(many))
    assert np.array_equal(signature(many, 64), ref.hashvalues)
    assert np.array_equal(signature(set(), 64), datasketch.MinHash(num_perm=64).hashvalues)
    assert np.array_equal(signature_from_hashes(np.zeros(0), 64), datasketch.MinHash(num_perm=64).hashvalues)


def test_shingles():
    assert shingles("A b c d e F", 5) == {"a b c d e", "b c d e f"}
    assert shingles("too short", 5) == {"too short"}
    assert shingles("", 5) == set()
    assert shingles("ab  cd", 3, "char") == {"ab ", "b c", " cd"}
    with pytest.raises(ValueError, match="'shingle'"):
        shingles("x", 5, "byte")
    assert MIN_SHINGLES > 1


@pytest.mark.parametrize("threshold, num_perm", [(0.8, 128), (0.7, 100), (0.5, 256), (0.9, 64)])
def test_lsh_params_equal_datasketch(threshold, num_perm):
    lsh = datasketch.MinHashLSH(threshold=threshold, num_perm=num_perm)
    assert lsh_params(threshold, num_perm) == (lsh.b, lsh.r)
    b, r = lsh.b, lsh.r
    assert candidate_probability(threshold + 0.1, b, r) > candidate_probability(threshold - 0.2, b, r)


@pytest.mark.parametrize("weights", [(0.5, 0.5), (0.05, 0.95), (0.01, 0.99)])
def test_lsh_params_equal_adaptive_quadrature(weights):
    """The closed-form (Gauss-Legendre) integrals pick datasketch's layout: its rule with scipy's
    adaptive quad, over a grid of thresholds and signature lengths, any weights."""
    from scipy.integrate import quad

    def by_quad(threshold, num_perm):
        best, opt = float("inf"), None
        for b in range(1, num_perm + 1):
            for r in range(1, num_perm // b + 1):
                fp = quad(lambda s: 1 - (1 - s**r) ** b, 0.0, threshold)[0]
                fn = quad(lambda s: (1 - s**r) ** b, threshold, 1.0)[0]
                if weights[0] * fp + weights[1] * fn < best:
                    best, opt = weights[0] * fp + weights[1] * fn, (b, r)
        return opt

    for threshold in (0.15, 0.45, 0.6, 0.75, 0.85, 0.95):
        for num_perm in (16, 50, 128):
            assert lsh_params(threshold, num_perm, weights) == by_quad(threshold, num_perm), \
                (threshold, num_perm)


def test_jaccard_and_band_keys():
    a, b = shingles(TEXT, 3), shingles(TEXT.replace("wisdom", "reason"), 3)
    true = exact_jaccard(a, b)
    assert 0.7 < true < 1.0
    sa, sb = signature(a, 256), signature(b, 256)
    assert abs(estimated_jaccard(sa, sb) - true) < 0.12
    assert exact_jaccard(set(), set()) == 0.0
    bands, rows = lsh_params(0.7, 256)
    ka, kb = band_keys(sa, bands, rows), band_keys(sb, bands, rows)
    assert len(ka) == bands and all(len(k) == 8 for _, k in ka)
    assert set(ka) & set(kb)  # near duplicates share a band
    far = band_keys(signature(shingles("completely different words about other topics entirely here", 3), 256),
                    bands, rows)
    assert not set(ka) & set(far)
    with pytest.raises(ValueError):
        band_keys(sa, 300, 1)


def test_text_hash_canonical():
    assert canonical_text("  Hello\n\tWORLD ") == "hello world"
    assert text_hash("Hello   world") == text_hash("hello\nWorld")
    assert text_hash("hello world") != text_hash("hello world!")
    assert len(text_hash("x")) == 32


def test_keep_rank_order():
    def doc(i, source, text="x" * 10, q=None):
        return Document(id=i, source=source, text=text, quality_score=q)

    prio = {"wikipedia": 100, "pile_cc": 40, "cc_2020_50": 10}
    best = lambda docs: min(docs, key=lambda d: keep_rank(d, prio)).id  # noqa: E731
    assert best([doc("a", "cc_2020_50"), doc("b", "wikipedia"), doc("c", "pile_cc")]) == "b"
    assert best([doc("a", "pile_cc", q=0.2), doc("b", "pile_cc", q=0.9)]) == "b"
    assert best([doc("a", "pile_cc"), doc("b", "pile_cc", q=0.1)]) == "b"  # scored beats unscored
    assert best([doc("a", "pile_cc", "short"), doc("b", "pile_cc", "much longer text")]) == "b"
    assert best([doc("b", "pile_cc"), doc("a", "pile_cc")]) == "a"
    assert best([doc("a", "unknown_src"), doc("b", "cc_2020_50")]) == "b"
    assert keep_rank(doc("a", "wikipedia")) < keep_rank(doc("b", "cc_2021_04"))  # default priority

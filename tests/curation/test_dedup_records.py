"""Dedup records: computed per document, consistent with the reference functions, small."""
from __future__ import annotations

import numpy as np
import pytest

from curation.dedup_records import DedupRecord, dedup_node, dedup_records, node_id, node_source, similarity
from curation.document import Document
from curation.exact_dedup import keep_rank, priority_map, text_digest, text_hash
from curation.fuzzy_config import FuzzyDedupConfig
from curation.lsh import band_keys, exact_jaccard, hash_jaccard, hash_set
from curation.minhash import shingle_hasher, shingle_hashes, shingles, text_features, text_signature

WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho".split()


def text(seed: int, n: int = 200) -> str:
    rng = np.random.default_rng(seed)
    return " ".join(rng.choice(WORDS, n)) + f" end{seed}"


def test_record_fields_match_the_reference_functions():
    docs = [Document("a/1", "wikipedia", text(1), quality_score=0.9), Document("b/2", "pile_cc", text(2)),
            Document("c/3", "pile_cc", "too short")]
    cfg = FuzzyDedupConfig()
    recs = dedup_records(docs, cfg, priority_map(["wikipedia", "pile_cc"]))
    bands, rows = cfg.band_layout()
    for d, r in zip(docs, recs):
        assert r.node == keep_rank(d, {"wikipedia": 2, "pile_cc": 1}) + (d.source,) == dedup_node(d, {"wikipedia": 2, "pile_cc": 1})
        assert (r.id, r.source) == (node_id(r.node), node_source(r.node)) == (d.id, d.source)
        assert r.text_hash == text_digest(d.text) and r.text_hash.hex() == text_hash(d.text)
    for d, r in zip(docs[:2], recs[:2]):
        sig = text_signature(d.text, 5, "word", 100, 1)
        assert r.signature == sig.astype("<u4").tobytes()
        assert r.bands == tuple(band_keys(sig, bands, rows))
        assert np.frombuffer(r.shingles, "<u4").tolist() == sorted({shingle_hasher()(s) for s in shingles(d.text)})
    assert recs[2] == DedupRecord(recs[2].node, text_digest("too short"))  # too few shingles: exact only
    assert len(recs[0].shingles) == 4 * len(shingles(docs[0].text))  # 4 bytes per distinct shingle


def test_exact_only_and_estimated_records():
    doc = Document("a/1", "wikipedia", text(3))
    (exact_only,) = dedup_records([doc], None)
    assert exact_only.bands is None and exact_only.signature is None
    (est,) = dedup_records([doc], FuzzyDedupConfig(verify="estimated"))
    assert est.shingles is None and len(est.signature) == 400


@pytest.mark.parametrize("kind, scheme", [("word", "affine32"), ("char", "affine32"), ("word", "legacy")])
def test_text_features_batch_equals_one_by_one(kind, scheme):
    texts = [text(i, 50 + 30 * i) for i in range(5)] + ["", "tiny text"]
    feats = text_features(texts, 5, kind, 64, 3, scheme, with_sets=True)
    for t, f in zip(texts, feats):
        sig = text_signature(t, 5, kind, 64, 3, scheme)
        if sig is None:
            assert f is None
            continue
        assert np.array_equal(f[0], sig)
        assert np.array_equal(f[1], hash_set(shingle_hashes(t, 5, kind)))


def test_similarity_exact_equals_jaccard_of_shingle_strings():
    a = text(4)
    words = a.split()
    b = " ".join(words[:60] + ["changed"] + words[61:120] + ["also", "new"] + words[120:])
    ra, rb = dedup_records([Document("a", "x", a), Document("b", "x", b)], FuzzyDedupConfig())
    truth = exact_jaccard(shingles(a), shingles(b))
    assert 0.8 < truth < 1.0
    assert similarity(ra.shingles, rb.shingles, "exact") == pytest.approx(truth, abs=1e-12)
    ea, eb = dedup_records([Document("a", "x", a), Document("b", "x", b)], FuzzyDedupConfig(verify="estimated"))
    assert abs(similarity(ea.signature, eb.signature, "estimated") - truth) < 0.15
    empty = np.zeros(0, np.uint32)
    assert hash_jaccard(empty, empty) == 0.0
    assert hash_jaccard(np.array([1, 2, 3], np.uint32), np.array([2, 3, 4], np.uint32)) == 0.5


def test_outranked_older_lists_new_sources_the_keep_rule_prefers():
    from curation.exact_dedup import outranked_older

    # default order: realnews (60) above cc_2020_50 (10), below wikipedia (100)
    assert outranked_older({"realnews"}, ["cc_2020_50", "wikipedia"]) == [("realnews", "cc_2020_50")]
    assert outranked_older({"cc_2021_04"}, ["realnews"]) == []
    # an explicit priority decides; an unknown older source ranks below every listed one
    assert outranked_older({"cc_2021_04"}, ["realnews"], ["cc_2021_04", "realnews"]) == \
        [("cc_2021_04", "realnews")]
    assert outranked_older({"realnews"}, ["somewhere"], ["realnews"]) == [("realnews", "somewhere")]
    assert outranked_older({"realnews"}, ["realnews"]) == []  # equal rank: not outranked

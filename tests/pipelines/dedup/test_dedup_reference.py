"""One TestPipeline per dedup building block: DedupRecords, VerifyCandidates, ClusterRows."""
from __future__ import annotations

import apache_beam as beam
from apache_beam.testing.util import assert_that, equal_to

from curation.dedup_records import dedup_records, node_id, similarity
from curation.fuzzy_config import FuzzyDedupConfig
from curation.lsh import exact_jaccard
from curation.minhash import shingles
from dedup_reference import DedupRecords
from dedup_reference import ClusterRows, VerifyCandidates
from pipeline_fixtures import doc, english


def test_dedup_records_one_per_document(pipeline):
    docs = [doc(f"d{i}", english(i), "wikipedia" if i % 2 else "pile_cc") for i in range(20)]
    cfg = FuzzyDedupConfig()
    expected = dedup_records(docs, cfg, {"wikipedia": 2, "pile_cc": 1})
    with pipeline as p:
        records = p | beam.Create(docs) | DedupRecords(cfg, ["wikipedia", "pile_cc"])
        assert_that(records, equal_to(expected))


def test_verify_candidates_keeps_pairs_at_the_threshold_with_their_similarity(pipeline):
    base = english(1)
    words = base.split()
    near = " ".join(words[:100] + ["museum"] + words[101:])
    docs = [doc("a", base), doc("b", near), doc("c", english(2)), doc("d", english(3))]
    recs = dedup_records(docs, FuzzyDedupConfig())
    node = {r.id: r.node for r in recs}
    true = exact_jaccard(shingles(base), shingles(near))
    # (a, b) a true pair found in two bands; (a, c) a false candidate; (c, d) with d unknown
    candidates = [(node["a"], node["b"]), (node["a"], node["b"]), (node["a"], node["c"]),
                  (node["c"], node["d"])]
    with pipeline as p:
        edges = {"records": p | "R" >> beam.Create(recs[:3]), "candidates": p | "C" >> beam.Create(candidates)} \
            | VerifyCandidates("exact", 0.8)
        assert_that(edges | beam.Map(lambda e: (node_id(e[0]), node_id(e[1]), round(e[2], 9))),
                    equal_to([("a", "b", round(true, 9))]))
    assert true == similarity(recs[0].shingles, recs[1].shingles, "exact") >= 0.8


def test_cluster_rows_sizes_kept_member_and_best_similarity(pipeline):
    def node(rank, i, source):  # curation.dedup_records: four rank values, id, source
        return (rank, 0, 0.0, 0, i, source)
    a, b, c, d = node(0, "a", "wikipedia"), node(1, "b", "pile_cc"), node(2, "c", "pile_cc"), node(5, "d", "realnews")
    e = node(6, "e", "realnews")
    labels = [(b, a), (c, a), (e, d)]
    edges = [(a, b, 0.9), (a, c, 0.85), (b, c, 0.95), (d, e, None)]
    with pipeline as p:
        rows = {"labels": p | "L" >> beam.Create(labels), "edges": p | "E" >> beam.Create(edges)} | ClusterRows()
        assert_that(rows | beam.Map(lambda r: (r["group"], r["id"], r["kept"], r["cluster_size"],
                                               r["reason"], r["similarity"], r["kept_source"])),
                    equal_to([("a", "a", True, 3, "keep_rule", 0.9, "wikipedia"),
                              ("a", "b", False, 3, "near_duplicate", 0.95, "wikipedia"),
                              ("a", "c", False, 3, "near_duplicate", 0.95, "wikipedia"),
                              ("d", "d", True, 2, "keep_rule", None, "realnews"),
                              ("d", "e", False, 2, "near_duplicate", None, "realnews")]))

"""The record-based reference of the dedup stage (dedup_reference.py), one TestPipeline per
building block: records, exact dedup, connected components, fuzzy dedup, verification, cluster
rows."""
from __future__ import annotations

import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that, equal_to

from curation.dedup_records import dedup_records, node_id, similarity
from curation.fuzzy_config import FuzzyDedupConfig
from curation.lsh import exact_jaccard
from curation.minhash import shingles
from dedup_reference import ClusterRows, DedupRecords, ExactDedup, FuzzyDedup, VerifyCandidates
from dedup_reference_components import ConnectedComponents
from pipeline_fixtures import doc, english, local_pipeline
from pipelines.dedup.groups import NotConvergedError


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


def test_exact_dedup_keeps_the_highest_priority_source(pipeline):
    from dedup_reference import DedupRecords

    text = english(2)
    docs = [doc("cc/1", text, "cc_2020_50"), doc("wiki/1", text.upper(), "wikipedia"),
            doc("rn/1", text, "realnews"), doc("other", english(3))]
    with pipeline as p:
        out = p | beam.Create(docs) | DedupRecords() | ExactDedup()
        assert_that(out["kept"] | beam.Map(lambda m: node_id(m[0])), equal_to(["wiki/1", "other"]), label="kept")
        assert_that(out["decisions"] | beam.Map(lambda d: (d.id, d.stage, d.reason, d.detail["kept"])),
                    equal_to([("cc/1", "exact_dedup", "duplicate", "wiki/1"),
                              ("rn/1", "exact_dedup", "duplicate", "wiki/1")]), label="decisions")
        assert_that(out["groups"] | beam.Map(lambda g: (g["id"], g["kept"])),
                    equal_to([("wiki/1", True), ("cc/1", False), ("rn/1", False)]), label="groups")


def test_connected_components_finds_stars_around_the_smallest_node(pipeline):
    # a chain 1-2-3-4-5 (needs several rounds), a separate pair 7-8 and a triangle 10-11-12
    edges = [(2, 1), (2, 3), (4, 3), (5, 4), (8, 7), (10, 11), (11, 12), (12, 10)]
    with pipeline as p:
        labels = p | beam.Create(edges) | ConnectedComponents(rounds=4)
        assert_that(labels, equal_to([(2, 1), (3, 1), (4, 1), (5, 1), (8, 7), (11, 10), (12, 10)]))


def test_connected_components_fails_loudly_when_not_converged():
    chain = [(i, i + 1) for i in range(64)]
    with pytest.raises(Exception, match="max_rounds"):
        with local_pipeline() as p:
            _ = p | beam.Create(chain) | ConnectedComponents(rounds=1)
    assert issubclass(NotConvergedError, RuntimeError)


def test_fuzzy_dedup_removes_near_duplicates_keeping_priority(pipeline):
    from dedup_reference import DedupRecords

    base = english(4)
    near = base.replace("library", "museum", 1)
    docs = [doc("owt/1", near, "openwebtext2"), doc("wiki/1", base, "wikipedia"),
            doc("cc/1", english(5), "cc_2020_50"), doc("tiny", "short", "wikipedia")]
    cfg = FuzzyDedupConfig(num_perm=64, bands=16, rows=4, threshold=0.7, max_rounds=2)
    with pipeline as p:
        out = p | beam.Create(docs) | DedupRecords(cfg) | FuzzyDedup(cfg)
        assert_that(out["decisions"] | beam.Map(lambda d: (d.id, d.stage, d.reason, d.detail["kept"])),
                    equal_to([("owt/1", "fuzzy_dedup", "near_duplicate", "wiki/1")]), label="decisions")
        assert_that(out["groups"] | beam.Map(lambda r: (r["id"], r["kept"], round(r["similarity"], 6))),
                    equal_to([("wiki/1", True, 0.981982), ("owt/1", False, 0.981982)]), label="rows")
        assert_that(out["inputs"], equal_to([(("fuzzy", d.source), 1) for d in docs]), label="inputs")

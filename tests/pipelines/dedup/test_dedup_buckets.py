"""Oversized LSH buckets are salted, still clustered, and reported; exact-dedup rows."""
from __future__ import annotations

import apache_beam as beam
from apache_beam.testing.util import assert_that, equal_to

from curation.exact_dedup import keep_rank
from pipelines.config.job import FuzzyDedupConfig
from dedup_reference import DedupRecords
from dedup_reference import FuzzyDedup
from pipeline_fixtures import doc, english


def test_oversized_bucket_is_sharded_and_reported(pipeline):
    base = english(4)
    words = base.split()
    # 12 near copies (one word changed each, far apart) + one unrelated document
    docs = [doc(f"owt/{i:02d}", " ".join(words[:i] + ["zebra"] + words[i + 1:]), "openwebtext2")
            for i in range(12)] + [doc("cc/1", english(5), "cc_2020_50")]
    cfg = FuzzyDedupConfig(num_perm=64, bands=16, rows=4, threshold=0.7, max_rounds=6,
                           max_bucket=3, bucket_shards=4)
    best = min(docs[:12], key=keep_rank).id  # same source: the longer text, then the smaller id
    with pipeline as p:
        out = p | beam.Create(docs) | DedupRecords(cfg) | FuzzyDedup(cfg)
        assert_that(out["decisions"] | beam.Map(lambda d: (d.id, d.detail["kept"])),
                    equal_to([(d.id, best) for d in docs[:12] if d.id != best]), label="removed")
        assert_that(out["groups"] | beam.Map(lambda r: (r["id"], r["kept"], r["cluster_size"], r["source"])),
                    equal_to([(f"owt/{i:02d}", f"owt/{i:02d}" == best, 12, "openwebtext2") for i in range(12)]),
                    label="rows")
        assert_that(out["buckets"] | "Big" >> beam.Filter(lambda b: b["size"] > 3)
                    | "Any" >> beam.combiners.Count.Globally() | beam.Map(lambda n: n > 0),
                    equal_to([True]), label="reported")

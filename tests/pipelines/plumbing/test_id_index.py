"""The id index written from spool files: every entry lands once, in its bucket, sorted, and
``lookup`` finds it; with several buckets too."""
from __future__ import annotations

import glob
import os

import apache_beam as beam
import pyarrow.parquet as pq
import pytest

from pipelines.plumbing import id_index
from pipelines.plumbing.id_index import WriteIdIndex, bucket_of, lookup
from pipelines.plumbing.id_index_spool import EntrySpool, entry
from pipelines.plumbing.sinks import WriteRowsFn
from pipeline_fixtures import local_pipeline


def _entries(n: int, start: int = 0) -> list[tuple]:
    return [entry("stats", f"src/file.jsonl:{i}", f"src/file.jsonl:{i}", f"stats/part-{i % 3}.parquet")
            for i in range(start, start + n)]


@pytest.mark.parametrize("per_bucket", [10_000, 40])
def test_spooled_entries_land_once_in_their_sorted_bucket(tmp_path, monkeypatch, per_bucket):
    monkeypatch.setattr(id_index, "ENTRIES_PER_BUCKET", per_bucket)
    out = str(tmp_path)
    spools = []
    for k in range(3):  # three writers' spool files, the last one empty
        s = EntrySpool(out, "kept")
        for e in _entries(100 if k < 2 else 0, start=100 * k):
            s.add(e)
        spools.append(s.close())
    assert spools[2] is None and all(os.path.exists(d["spool"]) for d in spools[:2])
    with local_pipeline() as p:  # never Prism: it downloads a binary
        _ = (p | beam.Create([d for d in spools if d]) | WriteIdIndex(out, "tokenize"))
    files = sorted(glob.glob(os.path.join(out, "stats", "id_index", "*.parquet")))
    buckets = id_index.buckets_for(200)
    assert buckets == (1 if per_bucket == 10_000 else 8)
    assert len(files) == buckets  # 200 uniform hashes fill every one of 8 buckets
    seen = []
    for f in files:
        b, _, n = os.path.basename(f)[:-len(".parquet")].rsplit("-", 3)[-3:]
        assert int(n) == buckets
        hashes = pq.read_table(f).column("key_hash").to_pylist()
        assert hashes == sorted(hashes)
        assert {bucket_of(h, buckets) for h in hashes} == {int(b)}
        seen += pq.read_table(f).column("key").to_pylist()
    assert sorted(seen) == sorted(e[1] for e in _entries(200))
    hit = lookup(out, "src/file.jsonl:123")
    assert [(r["what"], r["id"], r["file"]) for r in hit] == [("stats", "src/file.jsonl:123", "stats/part-0.parquet")]


def test_one_writer_per_stage_writes_each_producers_own_buckets(tmp_path, monkeypatch):
    monkeypatch.setattr(id_index, "ENTRIES_PER_BUCKET", 40)
    out = str(tmp_path)
    spools = []
    for producer, n, start in (("kept", 200, 0), ("removed", 30, 1000), ("kept", 0, 0)):
        s = EntrySpool(out, producer)
        for e in _entries(n, start=start):
            s.add(e)
        spools.append(s.close())
    with local_pipeline() as p:
        _ = p | beam.Create([d for d in spools if d]) | WriteIdIndex(out, "dedup")
    names = sorted(os.path.basename(f) for f in glob.glob(os.path.join(out, "stats", "id_index", "*.parquet")))
    assert names == [f"dedup-kept-{b:05d}-of-00008.parquet" for b in range(8)] + [
        "dedup-removed-00000-of-00001.parquet"]
    assert [r["id"] for r in lookup(out, "src/file.jsonl:1003")] == ["src/file.jsonl:1003"]


def test_gather_lists_a_small_pcollection_also_when_empty():
    from apache_beam.testing.util import assert_that, equal_to

    from pipelines.plumbing.sinks import Gather

    with local_pipeline() as p:
        full = p | "Full" >> beam.Create([3, 1, 2]) | "GatherFull" >> Gather()
        empty = p | "Empty" >> beam.Create([]) | "GatherEmpty" >> Gather()
        assert_that(full | beam.Map(sorted), equal_to([[1, 2, 3]]), label="full")
        assert_that(empty, equal_to([[]]), label="empty")


def test_row_writer_sends_one_spool_per_file_not_one_element_per_row(tmp_path):
    out = str(tmp_path)
    rows = [("stats/documents/tokenize", {"id": f"d{i}", "url": None}) for i in range(25)]
    with local_pipeline() as p:
        written = (p | beam.Create(rows)
                   | beam.ParDo(WriteRowsFn(out, "jsonl", max_rows=10,
                                            index_keys=lambda r: [("stats", r["id"], r["id"])],
                                            index_producer="kept"))
                   .with_outputs("index", main="files"))
        _ = written.index | WriteIdIndex(out, "tokenize")
    files = glob.glob(os.path.join(out, "_w", "stats", "documents", "tokenize-*.jsonl.gz"))
    spools = glob.glob(os.path.join(out, "_tmp", "id_index", "*.arrow"))
    assert len(spools) == len(files) >= 3  # rolled over at 10 rows: one spool per file
    for i in (0, 13, 24):
        (hit,) = lookup(out, f"d{i}")
        assert os.path.exists(os.path.join(out, "_w", hit["file"]))

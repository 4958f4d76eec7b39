"""The transforms the stages are built from: row writers, parts, decisions, shards, chains, work."""
import glob
import json
import os

import apache_beam as beam
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
from apache_beam.testing.util import assert_that, equal_to

from curation.document import Document
from pipelines.filters.chain import ChainFn
from pipelines.plumbing.outputs import REMOVED
from pipelines.filters.base import FilterDoFn
from pipelines.plumbing.parts import from_row, to_row
from pipelines.tokenize.shards import WriteShards, shard_bounds
from pipelines.plumbing.sinks import WriteRowsFn
from pipeline_fixtures import doc, local_pipeline


def test_document_parts_round_trip_every_field(tmp_path):
    d = Document("s/f:1", "books3", "text é\n", url="http://x", meta={"pieces": [{"id": "a", "chars": 3}]},
                 lang="en", lang_score=0.5, quality_score=None, tokens=7)
    assert from_row(to_row(d)) == d
    assert from_row(to_row(Document("i", "s", "t"))) == Document("i", "s", "t")


def test_row_writer_rolls_files_and_describes_them(pipeline, tmp_path):
    out = str(tmp_path)
    rows = [("a/part", {"i": i}) for i in range(7)] + [("b/part", {"i": 99})]
    with pipeline as p:
        descs = (p | beam.Create(rows)
                 | beam.ParDo(WriteRowsFn(out, "jsonl", max_rows=3, row_group=2)))
        assert_that(descs | beam.Map(lambda d: (d["dest"], d["rows"])) | beam.combiners.Count.PerElement(),
                    equal_to([(("a/part", 3), 2), (("a/part", 1), 1), (("b/part", 1), 1)]))
    files = glob.glob(os.path.join(out, "_w", "a", "part-*.jsonl.gz"))
    got = sorted(json.loads(line)["i"] for f in files for line in pd.read_json(f, lines=True).to_json(
        orient="records", lines=True).splitlines())
    assert got == list(range(7))


def _shards(tmp_path, name, items, run_bytes):
    out = str(tmp_path / name)
    with local_pipeline(test=False) as p:
        rows = p | beam.Create(items) | WriteShards(out, 1500, "uint16", run_bytes=run_bytes)
        _ = rows | beam.combiners.ToList() | beam.Map(
            lambda rs: open(os.path.join(out, "rows.json"), "w").write(json.dumps(sorted(rs, key=str))))
    return out


def test_shards_depend_only_on_the_kept_documents(tmp_path):
    rng = np.random.default_rng(0)
    items = []
    for i in range(60):
        n = int(rng.integers(20, 200))
        items.append((Document(f"{'ab'[i % 2]}/f:{i}", "ab"[i % 2], f"text {i}", tokens=n),
                      rng.integers(0, 50000, n).astype(np.int32)))
    one = _shards(tmp_path, "one_run", items, run_bytes=1 << 30)
    many = _shards(tmp_path, "many_runs", list(reversed(items)), run_bytes=500)  # a run per ~2 docs
    names = sorted(os.path.relpath(f, one) for f in glob.glob(os.path.join(one, "**", "*.*"), recursive=True)
                   if "/_tmp/" not in f)
    assert any(n.startswith("shards/a/a_00002") for n in names)  # ceil(tokens / 1500) shards
    for n in names:
        assert open(os.path.join(one, n), "rb").read() == open(os.path.join(many, n), "rb").read(), n
    rows = json.load(open(os.path.join(one, "rows.json")))
    assert sum(r["documents"] for r in rows) == 60
    # each shard holds its hash range in (hash, id) order, and its documents part the same ids
    from infra.hashing import stable_hash

    for r in rows:
        part = pq.read_table(os.path.join(one, "documents", r["source"], f"part-{r['shard']:05d}.parquet"))
        ids = part.column("id").to_pylist()
        lo, hi = shard_bounds(r["shard"], max(x["shard"] for x in rows if x["source"] == r["source"]) + 1)
        assert all(lo <= stable_hash(i) < hi for i in ids)
        assert [stable_hash(i) for i in ids] == sorted(stable_hash(i) for i in ids)
        assert len(ids) == r["documents"]


class _DropOdd(FilterDoFn):
    stage = "heuristics"

    def check(self, d):
        from curation.document import FilterResult

        return d, FilterResult.drop("odd") if int(d.id) % 2 else FilterResult.kept()


class _Split(beam.DoFn):
    def process(self, d):
        yield d
        yield Document(d.id + "0", d.source, d.text)


def test_chain_runs_dofns_back_to_back_and_merges_their_tagged_outputs(pipeline):
    docs = [doc(str(i), "x") for i in (1, 2, 3)]
    with pipeline as p:
        out = (p | beam.Create(docs)
               | beam.ParDo(ChainFn([_Split(), _DropOdd()])).with_outputs(REMOVED, main="kept"))
        assert_that(out.kept | beam.Map(lambda d: d.id), equal_to(["10", "2", "20", "30"]), label="kept")
        assert_that(out[REMOVED] | beam.Map(lambda r: (r.doc.id, r.reason)),
                    equal_to([("1", "odd"), ("3", "odd")]), label="removed")


def test_large_files_are_read_as_slices_each_record_once(pipeline, tmp_path, monkeypatch):
    from pipelines.read import plan, readers
    from pipelines.config.job import InputSpec
    from pipeline_fixtures import write_corpus

    write_corpus(str(tmp_path))
    monkeypatch.setattr(plan, "SLICE_BYTES", 100)  # the tiny Pile file becomes several slices
    spec = InputSpec(reader="pile", paths=[os.path.join(str(tmp_path), "pile", "*.jsonl.zst")])
    size = os.path.getsize(os.path.join(str(tmp_path), "pile", "00.jsonl.zst"))
    with pipeline as p:
        items = p | plan.PlanWork([spec])
        out = items | beam.ParDo(readers.ReadWorkFn([spec])).with_outputs(*readers.OUTPUT_TAGS, main="docs")
        assert_that(items | "Slices" >> beam.combiners.Count.Globally(),
                    equal_to([plan.slices_for(size)]), label="slices")
        assert_that(out.docs | beam.Map(lambda d: d.id.rsplit(":", 1)[1]),
                    equal_to(["0", "1", "2", "4", "6"]), label="docs")
        assert_that(out[REMOVED] | beam.Map(lambda r: r.reason), equal_to(["pile_subset_not_in_blend"]),
                    label="removed")
        assert_that(out["dead_letter"] | "Dead" >> beam.combiners.Count.Globally(), equal_to([1]), label="dead")
        # 7 records read, each by exactly one slice
        assert_that(out[readers.READ] | beam.Values() | beam.CombineGlobally(sum), equal_to([7]), label="read")

"""The tokenize stage: EOD after each document and short documents removed; shards that depend only
on the kept documents."""

import glob
import json
import os

import apache_beam as beam
import numpy as np
import pyarrow.parquet as pq
from apache_beam.testing.util import assert_that, equal_to

from curation.document import Document
from pipeline_fixtures import GPT2, doc, english, local_pipeline
from pipelines.tokenize.shards import WriteShards, shard_bounds
from pipelines.tokenize.tokens import Tokenize


def ids(pcoll, label):
    return pcoll | label >> beam.Map(lambda d: d.id)


def removals(pcoll, label):
    return pcoll | label >> beam.Map(lambda r: (r.doc.id, r.stage, r.reason))


def test_tokenize_appends_eod_and_removes_short_documents(pipeline):
    docs = [doc("long", english(8)), doc("short", "Just a few words here.")]
    with pipeline as p:
        out = p | beam.Create(docs) | Tokenize(GPT2, min_tokens=128, batch_size=2)
        assert_that(out["kept"] | beam.Map(lambda dt: (dt[0].id, int(dt[1][-1]), dt[0].tokens == dt[1].size)),
                    equal_to([("long", 50256, True)]), label="kept")
        assert_that(removals(out["removed"], "R"), equal_to([("short", "tokenize", "too_few_tokens")]),
                    label="removed")


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

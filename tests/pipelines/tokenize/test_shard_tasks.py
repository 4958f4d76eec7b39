"""The shard writer's tasks of consecutive shards (``plan_shards`` groups, ``WriteShardFn``): the
same files however the shards are grouped into tasks, and each shard holds exactly the documents
of its hash range in ``(hash, id)`` order with their tokens (a plain reference, no Beam)."""
from __future__ import annotations

import glob
import os

import numpy as np
import pyarrow.parquet as pq

from blending.indexed_dataset import IndexedDataset
from curation.document import Document
from infra.hashing import stable_hash
from pipelines.tokenize.shards import WriteRunsFn, WriteShardFn, plan_shards, shard_bounds


def _runs(out: str, items) -> list[dict]:
    fn = WriteRunsFn(out, "uint16", max_bytes=400)  # a run every few documents
    fn.start_bundle()
    runs = [d for item in items for d in fn.process(item) or ()]
    return runs + [w.value for w in fn.finish_bundle()]


def _write(out: str, runs: list[dict], groups: int) -> list[dict]:
    fn = WriteShardFn(out, "uint16")
    return [row for task in plan_shards(runs, 1500, groups) for row in fn.process(task)]


def test_shards_are_the_same_files_whatever_the_tasks(tmp_path):
    rng = np.random.default_rng(1)
    items = [(Document(f"{'ab'[i % 2]}/f:{i}", "ab"[i % 2], f"text {i}", meta={"i": i}, tokens=n),
              rng.integers(0, 50000, n).astype(np.int32))
             for i, n in enumerate(rng.integers(20, 300, 80).tolist())]
    items.append((Document("c/one", "c", "one long document", tokens=2000),
                  rng.integers(0, 50000, 2000).astype(np.int32)))  # 2 shards, one of them empty
    tokens = {d.id: t for d, t in items}
    runs = _runs(str(tmp_path / "runs"), items)
    assert len({r["url"] for r in runs if r["source"] == "a"}) > 5
    files, rows = {}, {}
    for groups in (1, 3, 100):  # one task per source ... one task per shard
        out = str(tmp_path / f"g{groups}")
        rows[groups] = sorted(_write(out, runs, groups), key=lambda r: r["prefix"])
        files[groups] = {os.path.relpath(f, out): open(f, "rb").read()
                         for f in glob.glob(os.path.join(out, "**", "*.*"), recursive=True)}
    assert files[1] == files[3] == files[100] and rows[1] == rows[3] == rows[100]
    n = {s: 1 + max(r["shard"] for r in rows[1] if r["source"] == s) for s in "abc"}
    assert n["a"] >= 5 and [r["shard"] for r in rows[1] if r["source"] == "c"] in ([0], [1])
    out = str(tmp_path / "g1")
    for r in rows[1]:  # the reference: the documents of the range, in (hash, id) order
        lo, hi = shard_bounds(r["shard"], n[r["source"]])
        want = sorted((stable_hash(d.id), d.id) for d, _ in items if d.source == r["source"]
                      and lo <= stable_hash(d.id) < hi)
        part = pq.read_table(os.path.join(out, "documents", r["source"], f"part-{r['shard']:05d}.parquet"))
        assert part.column("id").to_pylist() == [i for _, i in want]
        shard = IndexedDataset(os.path.join(out, r["prefix"]))
        starts = part.column("token_start").to_pylist()
        assert starts == np.concatenate([[0], np.cumsum([tokens[i].size for _, i in want])[:-1]]).tolist()
        for j, (_, i) in enumerate(want):
            assert np.array_equal(shard[j], tokens[i])

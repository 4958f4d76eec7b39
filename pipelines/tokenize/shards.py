"""Token shards written from the workers, with no shuffle of tokens.

A shard's contents depend only on the set of kept documents, never on how the work was split:
source ``s`` with ``T`` tokens has ``n = ceil(T / max_tokens_per_shard)`` shards, and shard ``k``
holds the documents whose 64-bit id hash ``h`` (``common.stable_hash``) falls in
``[k * 2^64 / n, (k + 1) * 2^64 / n)``, in ``(h, id)`` order (a fixed pseudo-random order, so a
shard mixes its source's files).  ``documents/<s>/part-<k>.parquet`` holds the same documents in
the same order.

1. ``WriteRunsFn`` (where documents are tokenized): tokens and document rows are buffered per
   source, sorted by ``(h, id)`` and written as "runs" (Parquet, row groups of ``RUN_ROW_GROUP``
   with min/max statistics of ``h``) once the buffers reach ``RUN_BYTES``; one small
   descriptor per run leaves the worker.
2. ``plan_shards`` (one small list): tokens per source -> ``n``; the ``n`` shards split into at
   most ``SHARD_GROUPS`` tasks of consecutive shards, each with the runs whose hash range
   overlaps the task's.
3. ``WriteShardFn`` (spread over workers): walks each run of its task once, in order, reading
   only the row groups that overlap the task's range (one row group per run in memory); for
   each shard in turn it takes every run's next rows below the shard's upper bound, sorts them
   by ``(h, id)`` (Arrow's stable sort, on the columns: no Python row objects) and writes the
   shard (``IndexedDatasetWriter``) and its documents part.

Why tasks of many shards: a task pays for opening every run of its source and for the row
groups it only partly needs.  With one task per shard that is shards x runs, and both grow with
the corpus (a run per 64 MB buffer flush, a shard per ``max_tokens_per_shard``): the shard
writer's CPU per document grew with corpus size.  With a bounded number of tasks per source it
is tasks x runs, and each run's rows are read once in all.

Provenance: row ``i`` of ``documents/<s>/part-<k>.parquet`` is sequence ``i`` of the shard's
``.idx``; its ``token_start`` column is the offset (in tokens) of that sequence in the ``.bin``,
so tokens ``[token_start, token_start + tokens)`` are that document (``id``, ``source``, ``url``).
``locate`` answers "which document is token T of this shard" from those two columns.
"""
from __future__ import annotations

import math
import os
import tempfile
import uuid
from typing import Iterator

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from pipelines.plumbing.outputs import count
from infra.hashing import stable_hash
from pipelines.plumbing.sinks import DOCUMENT_SCHEMA, Gather, document_row
from infra.storage.files import is_remote, join, write_bytes

RUN_BYTES = 64 << 20
RUN_ROW_GROUP = 256
SHARD_GROUPS = 16
"""Most tasks a source's shards are written in (consecutive shards per task): enough to keep
the workers of a local run or a small cluster busy, few enough that opening every run once per
task stays a small share of reading the runs (see the module docstring)."""
DOCS_ROW_GROUP = 512
"""Rows per row group of a ``documents/`` part."""
SPACE = 1 << 64
RUN_SCHEMA = pa.schema([("h", pa.uint64()), *[(f.name, f.type) for f in DOCUMENT_SCHEMA],
                        ("token_bytes", pa.binary())])
SHARD_DOCUMENT_SCHEMA = pa.schema([*DOCUMENT_SCHEMA, ("token_start", pa.int64())])
"""``documents/<s>/part-NNNNN.parquet``: ``DOCUMENT_SCHEMA`` + the document's first token."""
SHARD_SCHEMA = pa.schema([
    ("source", pa.string()), ("shard", pa.int64()), ("prefix", pa.string()),
    ("documents", pa.int64()), ("tokens", pa.int64()), ("bin_sha256", pa.string()),
    ("idx_sha256", pa.string()),
])


def shard_bounds(k: int, n: int) -> tuple[int, int]:
    """The id-hash range ``[lo, hi)`` of shard ``k`` of ``n``."""
    return k * SPACE // n, (k + 1) * SPACE // n


class WriteRunsFn(beam.DoFn):
    """``(doc, tokens)`` -> sorted runs under ``<out>/_tmp/runs/``; yields run descriptors
    ``{source, url, documents, tokens, h_min, h_max}``."""

    def __init__(self, out_dir: str, dtype: str, max_bytes: int = RUN_BYTES) -> None:
        self.out_dir, self.dtype, self.max_bytes = out_dir, dtype, max_bytes
        self._buf: dict[str, list] = {}
        self._bytes = 0

    def start_bundle(self) -> None:
        self._buf, self._bytes = {}, 0

    def process(self, item):
        doc, tokens = item
        data = np.asarray(tokens).astype(self.dtype, copy=False).tobytes()
        row = document_row(doc)
        row["h"] = stable_hash(doc.id)
        row["token_bytes"] = data
        self._buf.setdefault(doc.source, []).append(row)
        self._bytes += len(data) + len(doc.text)
        if self._bytes >= self.max_bytes:
            yield from self._flush()

    def finish_bundle(self):
        from apache_beam.transforms.window import GlobalWindows

        for d in self._flush():
            yield GlobalWindows.windowed_value(d)

    def _flush(self) -> Iterator[dict]:
        buf, self._buf, self._bytes = self._buf, {}, 0
        for source in sorted(buf):
            rows = sorted(buf[source], key=lambda r: (r["h"], r["id"]))
            url = join(self.out_dir, "_tmp", "runs", f"{source}-{uuid.uuid4().hex[:16]}.parquet")
            with FileSystems.create(url, compression_type=CompressionTypes.UNCOMPRESSED) as f:
                pq.write_table(pa.Table.from_pylist(rows, schema=RUN_SCHEMA), f,
                               row_group_size=RUN_ROW_GROUP, compression="zstd")
            tokens = sum(len(r["token_bytes"]) for r in rows) // np.dtype(self.dtype).itemsize
            yield {"source": source, "url": url, "documents": len(rows), "tokens": tokens,
                   "h_min": rows[0]["h"], "h_max": rows[-1]["h"]}


def plan_shards(runs: list[dict], max_tokens: int, groups: int = SHARD_GROUPS) -> list[dict]:
    """Run descriptors -> tasks of consecutive shards: ``{source, n, first, end, lo, hi, runs}``
    writes shards ``first .. end - 1`` of ``n``, whose hash range is ``[lo, hi)``, from the runs
    (URLs) overlapping that range."""
    by_source: dict[str, list[dict]] = {}
    for r in runs:
        by_source.setdefault(r["source"], []).append(r)
    tasks = []
    for source in sorted(by_source):
        rs = sorted(by_source[source], key=lambda r: r["url"])
        total = sum(r["tokens"] for r in rs)
        n = max(1, math.ceil(total / max_tokens))
        g = min(n, groups)
        for j in range(g):
            first, end = j * n // g, (j + 1) * n // g
            lo, hi = shard_bounds(first, n)[0], shard_bounds(end - 1, n)[1]
            urls = [r["url"] for r in rs if r["h_min"] < hi and r["h_max"] >= lo]
            tasks.append({"source": source, "n": n, "first": first, "end": end, "lo": lo, "hi": hi,
                          "runs": urls})
    return tasks


class _RunCursor:
    """One run's rows with ``lo <= h < hi``, taken in order by rising upper bounds (``take``):
    each overlapping row group is read once, as an Arrow table."""

    def __init__(self, url: str, lo: int, hi: int) -> None:
        self._f = FileSystems.open(url, compression_type=CompressionTypes.UNCOMPRESSED)
        self._pf = pq.ParquetFile(self._f)
        col = self._pf.schema_arrow.get_field_index("h")
        meta = self._pf.metadata
        self._groups = []
        for g in range(meta.num_row_groups):
            stats = meta.row_group(g).column(col).statistics
            if stats is None or not stats.has_min_max or (stats.max >= lo and stats.min < hi):
                self._groups.append(g)
        self._groups.reverse()  # popped from the end: in file order
        self._lo = np.uint64(lo)
        self._table: pa.Table | None = None
        self._h = None

    def take(self, hi: int) -> list[pa.Table]:
        """The rows not taken yet with ``h < hi`` (a run is sorted by ``(h, id)``)."""
        bound, out = np.uint64(hi) if hi < SPACE else None, []
        while True:
            if self._table is None:
                if not self._groups:
                    return out
                t = self._pf.read_row_group(self._groups.pop())
                h = t.column("h").to_numpy()
                start = int(np.searchsorted(h, self._lo, side="left"))
                self._table, self._h = t.slice(start), h[start:]
            k = len(self._h) if bound is None else int(np.searchsorted(self._h, bound, side="left"))
            if k:
                out.append(self._table.slice(0, k))
            if k < len(self._h):
                self._table, self._h = self._table.slice(k), self._h[k:]
                return out
            self._table = self._h = None

    def close(self) -> None:
        self._f.close()


class WriteShardFn(beam.DoFn):
    """A task of consecutive shards -> for each shard with documents,
    ``shards/<s>/<s>_NNNNN.bin|.idx`` + ``documents/<s>/part-NNNNN.parquet``; yields each
    shard's row of ``stats/shards.parquet``."""

    def __init__(self, out_dir: str, dtype: str) -> None:
        self.out_dir, self.dtype = out_dir, dtype

    def process(self, task: dict):
        cursors = [_RunCursor(u, task["lo"], task["hi"]) for u in task["runs"]]
        try:
            for k in range(task["first"], task["end"]):
                rows = [t for c in cursors for t in c.take(shard_bounds(k, task["n"])[1])]
                if rows:  # no document hashed into a range (a tiny source): no shard
                    yield self._write(task["source"], k, pa.concat_tables(rows))
        finally:
            for c in cursors:
                c.close()

    def _write(self, source: str, k: int, table: pa.Table) -> dict:
        from blending.indexed_dataset import IndexedDatasetWriter, bin_path, idx_path

        # (h, id) order; stable, so equal keys keep run order as a merge of the runs would
        table = table.take(pc.sort_indices(table, sort_keys=[("h", "ascending"), ("id", "ascending")]))
        rel = f"shards/{source}/{source}_{k:05d}"
        target = join(self.out_dir, *rel.split("/"))
        dtype = np.dtype(self.dtype)
        tokens = table.column("token_bytes").combine_chunks()
        offsets = np.frombuffer(tokens.buffers()[1], dtype=np.int32)[tokens.offset:tokens.offset + len(tokens) + 1]
        data = np.frombuffer(tokens.buffers()[2], dtype=np.uint8)
        lengths = np.diff(offsets) // dtype.itemsize
        starts = np.zeros(len(lengths), dtype=np.int64)
        np.cumsum(lengths[:-1], out=starts[1:])
        docs_table = pa.Table.from_arrays(
            [table.column(f).combine_chunks() for f in DOCUMENT_SCHEMA.names] + [pa.array(starts)],
            schema=SHARD_DOCUMENT_SCHEMA)
        with tempfile.TemporaryDirectory() as tmp:
            prefix = os.path.join(tmp, os.path.basename(rel)) if is_remote(target) else target
            docs_local = os.path.join(tmp, "part.parquet")
            with IndexedDatasetWriter(prefix, dtype) as writer:
                for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist()):
                    writer.add_document(data[a:b].view(dtype))
                info = writer.finalize()
            with pq.ParquetWriter(docs_local, SHARD_DOCUMENT_SCHEMA, compression="zstd") as docs:
                for i in range(0, docs_table.num_rows, DOCS_ROW_GROUP):
                    docs.write_table(docs_table.slice(i, DOCS_ROW_GROUP))
            if is_remote(target):
                for local, remote in ((bin_path(prefix), bin_path(target)),
                                      (idx_path(prefix), idx_path(target))):
                    with open(local, "rb") as f:
                        write_bytes(remote, f.read())
            with open(docs_local, "rb") as f:
                write_bytes(join(self.out_dir, "documents", source, f"part-{k:05d}.parquet"), f.read())
        count("shards", source, "written")
        return {"source": source, "shard": k, "prefix": rel, "documents": info.documents,
                "tokens": info.tokens, "bin_sha256": info.bin_sha256, "idx_sha256": info.idx_sha256}


class WriteShards(beam.PTransform):
    """Kept ``(doc, tokens)`` -> shards and their documents parts; returns shard rows."""

    def __init__(self, out_dir: str, max_tokens_per_shard: int, dtype: str,
                 run_bytes: int = RUN_BYTES, label: str | None = None) -> None:
        super().__init__(label)
        self.out_dir, self.max_tokens, self.dtype, self.run_bytes = (
            out_dir, max_tokens_per_shard, dtype, run_bytes)

    def expand(self, tokenized):
        max_tokens = self.max_tokens
        return (tokenized
                | "WriteRuns" >> beam.ParDo(WriteRunsFn(self.out_dir, self.dtype, self.run_bytes))
                | "AllRuns" >> Gather()
                | "Plan" >> beam.FlatMap(lambda runs: plan_shards(runs, max_tokens))
                | "SpreadShards" >> beam.Reshuffle()
                | "WriteShard" >> beam.ParDo(WriteShardFn(self.out_dir, self.dtype)))


def locate(run_dir: str, source: str, shard: int, token: int) -> dict:
    """The document holding token ``token`` (offset into ``shards/<source>/<source>_<shard>.bin``,
    in tokens): ``{id, source, url, sequence, token_start, tokens}``; reads only four columns of
    the shard's documents part."""
    path = join(run_dir, "documents", source, f"part-{shard:05d}.parquet")
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        t = pq.read_table(f, columns=["id", "url", "token_start", "tokens"])
    starts = np.asarray(t.column("token_start").to_numpy(zero_copy_only=False), dtype=np.int64)
    i = int(np.searchsorted(starts, token, side="right")) - 1
    if i < 0 or token >= starts[i] + t.column("tokens")[i].as_py():
        raise IndexError(f"token {token} is outside {source} shard {shard}")
    return {"id": t.column("id")[i].as_py(), "source": source, "url": t.column("url")[i].as_py(),
            "sequence": i, "token_start": int(starts[i]), "tokens": t.column("tokens")[i].as_py()}

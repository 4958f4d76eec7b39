"""``stats/id_index/``: where a document's rows are, by the hash of its id (or URL).

Per-document rows are written where they are produced (``sinks.WriteRowsFn``), so any of a
stage's files may hold any document.  To find one document without reading every file
(``mtnlg explain``), each stage also writes an index: the writers emit one small entry per row
they write ``(key_hash, what, key, file, detail)``, grouped into ``B`` buckets by the top bits of
``key_hash`` and written sorted by ``key_hash`` (row groups of ``ROW_GROUP`` entries), so a
lookup reads one file's footer and the one or two row groups whose min/max hash cover the key::

  stats/id_index/<stage>-<producer>-<b>-of-<B>.parquet
    key_hash uint64   xxh3-64 of ``key`` (``infra.hashing.stable_hash``)
    key      string   the document id, or its URL (``what = url``)
    what     string   stats: the file of its stats/documents/ row; url: the same, keyed by URL;
                      removed: its removed/ row; dedup: its dedup/groups row (in ``detail``)
    id       string   the document id
    file     string   path relative to RUN (null for ``dedup``)
    detail   string   JSON (``dedup``: the group row), else null

``B`` grows with the stage's entries (``ENTRIES_PER_BUCKET`` per bucket, a power of two), so a
small run has one file per stage and producer and a large one spreads the sort over workers.
``lookup`` returns every entry of a key, from every stage.

The entries never travel as Beam elements (on the local runner every element between two steps
passes through the driver and stays there until its consumer runs, and the bucket's writer held
them all as Python objects: bench/RESULTS.md, "Explain and the id index"): each writer collects the
entries of the file it writes (``id_index_spool.EntrySpool``) and, when it closes the file,
writes them sorted by hash to ``<out>/_tmp/id_index/<token>.arrow`` (deleted at commit); only
that file's descriptor goes on.  ``WriteIdIndex`` then writes bucket ``b`` on one worker from
the ``b``-th hash range of every spool file (a binary search in each: the spools are sorted),
so a worker holds one bucket's entries, as Arrow columns.
"""
from __future__ import annotations

import io
import math

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from infra.hashing import stable_hash
from infra.storage.files import join, list_files, write_bytes
from pipelines.plumbing.id_index_spool import ROW_GROUP, SORT, EntrySpool, sorted_table
from pipelines.plumbing.sinks import Gather

INDEX_DIR = "stats/id_index"
ENTRIES_PER_BUCKET = 250_000
"""At most about this many entries per bucket file: what one worker sorts in memory (~0.5 KB each)."""


def buckets_for(entries: int) -> int:
    """A power of two with at most about ``ENTRIES_PER_BUCKET`` entries per bucket."""
    return 1 << max(0, math.ceil(math.log2(max(1, entries) / ENTRIES_PER_BUCKET)))


def bucket_of(key_hash: int, buckets: int) -> int:
    return key_hash >> (64 - int(math.log2(buckets))) if buckets > 1 else 0


def _write_table(table: pa.Table, out_dir: str, stage: str, producer: str, b: int, buckets: int) -> int:
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd", row_group_size=ROW_GROUP)
    write_bytes(join(out_dir, *INDEX_DIR.split("/"), f"{stage}-{producer}-{b:05d}-of-{buckets:05d}.parquet"),
                buf.getvalue())
    return table.num_rows


def _write_bucket(item, out_dir: str, stage: str, producer: str, buckets: int) -> int:
    """``(b, entries)`` -> bucket file ``b`` of ``buckets`` (``index_run``'s path)."""
    b, entries = item
    return _write_table(sorted_table(entries), out_dir, stage, producer, b, buckets)


class SpoolEntriesFn(beam.DoFn):
    """``entry`` tuples -> one spool file per bundle (its descriptor), for entries a stage makes
    as elements (the dedup group rows)."""

    def __init__(self, out_dir: str, producer: str) -> None:
        self.out_dir, self.producer = out_dir, producer

    def start_bundle(self) -> None:
        self.spool = EntrySpool(self.out_dir, self.producer)

    def process(self, e: tuple):
        self.spool.add(e)
        return ()

    def finish_bundle(self):
        desc = self.spool.close()
        if desc is not None:
            yield beam.transforms.window.GlobalWindows.windowed_value(desc)


def _hash_range(b: int, buckets: int) -> tuple[int, int | None]:
    """Bucket ``b``'s key hashes: ``[lo, hi)`` (hi None: to the end)."""
    if buckets == 1:
        return 0, None
    shift = 64 - int(math.log2(buckets))
    return b << shift, ((b + 1) << shift if b + 1 < buckets else None)


def write_bucket_from_spools(job: tuple, out_dir: str, stage: str) -> int:
    """``(producer, b, buckets, spool descriptors)`` -> the producer's bucket file ``b``: its
    hash range of every spool."""
    producer, b, buckets, spools = job
    lo, hi = _hash_range(b, buckets)
    parts = []
    for d in spools:
        with FileSystems.open(d["spool"], compression_type=CompressionTypes.UNCOMPRESSED) as f:
            table = pa.ipc.open_file(pa.BufferReader(f.read())).read_all()
        h = table.column("key_hash").to_numpy()
        i = int(np.searchsorted(h, np.uint64(lo), side="left"))
        j = len(h) if hi is None else int(np.searchsorted(h, np.uint64(hi), side="left"))
        if j > i:
            parts.append(table.slice(i, j - i))
    if not parts:
        return 0
    return _write_table(pa.concat_tables(parts).combine_chunks().sort_by(SORT), out_dir, stage, producer,
                        b, buckets)


def _bucket_jobs(spools: list[dict]) -> list[tuple]:
    """Every producer's bucket jobs ``(producer, b, buckets, its spools)``; a producer's bucket
    count follows its own entries."""
    by_producer: dict[str, list[dict]] = {}
    for d in sorted((d for d in spools if d and d["entries"]), key=lambda d: d["spool"]):
        by_producer.setdefault(d["producer"], []).append(d)
    jobs = []
    for producer, own in sorted(by_producer.items()):
        buckets = buckets_for(sum(d["entries"] for d in own))
        jobs += [(producer, b, buckets, own) for b in range(buckets)]
    return jobs


class WriteIdIndex(beam.PTransform):
    """Spool descriptors (``EntrySpool.close``) of a stage's producers -> their bucket files."""

    def __init__(self, out_dir: str, stage: str, label: str | None = None) -> None:
        super().__init__(label)
        self.out_dir, self.stage = out_dir, stage

    def expand(self, spools):
        return (spools
                | "List" >> Gather()
                | "Buckets" >> beam.FlatMap(_bucket_jobs)
                | "Spread" >> beam.Reshuffle()
                | "Write" >> beam.Map(write_bucket_from_spools, self.out_dir, self.stage))


def _index_files(run_dir: str) -> list[str]:
    return [p for p in list_files(join(run_dir, *INDEX_DIR.split("/"))) if p.endswith(".parquet")]


def has_index(run_dir: str) -> bool:
    return bool(_index_files(run_dir))


def lookup(run_dir: str, key: str) -> list[dict]:
    """Every index entry of ``key`` (an id or a URL) in the run, reading from each index file
    of its bucket only the row groups whose hash range holds it."""
    h = stable_hash(key)
    out = []
    for path in _index_files(run_dir):
        name = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        b, _, buckets = name.rsplit("-", 3)[-3:]
        if bucket_of(h, int(buckets)) != int(b):
            continue
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
            pf = pq.ParquetFile(f)
            col = pf.schema_arrow.get_field_index("key_hash")
            for g in range(pf.metadata.num_row_groups):
                st = pf.metadata.row_group(g).column(col).statistics
                if st is not None and st.has_min_max and not st.min <= h <= st.max:
                    continue
                group = pf.read_row_group(g)
                hits = group.filter(pc.equal(group.column("key_hash"), pa.scalar(h, pa.uint64())))
                out += [row for row in hits.to_pylist() if row["key"] == key]
    return out

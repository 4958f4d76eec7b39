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
"""
from __future__ import annotations

import io
import json
import math

import apache_beam as beam
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from infra.hashing import stable_hash
from pipelines.storage.files import join, list_files, write_bytes

INDEX_DIR = "stats/id_index"
ENTRIES_PER_BUCKET = 1_000_000
ROW_GROUP = 20_000
SCHEMA = pa.schema([("key_hash", pa.uint64()), ("key", pa.string()), ("what", pa.string()),
                    ("id", pa.string()), ("file", pa.string()), ("detail", pa.string())])


def entry(what: str, key: str, doc_id: str, file: str | None = None, detail: str | None = None) -> tuple:
    return stable_hash(key), key, what, doc_id, file, detail


def buckets_for(entries: int) -> int:
    """A power of two with at most about ``ENTRIES_PER_BUCKET`` entries per bucket."""
    return 1 << max(0, math.ceil(math.log2(max(1, entries) / ENTRIES_PER_BUCKET)))


def bucket_of(key_hash: int, buckets: int) -> int:
    return key_hash >> (64 - int(math.log2(buckets))) if buckets > 1 else 0


def _write_bucket(item, out_dir: str, stage: str, producer: str, buckets: int) -> int:
    b, entries = item
    rows = sorted(entries, key=lambda e: (e[0], e[1], e[2]))
    table = pa.Table.from_pylist([dict(zip(SCHEMA.names, e)) for e in rows], schema=SCHEMA)
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd", row_group_size=ROW_GROUP)
    write_bytes(join(out_dir, *INDEX_DIR.split("/"), f"{stage}-{producer}-{b:05d}-of-{buckets:05d}.parquet"),
                buf.getvalue())
    return len(rows)


class WriteIdIndex(beam.PTransform):
    """Index entries (``entry`` tuples) of one producer of a stage -> its bucket files."""

    def __init__(self, out_dir: str, stage: str, producer: str, label: str | None = None) -> None:
        super().__init__(label)
        self.out_dir, self.stage, self.producer = out_dir, stage, producer

    def expand(self, entries):
        out_dir, stage, producer = self.out_dir, self.stage, self.producer
        count = entries | "Count" >> beam.combiners.Count.Globally()
        return (entries
                | "Bucket" >> beam.Map(lambda e, n: ((bucket_of(e[0], buckets_for(n)), buckets_for(n)), e),
                                       n=beam.pvalue.AsSingleton(count))
                | "Group" >> beam.GroupByKey()
                | "Write" >> beam.Map(lambda kv: _write_bucket((kv[0][0], kv[1]), out_dir, stage, producer,
                                                                kv[0][1])))


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


def detail_json(row: dict) -> str:
    return json.dumps(row, sort_keys=True, ensure_ascii=False, default=str)

"""Writing a run's files: file-system helpers and the row writers every stage uses.

Every write goes through Beam's FileSystems, so RUN may be ``gs://...`` or ``s3://...``.

``WriteRowsFn`` writes ``(dest, row)`` pairs where they are produced, on the worker, with no
shuffle: one file per destination per bundle (rolled over at ``max_rows`` / ``max_bytes``), under
``<out>/_w/<dest>-<token>.<ext>``, and yields one small descriptor per file.  A stage's
descriptors go to ``<out>/_manifest/``; the commit (``pipelines.runfolder.commit``) moves exactly the
listed files to ``RUN/<dest>-<token>.<ext>``, so the files of a failed bundle attempt are never
committed.  Removed documents, dead letters, per-document stats and the stages' document parts
are all written this way: no step gathers them on one worker.
"""
from __future__ import annotations

import gzip
import json
import uuid
from typing import Iterable

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.transforms.window import GlobalWindows

from curation.document import DeadLetter, Document, Removal
from infra.hashing import stable_hash
from infra.storage.files import join, json_line, write_bytes, write_table
from pipelines.plumbing.id_index_spool import EntrySpool, entry

DOCUMENT_SCHEMA = pa.schema([
    ("id", pa.string()), ("source", pa.string()), ("text", pa.string()), ("url", pa.string()),
    ("meta", pa.string()), ("lang", pa.string()), ("lang_score", pa.float64()),
    ("quality_score", pa.float64()), ("tokens", pa.int64()),
])
"""``documents/<source>/part-NNNNN.parquet``: the kept documents of shard NNNNN, in shard order."""



# -- row builders --------------------------------------------------------------------------------
def document_row(doc: Document) -> dict:
    """A kept document as a ``DOCUMENT_SCHEMA`` row (meta as a JSON string)."""
    row = {f: getattr(doc, f) for f in DOCUMENT_SCHEMA.names}
    row["meta"] = json.dumps(doc.meta, sort_keys=True, ensure_ascii=False)
    return row


def removed_row(r: Removal, with_text: bool = True) -> dict:
    return {"id": r.doc.id, "source": r.doc.source, "stage": r.stage, "reason": r.reason,
            "detail": r.detail, "text": r.doc.text if with_text else None}


def dead_letter_row(d: DeadLetter) -> dict:
    return {"source": d.source, "location": d.location, "error": d.error, "raw": d.raw}


# -- row writers ---------------------------------------------------------------------------------
class _FileWriter:
    """Rows of one destination into one file, opened on the first row, streamed out."""

    def __init__(self, out_dir: str, dest: str, fmt: str, schema: pa.Schema | None,
                 row_group: int) -> None:
        self.ext = "parquet" if fmt == "parquet" else "jsonl.gz"
        self.rel = f"_w/{dest}-{uuid.uuid4().hex[:16]}.{self.ext}"
        self.url = join(out_dir, *self.rel.split("/"))
        self.dest, self.fmt, self.schema, self.row_group = dest, fmt, schema, row_group
        self.rows, self.bytes, self._buf = 0, 0, []
        self._stream = FileSystems.create(self.url, compression_type=CompressionTypes.UNCOMPRESSED)
        if fmt == "parquet":
            self._pq = pq.ParquetWriter(self._stream, schema, compression="zstd")
        else:
            self._gz = gzip.GzipFile(fileobj=self._stream, mode="wb", mtime=0)

    def add(self, row: dict) -> None:
        self._buf.append(row)
        self.rows += 1
        if len(self._buf) >= self.row_group:
            self._flush()

    def _flush(self) -> None:
        if not self._buf:
            return
        if self.fmt == "parquet":
            table = pa.Table.from_pylist(self._buf, schema=self.schema)
            self.bytes += table.nbytes
            self._pq.write_table(table)
        else:
            data = "".join(json_line(r) + "\n" for r in self._buf).encode("utf-8")
            self.bytes += len(data)
            self._gz.write(data)
        self._buf = []

    def close(self) -> dict:
        self._flush()
        if self.fmt == "parquet":
            self._pq.close()
        else:
            self._gz.close()
        self._stream.close()
        return {"path": self.rel, "url": self.url, "dest": self.dest, "rows": self.rows,
                "bytes": self.bytes}


def write_table_file(out_dir: str, dest: str, table: pa.Table, row_group: int = 1000) -> dict:
    """A whole Arrow table as ONE Parquet file ``<out_dir>/_w/<dest>-<token>.parquet`` (as
    ``WriteRowsFn`` names its files); returns its descriptor."""
    rel = f"_w/{dest}-{uuid.uuid4().hex[:16]}.parquet"
    url = join(out_dir, *rel.split("/"))
    with FileSystems.create(url, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        pq.write_table(table, f, compression="zstd", row_group_size=row_group)
    return {"path": rel, "url": url, "dest": dest, "rows": table.num_rows, "bytes": table.nbytes}


class WriteRowsFn(beam.DoFn):
    """``(dest, row)`` -> rows in ``<out_dir>/_w/<dest>-<token>.<ext>``; yields a descriptor
    ``{path, url, dest, rows, bytes}`` per file closed (at ``max_rows``/``max_bytes`` or at the end
    of the bundle).  ``fmt``: ``parquet`` (with ``schema``) or ``jsonl`` (gzipped JSON Lines)."""

    def __init__(self, out_dir: str, fmt: str = "parquet", schema: pa.Schema | None = None,
                 max_rows: int = 200_000, max_bytes: int = 256 << 20, row_group: int = 1000,
                 index_keys=None, index_producer: str = "rows") -> None:
        """``index_keys(row) -> [(what, key, id)]``: also index the rows by those keys, each
        naming the file the row went to: per file written, its entries go to a spool file and
        its descriptor (with ``index_producer``) to the tagged output ``index``
        (``pipelines.plumbing.id_index_spool``)."""
        self.index_keys, self.index_producer = index_keys, index_producer
        if fmt not in ("parquet", "jsonl"):
            raise ValueError(f"unknown format {fmt!r}")
        if fmt == "parquet" and schema is None:
            raise ValueError("a Parquet writer needs a schema")
        self.out_dir, self.fmt, self.schema = out_dir, fmt, schema
        self.max_rows, self.max_bytes, self.row_group = max_rows, max_bytes, row_group
        self._open: dict[str, _FileWriter] = {}
        self._spools: dict[str, object] = {}

    def start_bundle(self) -> None:
        self._open, self._spools = {}, {}

    def _close(self, dest: str):
        """The file of ``dest``'s descriptor, then its index spool's (tagged ``index``)."""
        yield self._open.pop(dest).close()
        spool = self._spools.pop(dest, None)
        desc = spool.close() if spool is not None else None
        if desc is not None:
            yield beam.pvalue.TaggedOutput("index", desc)

    def process(self, element):
        dest, row = element
        w = self._open.get(dest)
        if w is None:
            w = self._open[dest] = _FileWriter(self.out_dir, dest, self.fmt, self.schema,
                                               self.row_group)
        w.add(row)
        if self.index_keys is not None:
            spool = self._spools.get(dest)
            if spool is None:
                spool = self._spools[dest] = EntrySpool(self.out_dir, self.index_producer)
            final = w.rel[len("_w/"):]
            for what, key, doc_id in self.index_keys(row):
                spool.add(entry(what, key, doc_id, final))
        if w.rows >= self.max_rows or w.bytes >= self.max_bytes:
            yield from self._close(dest)

    def finish_bundle(self):
        for dest in sorted(self._open):
            for out in self._close(dest):
                if isinstance(out, beam.pvalue.TaggedOutput):
                    yield beam.pvalue.TaggedOutput(out.tag, GlobalWindows.windowed_value(out.value))
                else:
                    yield GlobalWindows.windowed_value(out)
        self._open, self._spools = {}, {}

    def teardown(self) -> None:
        for w in self._open.values():  # a failed bundle: close quietly, the file is an orphan
            try:
                w.close()
            except Exception:  # noqa: BLE001
                pass
        self._open, self._spools = {}, {}


class Gather(beam.PTransform):
    """A SMALL PCollection -> one element: the list of its elements (``[]`` when it is empty).

    What ``beam.combiners.ToList()`` gives, in two steps instead of its nine (a combine, and a
    default for empty input by a side input of its own): every step is paid for again at
    pipeline construction and in every bundle, and a curate job has dozens of these lists."""

    def expand(self, pcoll):
        return (pcoll.pipeline
                | "Once" >> beam.Impulse()
                | "List" >> beam.Map(lambda _, items: list(items), beam.pvalue.AsList(pcoll)))


class WriteSmallTable(beam.PTransform):
    """A SMALL PCollection of rows (an aggregate: one row per source, task, cluster size...) ->
    ONE Parquet file at ``path``, rows sorted (the same bytes in every run), an empty table when
    there are none; outputs the row count.

    Two steps (``Gather``, then one write) where ``beam.io.WriteToParquet(num_shards=1)`` takes
    about twenty (initialise, write, shuffle to one shard, pre-finalise, finalise, each with
    side inputs): a curate job writes a dozen of these tables.  The file lands in the stage's
    staging folder, which the commit renames into RUN, so Beam's temporary-file protocol is not
    needed for atomicity; a retried write rewrites the same bytes."""

    def __init__(self, path: str, schema: pa.Schema, label: str | None = None) -> None:
        super().__init__(label)
        self.path, self.schema = path, schema

    def expand(self, rows):
        path, schema = self.path, self.schema
        return (rows
                | "List" >> Gather()
                | "Write" >> beam.Map(lambda rs: write_table(path, sorted(rs, key=json_line), schema)
                                      or len(rs)))


class WriteManifest(beam.PTransform):
    """Writer descriptors -> ``<out_dir>/_manifest/<name>.json`` (one small list)."""

    def __init__(self, out_dir: str, name: str, label: str | None = None) -> None:
        super().__init__(label)
        self.out_dir, self.name = out_dir, name

    def expand(self, descriptors):
        path = join(self.out_dir, "_manifest", f"{self.name}.json")
        return (descriptors
                | "List" >> Gather()
                | "Write" >> beam.Map(lambda ds: write_bytes(path, json.dumps(
                    sorted(ds, key=lambda d: d["path"]), indent=0).encode()) or len(ds)))


class WriteRemoved(beam.PTransform):
    """Removals -> ``removed/<stage>/part-<token>.jsonl.gz`` (descriptors out); ``sample`` = "all"
    or N per stage (the N with the smallest stable hash of the id, the same in every run)."""

    def __init__(self, out_dir: str, sample: str | int = "all", label: str | None = None,
                 index: bool = False):
        super().__init__(label)
        self.out_dir, self.sample, self.index = out_dir, sample, index

    def expand(self, removed):
        rows = removed | "Rows" >> beam.Map(lambda r: (f"removed/{r.stage}/part", removed_row(r)))
        if self.sample != "all":
            rows = (rows
                    | "Sample" >> beam.combiners.Top.PerKey(
                        int(self.sample), key=lambda row: -stable_hash(row["id"]))
                    | "Unlist" >> beam.FlatMap(lambda kv: [(kv[0], r) for r in kv[1]]))
        if not self.index:
            return rows | "Write" >> beam.ParDo(WriteRowsFn(self.out_dir, "jsonl"))
        out = rows | "Write" >> beam.ParDo(WriteRowsFn(
            self.out_dir, "jsonl", index_keys=removed_index_keys, index_producer="removed_text")
        ).with_outputs("index", main="descriptors")
        return out.descriptors, out.index


def removed_index_keys(row: dict) -> list[tuple[str, str, str]]:
    return [("removed", row["id"], row["id"])]


class WriteDeadLetters(beam.PTransform):
    """Dead letters -> ``dead_letter/part-<token>.jsonl.gz`` (descriptors out)."""

    def __init__(self, out_dir: str, label: str | None = None):
        super().__init__(label)
        self.out_dir = out_dir

    def expand(self, dead):
        return (dead
                | "Rows" >> beam.Map(lambda d: ("dead_letter/part", dead_letter_row(d)))
                | "Write" >> beam.ParDo(WriteRowsFn(self.out_dir, "jsonl")))


def flatten_small(pcolls: Iterable, label: str):
    """Flatten PCollections of SMALL records (descriptors, partial aggregates).  On the local
    runner a Flatten of several stages' outputs is materialised on the driver, so it is never
    used for documents or per-document rows."""
    pcolls = [p for p in pcolls if p is not None]
    return pcolls[0] if len(pcolls) == 1 else pcolls | label >> beam.Flatten()

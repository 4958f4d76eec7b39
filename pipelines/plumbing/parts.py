"""A stage's documents on disk: ``stages/<stage>/docs-<token>.parquet`` parts.

Each stage of the curate job reads the previous stage's parts and writes its own where the
documents are (``sinks.WriteRowsFn``), so documents never cross a shuffle: the local runner
holds no more than a stage's small records on the driver, and a killed run resumes from the last
committed stage.  The part schema follows ``curation.document.Document`` field by field (dict and
list fields as JSON strings), so a field added to ``Document`` travels through the parts with
no change here.
"""
from __future__ import annotations

import dataclasses
import json
import typing

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from curation.document import Document
from pipelines.plumbing import progress
from pipelines.plumbing.outputs import count
from pipelines.plumbing.sinks import WriteRowsFn

PART_ROWS = 2000
"""Documents per part file: parts are the work items of the next stage, so they must be many
enough to spread over the workers and small enough to hold one row group at a time."""
PART_BYTES = 64 << 20
READ_BATCH = 256


def _arrow_type(annotation: str) -> tuple[pa.DataType, bool]:
    """(column type, stored as JSON) for a ``Document`` field annotation string."""
    a = annotation.replace(" ", "")
    if a.startswith(("dict", "list", "tuple", "typing.Dict", "typing.List")) or "dict[" in a:
        return pa.string(), True
    if a.startswith("float"):
        return pa.float64(), False
    if a.startswith("int"):
        return pa.int64(), False
    if a.startswith("bool"):
        return pa.bool_(), False
    if a.startswith("str"):
        return pa.string(), False
    return pa.string(), True  # anything else: JSON


def _fields() -> list[tuple[str, pa.DataType, bool]]:
    hints = {f.name: (f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type)))
             for f in dataclasses.fields(Document)}
    return [(name, *_arrow_type(str(hint))) for name, hint in hints.items()]


FIELDS = _fields()
PART_SCHEMA = pa.schema([(name, t) for name, t, _ in FIELDS])
JSON_FIELDS = frozenset(name for name, _, as_json in FIELDS if as_json)


def to_row(doc: Document) -> dict:
    row = {}
    for name, _, as_json in FIELDS:
        v = getattr(doc, name)
        row[name] = json.dumps(v, ensure_ascii=False, sort_keys=True) if as_json and v is not None else v
    return row


FIELD_NAMES = frozenset(name for name, _, _ in FIELDS)


def from_row(row: dict) -> Document:
    return _documents(list(row), [[v] for v in row.values()])[0]


def _documents(names: list[str], columns: list[list]) -> list[Document]:
    """Documents from part columns (values per name, one list per column): JSON columns
    decoded, a missing meta ``{}``, columns that are no ``Document`` field left out."""
    keep = [i for i, name in enumerate(names) if name in FIELD_NAMES]
    names = [names[i] for i in keep]
    columns = [[json.loads(v) if v is not None else None for v in columns[i]] if names[j] in JSON_FIELDS
               else columns[i] for j, i in enumerate(keep)]
    if "meta" in names:
        j = names.index("meta")
        columns[j] = [{} if v is None else v for v in columns[j]]
    return [Document(**dict(zip(names, values))) for values in zip(*columns)]


def read_part(url: str, batch_size: int = READ_BATCH) -> typing.Iterator[Document]:
    """The documents of one part, streamed a batch at a time (decoded column by column)."""
    with FileSystems.open(url, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        pf = pq.ParquetFile(f)
        for batch in pf.iter_batches(batch_size=batch_size):
            yield from _documents(batch.schema.names, [c.to_pylist() for c in batch.columns])


def read_columns(url: str, columns: typing.Sequence[str]) -> list[Document]:
    """The documents of one part with only ``columns`` read (the rest: defaults), for a step
    that needs a few fields of every document."""
    with FileSystems.open(url, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        table = pq.read_table(f, columns=list(columns))
    cols = [table.column(c).to_pylist() for c in columns]
    return [Document(**dict(zip(columns, values))) for values in zip(*cols)]


class ReadPartFn(beam.DoFn):
    """A part's URL -> its documents (or ``(url, doc)`` with ``with_part``); the documents
    taken in count as the stage's progress in ``progress`` (a stage folder)."""

    def __init__(self, stage: str, with_part: bool = False, progress: str | None = None) -> None:
        self.stage, self.with_part, self.progress = stage, with_part, progress

    def process(self, url: str):
        n = 0
        for doc in read_part(url):
            n += 1
            yield (url, doc) if self.with_part else doc
            if n % READ_BATCH == 0:
                progress.report(self.progress, self.stage, docs=READ_BATCH)
        progress.report(self.progress, self.stage, docs=n % READ_BATCH)
        count(self.stage, "all", "part_documents_read", n=n)

    def finish_bundle(self) -> None:
        progress.flush()


class ReadParts(beam.PTransform):
    """Part URLs -> documents, the parts spread over the workers first (a shuffle of URLs)."""

    def __init__(self, stage: str, with_part: bool = False, progress: str | None = None,
                 label: str | None = None) -> None:
        super().__init__(label)
        self.stage, self.with_part, self.progress = stage, with_part, progress

    def expand(self, urls):
        return (urls
                | "SpreadParts" >> beam.Reshuffle()
                | "ReadPart" >> beam.ParDo(ReadPartFn(self.stage, self.with_part, self.progress)))


def part_dest(stage: str) -> str:
    return f"stages/{stage}/docs"


class PartRowFn(beam.DoFn):
    """A document -> ``(dest, part row)``; counted as passed on (``out``) in the progress of
    ``stage``."""

    def __init__(self, dest: str, folder: str, stage: str) -> None:
        self.dest, self.folder, self.stage = dest, folder, stage

    def process(self, doc: Document):
        progress.report(self.folder, self.stage, out=1)
        yield self.dest, to_row(doc)

    def finish_bundle(self) -> None:
        progress.flush()


class WriteParts(beam.PTransform):
    """Documents -> ``stages/<stage>/docs-<token>.parquet`` parts; yields writer descriptors."""

    def __init__(self, out_dir: str, stage: str, rows: int = PART_ROWS, label: str | None = None):
        super().__init__(label)
        self.out_dir, self.stage, self.rows = out_dir, stage, rows

    def expand(self, docs):
        dest = part_dest(self.stage)
        return (docs
                | "PartRow" >> beam.ParDo(PartRowFn(dest, self.out_dir, self.stage))
                | "WritePart" >> beam.ParDo(WriteRowsFn(self.out_dir, "parquet", PART_SCHEMA,
                                                        max_rows=self.rows, max_bytes=PART_BYTES,
                                                        row_group=500)))


def part_urls(descriptors):
    """Writer descriptors of parts -> their URLs (to read them later in the same job)."""
    return descriptors | "PartUrl" >> beam.Map(lambda d: d["url"])

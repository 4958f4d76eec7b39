"""The entries of ``stats/id_index/`` and the spool files they wait in until the index is written.

A row writer (``sinks.WriteRowsFn``) or a stage that decides rows itself (the dedup groups)
makes one ``entry`` per key of each row it writes and collects the entries of each file in an
``EntrySpool``; closing the spool writes them, sorted by hash, to ``<out>/_tmp/id_index/`` and
returns that file's descriptor.  ``id_index.WriteIdIndex`` turns the descriptors into the index
files.  Here, below both the writers and the index (pyproject.toml's import contracts): the
writers produce what the index consumes, and neither imports the other for it.
"""
from __future__ import annotations

import json
import uuid

import pyarrow as pa
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from infra.hashing import stable_hash
from infra.storage.files import join

ROW_GROUP = 20_000
"""Entries per Arrow batch of a spool and per row group of an index file."""
SCHEMA = pa.schema([("key_hash", pa.uint64()), ("key", pa.string()), ("what", pa.string()),
                    ("id", pa.string()), ("file", pa.string()), ("detail", pa.string())])
SPOOL_DIR = ("_tmp", "id_index")
SORT = [(c, "ascending") for c in ("key_hash", "key", "what", "id", "file")]


def entry(what: str, key: str, doc_id: str, file: str | None = None, detail: str | None = None) -> tuple:
    return stable_hash(key), key, what, doc_id, file, detail


def detail_json(row: dict) -> str:
    return json.dumps(row, sort_keys=True, ensure_ascii=False, default=str)


def sorted_table(entries) -> pa.Table:
    cols = list(zip(*entries)) or [[] for _ in SCHEMA]
    table = pa.Table.from_arrays([pa.array(c, type=f.type) for c, f in zip(cols, SCHEMA)], schema=SCHEMA)
    return table.sort_by(SORT)


class EntrySpool:
    """The index entries of one written file, as columns, until ``close`` writes them sorted to
    ``<out>/_tmp/id_index/`` and returns ``{"spool": URL, "entries": n, "producer": producer}``
    (None if empty); ``producer`` names the stage's output the entries index (its files'
    ``<stage>-<producer>-...`` names)."""

    def __init__(self, out_dir: str, producer: str) -> None:
        self.out_dir, self.producer = out_dir, producer
        self.entries: list[tuple] = []

    def add(self, e: tuple) -> None:
        self.entries.append(e)

    def close(self) -> dict | None:
        if not self.entries:
            return None
        table, self.entries = sorted_table(self.entries), []
        url = join(self.out_dir, *SPOOL_DIR, f"{uuid.uuid4().hex[:16]}.arrow")
        with FileSystems.create(url, compression_type=CompressionTypes.UNCOMPRESSED) as f:
            with pa.ipc.new_file(f, SCHEMA, options=pa.ipc.IpcWriteOptions(compression="zstd")) as w:
                w.write_table(table, max_chunksize=ROW_GROUP)
        return {"spool": url, "entries": table.num_rows, "producer": self.producer}

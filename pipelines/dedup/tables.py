"""The dedup stage's working files: features per part, and entries partitioned by key.

The file-backed dedup (``pipelines.dedup.stage``) never shuffles one element per
document: every per-document record goes to a file written where the part is read, and the
records of the duplicates go from step to step in ``spill`` files; only file names travel.

- features file (one per input part): ``FEATURE_SCHEMA`` = the first columns of a dedup index
  row (``curation.dedup_records.index_row``), one row per document in part order.  An older
  run's index part (``--dedup-against``) is its own features file.
- entry files (one per part and kind): ``EXACT_SCHEMA`` (text hash) or ``BAND_SCHEMA`` (LSH band
  key) rows with the document's node and reference, as an Arrow IPC file of ``P`` record
  batches, batch ``p`` holding the keys with ``key % P == p`` (``write_partitioned``); the step
  for partition ``p`` reads batch ``p`` of every entry file (``entry_batches``) and groups by
  key in memory (``equal_runs``).  ``P`` grows with the corpus (``partitions_for``), so a
  partition's entries stay bounded.

A document's reference is ``(part key, row)``: ``part_key`` of the part URL and its row there.
"""
from __future__ import annotations

import json
import math
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import xxhash
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from curation.dedup_records import RANK_FIELDS, DedupRecord, index_row, older_node

DOCS_PER_PARTITION = 64_000
"""Documents whose entries one partition step holds: about 0.8M band entries, ~100 MB."""
FEATURE_ROW_GROUP = 256
"""Rows per row group of a features file: verification reads only the groups it needs."""

FEATURE_SCHEMA = pa.schema([
    ("id", pa.string()), ("source", pa.string()), ("rank", pa.string()),
    ("text_hash", pa.binary()), ("band_keys", pa.list_(pa.binary())),
    ("signature", pa.binary()), ("shingles", pa.binary()),
])
NODE_FIELDS = [("n0", pa.int64()), ("n1", pa.int64()), ("n2", pa.float64()), ("n3", pa.int64()),
               ("id", pa.string()), ("source", pa.string()), ("part", pa.uint64()), ("row", pa.int32())]
"""A node (``curation.dedup_records``: four rank values, id, source) with its reference."""
EXACT_SCHEMA = pa.schema([("text_hash", pa.binary(16))] + NODE_FIELDS)
BAND_SCHEMA = pa.schema([("band", pa.int16()), ("digest", pa.binary(8))] + NODE_FIELDS)
_IPC = pa.ipc.IpcWriteOptions(compression="zstd")


def part_key(url: str) -> int:
    """The 64-bit key of a part (or older index part) in document references."""
    return xxhash.xxh3_64_intdigest(url.encode("utf-8", "surrogateescape"))


def partitions_for(documents: int) -> int:
    """Partitions of the entry files for about ``documents`` documents: at least two (both
    local workers busy) when there are two parts' worth, then one per ``DOCS_PER_PARTITION``."""
    return max(min(math.ceil(documents / 2000), 2), math.ceil(documents / DOCS_PER_PARTITION), 1)


# -- writing (per part) --------------------------------------------------------------------------
def features_table(records: Sequence[DedupRecord]) -> pa.Table:
    return pa.Table.from_pylist([index_row(r) for r in records], schema=FEATURE_SCHEMA)


def _node_columns(nodes: list[tuple], key: int, rows: Sequence[int]) -> list:
    cols = list(zip(*nodes)) if nodes else [()] * (RANK_FIELDS + 2)
    n = len(nodes)
    return [pa.array(cols[0], pa.int64()), pa.array(cols[1], pa.int64()),
            pa.array(cols[2], pa.float64()), pa.array(cols[3], pa.int64()),
            pa.array(cols[4], pa.string()), pa.array(cols[5], pa.string()),
            pa.array(np.full(n, key, dtype=np.uint64)), pa.array(np.asarray(rows, dtype=np.int32))]


def exact_entries(records: Sequence[DedupRecord], key: int) -> pa.Table:
    nodes = [r.node[:RANK_FIELDS + 2] for r in records]
    hashes = pa.array([r.text_hash for r in records], pa.binary(16))
    return pa.Table.from_arrays([hashes, *_node_columns(nodes, key, range(len(records)))],
                                schema=EXACT_SCHEMA)


def band_entries(records: Sequence[DedupRecord], key: int) -> pa.Table:
    """One row per (document with band keys, band)."""
    bands, digests, nodes, rows = [], [], [], []
    for i, r in enumerate(records):
        if r.bands is None:
            continue
        node = r.node[:RANK_FIELDS + 2]
        for band, digest in r.bands:
            bands.append(band)
            digests.append(digest)
            nodes.append(node)
            rows.append(i)
    return pa.Table.from_arrays([pa.array(bands, pa.int16()), pa.array(digests, pa.binary(8)),
                                 *_node_columns(nodes, key, rows)], schema=BAND_SCHEMA)


def key_partition(column: pa.Array, partitions: int) -> np.ndarray:
    """Partition of each key (text hash or band digest): its first 8 bytes, little-endian, mod P."""
    width = column.type.byte_width
    data = np.frombuffer(column.buffers()[1], dtype=np.uint8)[
        column.offset * width:(column.offset + len(column)) * width]
    first = data.reshape(-1, width)[:, :8].copy().view("<u8").ravel()
    return (first % np.uint64(partitions)).astype(np.int64)


def write_partitioned(url: str, table: pa.Table, key_column: str, partitions: int) -> None:
    """``table`` as an Arrow IPC file of ``partitions`` record batches, by key partition."""
    part = key_partition(table.column(key_column).combine_chunks(), partitions)
    order = np.argsort(part, kind="stable")
    bounds = np.searchsorted(part[order], np.arange(partitions + 1))
    ordered = table.take(pa.array(order))
    with FileSystems.create(url, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        with pa.ipc.new_file(f, table.schema, options=_IPC) as writer:
            for p in range(partitions):
                chunk = ordered.slice(bounds[p], bounds[p + 1] - bounds[p])
                writer.write_batch(pa.record_batch([c.combine_chunks() for c in chunk.columns],
                                                   schema=table.schema))


def write_features(url: str, table: pa.Table) -> None:
    with FileSystems.create(url, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        pq.write_table(table, f, compression="zstd", row_group_size=FEATURE_ROW_GROUP)


# -- reading (per partition) ---------------------------------------------------------------------
def entry_batches(descriptors: list[dict], kind: str, p: int, drop: dict | None = None) -> pa.Table:
    """Batch ``p`` of every ``kind`` (``exact`` | ``bands``) entry file of the features
    descriptors, as ONE chunk (``runs_nodes`` takes from it once); rows listed in
    ``drop[part key]`` left out."""
    out, schema = [], EXACT_SCHEMA if kind == "exact" else BAND_SCHEMA
    for d in descriptors:
        if not d.get(kind):
            continue
        with FileSystems.open(d[kind], compression_type=CompressionTypes.UNCOMPRESSED) as f:
            batch = pa.ipc.open_file(f).get_batch(p)
        gone = (drop or {}).get(d["key"])
        if gone is not None and batch.num_rows:
            batch = batch.filter(pa.array(~np.isin(batch.column("row").to_numpy(), gone)))
        out.append(batch)
    return pa.Table.from_batches(out, schema=schema).combine_chunks()


def read_rows(url: str, rows: list[int], column: str) -> dict[int, object]:
    """``column`` of ``rows`` of a Parquet file, reading only the row groups that hold them."""
    with FileSystems.open(url, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        pf = pq.ParquetFile(f)
        starts = np.cumsum([0] + [pf.metadata.row_group(g).num_rows
                                  for g in range(pf.metadata.num_row_groups)])
        groups = sorted({int(np.searchsorted(starts, r, side="right")) - 1 for r in rows})
        values = pf.read_row_groups(groups, columns=[column]).column(column).to_pylist()
    offset, out = {}, {}
    pos = 0
    for g in groups:
        offset[g] = pos
        pos += int(starts[g + 1] - starts[g])
    for r in rows:
        g = int(np.searchsorted(starts, r, side="right")) - 1
        out[r] = values[offset[g] + r - int(starts[g])]
    return out


def equal_runs(*keys: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """Sort rows by the key columns (last one primary) -> (row order, [row indices of every run
    of two or more equal keys])."""
    if not len(keys[0]):
        return np.zeros(0, dtype=np.int64), []
    order = np.lexsort(keys)
    change = np.zeros(len(order), dtype=bool)
    change[0] = True
    for k in keys:
        s = k[order]
        change[1:] |= s[1:] != s[:-1]
    starts = np.flatnonzero(change)
    ends = np.append(starts[1:], len(order))
    many = ends - starts > 1  # most keys are unique: never loop over them in Python
    return order, [order[a:b] for a, b in zip(starts[many].tolist(), ends[many].tolist())]


def digest_u64(column: pa.ChunkedArray) -> np.ndarray:
    """Fixed-width binary keys -> one uint64 (or two for 16 bytes: returned as a 2-column view)."""
    arr = column.combine_chunks()
    width = arr.type.byte_width
    data = np.frombuffer(arr.buffers()[1], dtype=np.uint8)[arr.offset * width:(arr.offset + len(arr)) * width]
    return data.reshape(-1, width).copy().view("<u8")


def runs_nodes(table: pa.Table, runs: list[np.ndarray], key: str | None) -> list[tuple]:
    """``(key value of its first row, [nodes])`` of each run of rows of an entry table, from ONE
    ``take``: a take per run costs a pass over every chunk of the table (Arrow concatenates a
    chunked column to take from it), which made the partition steps quadratic in the parts."""
    if not runs:
        return []
    names = [name for name, _ in NODE_FIELDS] + ([key] if key else [])
    t = table.select(names).take(pa.array(np.concatenate(runs)))
    cols = [t.column(name).to_pylist() for name, _ in NODE_FIELDS]
    nodes = list(zip(*cols))
    keys = t.column(key).to_pylist() if key else None
    out, start = [], 0
    for rows in runs:
        out.append((keys[start] if key else None, nodes[start:start + len(rows)]))
        start += len(rows)
    return out


def older_records_table(table: pa.Table) -> list[DedupRecord]:
    """An older run's index part -> its records (``older_node`` s), without the per-row dicts of
    ``record_from_row`` for the columns the dedup does not read."""
    ids, sources = table.column("id").to_pylist(), table.column("source").to_pylist()
    ranks = table.column("rank").to_pylist()
    hashes, keys = table.column("text_hash").to_pylist(), table.column("band_keys").to_pylist()
    return [DedupRecord(older_node(json.loads(rank), i, s), h,
                        None if k is None else tuple(enumerate(k)))
            for i, s, rank, h, k in zip(ids, sources, ranks, hashes, keys)]

"""Spill files: what one dedup step hands the next, partitioned by key, instead of Beam elements.

On the local FnApiRunner every element that crosses a fused-stage boundary (a GroupByKey, a side
input, a Flatten) waits in the driver process until its consumer runs, so any record per document
(or per duplicate) sent through Beam grows the driver with the corpus.  The file-backed dedup
(``pipelines.dedup.stage``) therefore runs as steps over ``P`` partitions: the
task for partition ``p`` of a step reads partition ``p`` of every spill file of the steps it
depends on, groups in memory (one partition: bounded by ``pipelines.dedup.tables.DOCS_PER_PARTITION``), and
writes ONE spill file split into the ``P`` partitions of the next step's key.  Only the files'
descriptors (O(P) per step) travel through Beam, as side inputs; that also orders the steps.  This
is a shuffle through files, as Spark or a shuffle service would do it, and works wherever Beam's
FileSystems do (local, ``gs://``, ``s3://``): the files live under ``<out>/_tmp/dedup/`` and go away
when the stage is committed.

``Spilled`` does the same for the elements of one step that must wait for a side input
computed from the whole stage (decontamination's matched documents wait for the corpus-wide
frequent n-grams): they go to files, and only the files' descriptors wait.

Format (job-internal, read by the same interpreter that wrote it): ``P`` chunks, chunk ``p`` a
zstd-compressed pickle of the list of records of partition ``p``; then a footer of ``P`` x
(offset, compressed length, pickled length) as little-endian uint64, then ``P`` itself (uint64).
"""
from __future__ import annotations

import pickle
import struct
import uuid
from typing import Callable, Iterable, Iterator

import apache_beam as beam
import pyarrow as pa
import xxhash
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.transforms.window import GlobalWindows

from infra.storage.files import join

_U64 = struct.Struct("<Q")


def spill_url(out_dir: str, step: str, folder: str = "dedup") -> str:
    """A fresh spill file name for ``step`` under ``<out_dir>/_tmp/<folder>/`` (a retried bundle
    writes a new one: only the descriptors of bundles that succeeded are read)."""
    return join(out_dir, "_tmp", folder, f"{step}-{uuid.uuid4().hex[:16]}.spill")


def hash_partition(value: bytes | str, partitions: int) -> int:
    """A stable partition for a key given as bytes or text (xxh3-64, the same in every process)."""
    if isinstance(value, str):
        value = value.encode("utf-8", "surrogateescape")
    return xxhash.xxh3_64_intdigest(value) % partitions


def ref_partition(part: int, row: int, partitions: int) -> int:
    """The partition of a document by its reference ``(part key, row)`` (unique per node)."""
    return xxhash.xxh3_64_intdigest(_U64.pack(part) + _U64.pack(row & 0xFFFFFFFF)) % partitions


def write_spill(url: str, chunks: list[list]) -> dict:
    """Write one record list per partition; returns the descriptor ``{url, records}``."""
    footer, offset = [], 0
    with FileSystems.create(url, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        for records in chunks:
            raw = pickle.dumps(records, protocol=5) if records else b""
            data = pa.compress(raw, codec="zstd", asbytes=True) if raw else b""
            f.write(data)
            footer.append((offset, len(data), len(raw)))
            offset += len(data)
        f.write(b"".join(_U64.pack(v) for entry in footer for v in entry) + _U64.pack(len(chunks)))
    return {"url": url, "records": sum(len(c) for c in chunks)}


class Spiller:
    """Records to a spill file, each to the partition ``key(record)`` names (or the one the
    caller names, ``add_at``, where it has the partition already)."""

    def __init__(self, partitions: int, key: Callable[[tuple], int] | None = None) -> None:
        self.key, self.chunks = key, [[] for _ in range(partitions)]

    def add(self, record) -> None:
        self.chunks[self.key(record)].append(record)

    def add_at(self, p: int, record) -> None:
        self.chunks[p].append(record)

    def extend(self, records: Iterable) -> "Spiller":
        for r in records:
            self.add(r)
        return self

    @property
    def records(self) -> int:
        return sum(len(c) for c in self.chunks)

    def write(self, url: str) -> dict:
        return write_spill(url, self.chunks)


def read_chunk(url: str, p: int) -> list:
    """The records of partition ``p`` of one spill file."""
    with FileSystems.open(url, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        f.seek(-8, 2)
        n = _U64.unpack(f.read(8))[0]
        if not 0 <= p < n:
            raise ValueError(f"{url} has {n} partitions, asked for {p}")
        f.seek(-8 - 24 * (n - p), 2)
        offset, length, raw = struct.unpack("<3Q", f.read(24))
        if not length:
            return []
        f.seek(offset)
        data = f.read(length)
    return pickle.loads(pa.decompress(data, decompressed_size=raw, codec="zstd", asbytes=True))


def read_partition(descriptors: Iterable[dict], p: int) -> Iterator:
    """Every record of partition ``p`` of the spill files ``descriptors`` lists (empty files
    are not opened)."""
    for d in descriptors:
        if d and d.get("records"):
            yield from read_chunk(d["url"], p)


class SpillFn(beam.DoFn):
    """Elements -> spill files of at most ``every`` elements each (one partition); yields their
    descriptors.  For elements that must wait for a side input computed from the whole stage
    (on the local runner they would wait in the driver): only the descriptors wait."""

    def __init__(self, out_dir: str, name: str, every: int = 1000) -> None:
        self.out_dir, self.name, self.every = out_dir, name, every

    def start_bundle(self) -> None:
        self._held: list = []

    def _flush(self):
        if self._held:
            desc = write_spill(spill_url(self.out_dir, self.name, self.name), [self._held])
            self._held = []
            yield desc

    def process(self, element):
        self._held.append(element)
        if len(self._held) >= self.every:
            yield from self._flush()

    def finish_bundle(self):
        for desc in self._flush():
            yield GlobalWindows.windowed_value(desc)


class Spilled(beam.PTransform):
    """``pcoll | Spilled(out_dir, name)``: the same elements, through spill files (``SpillFn``),
    spread over the workers again; none of them is ever a Beam element between two stages."""

    def __init__(self, out_dir: str, name: str, every: int = 1000, label: str | None = None) -> None:
        super().__init__(label)
        self.out_dir, self.name, self.every = out_dir, name, every

    def expand(self, pcoll):
        return (pcoll
                | "Spill" >> beam.ParDo(SpillFn(self.out_dir, self.name, self.every))
                | "SpreadSpills" >> beam.Reshuffle()
                | "Unspill" >> beam.FlatMap(lambda d: read_chunk(d["url"], 0)))

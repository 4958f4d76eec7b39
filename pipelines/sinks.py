"""Writing a run's outputs: token shards + kept-document Parquet, removed/, dead_letter/, dedup/.

Shards: documents of a source are spread over ``ceil(source tokens / max_tokens_per_shard)``
shards by a stable hash of their id (no worker needs a whole source), sorted by id inside a shard,
and written with ``IndexedDatasetWriter`` (temp name + rename).  ``documents/<source>/
part-NNNNN.parquet`` holds the same documents in the same order as shard NNNNN.  Every write goes
through Beam's FileSystems, so RUN may be ``gs://...`` (shards are built in a local temp folder
and copied there).
"""
from __future__ import annotations

import io
import json
import math
import os
import tempfile
import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from curation.document import STAGES, DeadLetter, Document, Removal
from pipelines.common import count, stable_hash

DOCUMENT_SCHEMA = pa.schema([
    ("id", pa.string()), ("source", pa.string()), ("text", pa.string()), ("url", pa.string()),
    ("meta", pa.string()), ("lang", pa.string()), ("lang_score", pa.float64()),
    ("quality_score", pa.float64()), ("tokens", pa.int64()),
])


def is_remote(path: str) -> bool:
    return "://" in path


def join(*parts: str) -> str:
    return FileSystems.join(*parts) if is_remote(parts[0]) else os.path.join(*parts)


def write_bytes(path: str, data: bytes) -> None:
    """Write a whole file atomically: temp name + rename locally, one object upload remotely."""
    if is_remote(path):
        with FileSystems.create(path) as f:
            f.write(data)
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def document_row(doc: Document) -> dict:
    row = doc.to_dict()
    row["meta"] = json.dumps(doc.meta, sort_keys=True, ensure_ascii=False)
    return row


def parquet_bytes(rows: list[dict], schema: pa.Schema) -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), buf, compression="zstd")
    return buf.getvalue()


def _assign_shard(item, totals: dict[str, int], max_tokens: int):
    doc, tokens = item
    n = max(1, math.ceil(totals.get(doc.source, 0) / max_tokens))
    return (doc.source, stable_hash(doc.id) % n), item


class WriteShardFn(beam.DoFn):
    """((source, shard), [(doc, tokens)]) -> shard files + Parquet part; yields the shard's info."""

    def __init__(self, run_dir: str, dtype: str) -> None:
        self.run_dir, self.dtype = run_dir, dtype

    def process(self, element):
        from blending.indexed_dataset import IndexedDatasetWriter, bin_path, idx_path

        (source, shard), items = element
        items = sorted(items, key=lambda it: it[0].id)
        rel = f"shards/{source}/{source}_{shard:05d}"
        target = join(self.run_dir, *rel.split("/"))
        with tempfile.TemporaryDirectory() as tmp:
            prefix = os.path.join(tmp, os.path.basename(rel)) if is_remote(target) else target
            with IndexedDatasetWriter(prefix, np.dtype(self.dtype)) as writer:
                for _, tokens in items:
                    writer.add_document(tokens)
            info = writer.finalize()
            if is_remote(target):
                for local, remote in ((bin_path(prefix), bin_path(target)), (idx_path(prefix), idx_path(target))):
                    with open(local, "rb") as f:
                        write_bytes(remote, f.read())
        rows = [document_row(doc) for doc, _ in items]
        write_bytes(join(self.run_dir, "documents", source, f"part-{shard:05d}.parquet"),
                    parquet_bytes(rows, DOCUMENT_SCHEMA))
        count("shards", source, "written")
        yield {"source": source, "shard": shard, "prefix": rel, "documents": info.documents,
               "tokens": info.tokens, "bin_sha256": info.bin_sha256, "idx_sha256": info.idx_sha256}


class WriteShards(beam.PTransform):
    """(doc, tokens) -> shard info dicts (one per shard written)."""

    def __init__(self, run_dir: str, max_tokens_per_shard: int, dtype: str, label: str | None = None):
        super().__init__(label)
        self.run_dir, self.max_tokens, self.dtype = run_dir, max_tokens_per_shard, dtype

    def expand(self, tokenized):
        totals = (tokenized
                  | "SourceTokens" >> beam.Map(lambda it: (it[0].source, int(it[1].size)))
                  | "SumTokens" >> beam.CombinePerKey(sum))
        return (
            tokenized
            | "AssignShard" >> beam.Map(_assign_shard, beam.pvalue.AsDict(totals), self.max_tokens)
            | "GroupShards" >> beam.GroupByKey()
            | "WriteShard" >> beam.ParDo(WriteShardFn(self.run_dir, self.dtype))
        )


def removed_row(r: Removal, with_text: bool = True) -> dict:
    return {"id": r.doc.id, "source": r.doc.source, "stage": r.stage, "reason": r.reason,
            "detail": r.detail, "text": r.doc.text if with_text else None}


def dead_letter_row(d: DeadLetter) -> dict:
    return {"source": d.source, "location": d.location, "error": d.error, "raw": d.raw}


def _json(row: dict) -> str:
    return json.dumps(row, sort_keys=True, ensure_ascii=False, default=str)


class WriteRemoved(beam.PTransform):
    """Removals -> ``removed/<stage>/part-*.jsonl.gz``; ``sample`` = "all" or N per stage."""

    def __init__(self, run_dir: str, sample: str | int = "all", label: str | None = None):
        super().__init__(label)
        self.run_dir, self.sample = run_dir, sample

    def expand(self, removed):
        parts = removed | "ByStage" >> beam.Partition(lambda r, n: STAGES.index(r.stage), len(STAGES))
        for stage, part in zip(STAGES, parts):
            rows = part | f"Rows_{stage}" >> beam.Map(removed_row)
            if self.sample != "all":
                rows = (rows
                        | f"Sample_{stage}" >> beam.combiners.Top.Of(
                            int(self.sample), key=lambda r: -stable_hash(r["id"]))
                        | f"Unlist_{stage}" >> beam.FlatMap(lambda rs: rs))
            _ = (rows
                 | f"Json_{stage}" >> beam.Map(_json)
                 | f"Write_{stage}" >> beam.io.WriteToText(
                     join(self.run_dir, "removed", stage, "part"), file_name_suffix=".jsonl.gz"))
        return removed.pipeline


class WriteDeadLetters(beam.PTransform):
    def __init__(self, run_dir: str, label: str | None = None):
        super().__init__(label)
        self.run_dir = run_dir

    def expand(self, dead):
        return (dead
                | "Rows" >> beam.Map(lambda d: _json(dead_letter_row(d)))
                | "Write" >> beam.io.WriteToText(join(self.run_dir, "dead_letter", "part"),
                                                 file_name_suffix=".jsonl.gz"))


def counters_rows(result) -> list[dict]:
    """The job's ``curate`` counters as rows ``{stage, source, outcome, reason, value}``
    (committed values where the runner reports them, else attempted)."""
    from apache_beam.metrics.metric import MetricsFilter

    from pipelines.common import NAMESPACE

    rows = []
    for c in result.metrics().query(MetricsFilter().with_namespace(NAMESPACE))["counters"]:
        parts = c.key.metric.name.split("/", 3) + [None] * 3
        value = c.committed if c.committed is not None else c.attempted
        rows.append({"stage": parts[0], "source": parts[1], "outcome": parts[2], "reason": parts[3],
                     "value": int(value or 0)})
    return sorted(rows, key=lambda r: (r["stage"], r["source"] or "", r["outcome"] or "", r["reason"] or ""))


def write_counters(result, run_dir: str) -> str | None:
    """Write the Beam counters to ``stats/counters.json``; runners that report no metrics
    (some portable runners) give an empty list, never an error."""
    try:
        rows = counters_rows(result)
    except Exception:  # noqa: BLE001 - metrics are a report, never a reason to fail a run
        rows = []
    path = join(run_dir, "stats", "counters.json")
    write_bytes(path, json.dumps({"namespace": "curate", "counters": rows}, indent=1).encode() + b"\n")
    return path

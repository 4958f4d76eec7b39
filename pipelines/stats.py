"""Stats of a run: one row per document read, aggregated counts, histograms (docs/run-layout.md).

``StatsRows`` turns the three final outcomes (kept ``(doc, tokens)``, ``Removal``,
``DeadLetter``) into ``stats/documents.parquet`` rows; ``WriteStats`` writes that table,
``counts.parquet`` (per source, stage, outcome, reason) and ``histograms.parquet``.
``ReadCounts`` counts what the readers produced, independently of the outcomes, so the driver
can check ``read = kept + removed + dead_lettered``.
"""
from __future__ import annotations

import math

import apache_beam as beam
import pyarrow as pa

from curation.document import DeadLetter, Document, Removal
from curation.heuristics import SCORE_COLUMNS, score_columns
from pipelines.sinks import join

ROW_SCHEMA = pa.schema([
    ("id", pa.string()), ("source", pa.string()), ("outcome", pa.string()), ("stage", pa.string()),
    ("reason", pa.string()), ("chars", pa.int64()), ("words", pa.int64()), ("lang", pa.string()),
    ("lang_score", pa.float64()), ("quality_score", pa.float64()), ("tokens", pa.int64()),
] + [(c, pa.float64()) for c in SCORE_COLUMNS])
COUNT_SCHEMA = pa.schema([
    ("source", pa.string()), ("stage", pa.string()), ("outcome", pa.string()),
    ("reason", pa.string()), ("documents", pa.int64()),
])
HIST_SCHEMA = pa.schema([
    ("kind", pa.string()), ("source", pa.string()), ("outcome", pa.string()),
    ("bin_lo", pa.float64()), ("bin_hi", pa.float64()), ("count", pa.int64()),
])
READ_SCHEMA = pa.schema([("source", pa.string()), ("read", pa.int64())])


def _doc_row(doc: Document, outcome: str, stage: str, reason: str | None) -> dict:
    return {"id": doc.id, "source": doc.source, "outcome": outcome, "stage": stage,
            "reason": reason, "chars": len(doc.text), "words": len(doc.text.split()),
            "lang": doc.lang, "lang_score": doc.lang_score, "quality_score": doc.quality_score,
            "tokens": doc.tokens, **score_columns(doc.heuristic_scores)}


def kept_row(item) -> dict:
    doc, _ = item
    return _doc_row(doc, "kept", "tokenize", None)


def removed_row(r: Removal) -> dict:
    return _doc_row(r.doc, "removed", r.stage, r.reason)


def dead_row(d: DeadLetter) -> dict:
    reason = d.error.split(":", 1)[0][:80] or "error"
    return {"id": d.location, "source": d.source, "outcome": "dead_letter", "stage": "read",
            "reason": reason, "chars": 0, "words": 0, "lang": None, "lang_score": None,
            "quality_score": None, "tokens": None}


def histogram_bins(kind: str, value: float | None) -> tuple[float, float] | None:
    """Log2 bins for sizes (chars, words, tokens), 0.05-wide bins for scores in [0, 1]."""
    if value is None:
        return None
    if kind.endswith("score"):
        lo = min(math.floor(value * 20), 19) / 20
        return lo, round(lo + 0.05, 2)
    if value < 1:
        return 0.0, 1.0
    e = math.floor(math.log2(value))
    return float(2 ** e), float(2 ** (e + 1))


def _hist_keys(row: dict):
    for kind in ("chars", "words", "tokens", "lang_score", "quality_score"):
        b = histogram_bins(kind, row[kind])
        if b is not None:
            yield (kind, row["source"], row["outcome"], b[0], b[1]), 1


class StatsRows(beam.PTransform):
    """{"kept": (doc, tokens), "removed": Removal, "dead_letter": DeadLetter} -> rows."""

    def expand(self, outcomes):
        kept = outcomes["kept"] | "KeptRows" >> beam.Map(kept_row)
        removed = outcomes["removed"] | "RemovedRows" >> beam.Map(removed_row)
        dead = outcomes["dead_letter"] | "DeadRows" >> beam.Map(dead_row)
        return (kept, removed, dead) | "AllRows" >> beam.Flatten()


def _single_parquet(path: str, schema: pa.Schema):
    return beam.io.WriteToParquet(path, schema, num_shards=1, shard_name_template="")


class WriteStats(beam.PTransform):
    def __init__(self, run_dir: str, label: str | None = None):
        super().__init__(label)
        self.run_dir = run_dir

    def expand(self, rows):
        stats = join(self.run_dir, "stats")
        _ = rows | "Documents" >> _single_parquet(join(stats, "documents.parquet"), ROW_SCHEMA)
        _ = (rows
             | "CountKey" >> beam.Map(lambda r: ((r["source"], r["stage"], r["outcome"], r["reason"]), 1))
             | "Count" >> beam.CombinePerKey(sum)
             | "CountRows" >> beam.MapTuple(lambda k, n: dict(zip(
                 ("source", "stage", "outcome", "reason"), k), documents=n))
             | "Counts" >> _single_parquet(join(stats, "counts.parquet"), COUNT_SCHEMA))
        _ = (rows
             | "HistKeys" >> beam.FlatMap(_hist_keys)
             | "HistCount" >> beam.CombinePerKey(sum)
             | "HistRows" >> beam.MapTuple(lambda k, n: dict(zip(
                 ("kind", "source", "outcome", "bin_lo", "bin_hi"), k), count=n))
             | "Histograms" >> _single_parquet(join(stats, "histograms.parquet"), HIST_SCHEMA))
        return rows.pipeline


class ReadCounts(beam.PTransform):
    """Everything the readers produced -> ``stats/read_counts.parquet`` (source, read)."""

    def __init__(self, run_dir: str, label: str | None = None):
        super().__init__(label)
        self.run_dir = run_dir

    def expand(self, read_outputs):
        sources = [
            read_outputs["docs"] | "DocSource" >> beam.Map(lambda d: d.source),
            read_outputs["removed"] | "RemovedSource" >> beam.Map(lambda r: r.doc.source),
            read_outputs["dead_letter"] | "DeadSource" >> beam.Map(lambda d: d.source),
        ]
        return (sources
                | "AllRead" >> beam.Flatten()
                | "PerSource" >> beam.combiners.Count.PerElement()
                | "ReadRows" >> beam.MapTuple(lambda s, n: {"source": s, "read": n})
                | "Write" >> _single_parquet(join(self.run_dir, "stats", "read_counts.parquet"), READ_SCHEMA))


CONTAMINATION_SCHEMA = pa.schema([
    ("task", pa.string()), ("source", pa.string()), ("action", pa.string()), ("documents", pa.int64()),
])
CONTAMINATION_TASK_SCHEMA = pa.schema([("task", pa.string())] + [(c, pa.int64()) for c in (
    "ngrams", "frequent_ngrams", "matches", "documents_split", "documents_removed", "pieces_dropped")])


class WriteContaminationStats(beam.PTransform):
    """``Decontaminate``'s stats -> ``stats/contamination.parquet`` (task, source, action,
    documents; docs/stats-schema.md) and ``stats/contamination_tasks.parquet`` (one row per task:
    n-grams indexed, frequent n-grams ignored, matches, documents split/removed, pieces dropped)."""

    def __init__(self, run_dir: str, label: str | None = None):
        super().__init__(label)
        self.run_dir = run_dir

    def expand(self, outputs):
        stats = join(self.run_dir, "stats")
        _ = outputs["contamination"] | "PerTaskSource" >> _single_parquet(
            join(stats, "contamination.parquet"), CONTAMINATION_SCHEMA)
        _ = outputs["tasks"] | "PerTask" >> _single_parquet(
            join(stats, "contamination_tasks.parquet"), CONTAMINATION_TASK_SCHEMA)
        return outputs["tasks"].pipeline

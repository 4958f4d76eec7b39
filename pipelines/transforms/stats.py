"""Stats of a run: one row per document read, sharded, and the small aggregates (run-layout.md).

Every stage writes the rows of the documents whose fate it decided where they are
(``stats/documents/<stage>-<token>.parquet``, ``sinks.WriteRowsFn``) and combines them into
partial aggregates keyed by (source, stage, outcome, reason), histogram bin and language;
only those partial counts cross a shuffle.  After the last stage the driver sums the stages'
partials (a few kilobytes) into ``stats/counts.parquet``, ``stats/histograms.parquet``,
``stats/languages.parquet`` and ``stats/read_counts.parquet``.

``stats_row`` is the ONE row builder and ``ROW_SCHEMA`` the ONE schema of per-document rows;
score columns listed in ``SCORE_COLUMNS`` are added to both as flat float64 columns, read from
``Document.heuristic_scores``.
"""
from __future__ import annotations

import json

import apache_beam as beam
import pyarrow as pa

from curation.document import DeadLetter, Removal
from curation.heuristics import SCORE_COLUMNS, score_columns
from curation.stats import aggregate_keys, count_words
from pipelines.transforms.sinks import WriteDeadLetters, WriteRemoved, WriteRowsFn, flatten_small
from pipelines.storage.files import join, write_bytes

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
LANGUAGE_SCHEMA = pa.schema([("source", pa.string()), ("outcome", pa.string()),
                             ("lang", pa.string()), ("documents", pa.int64())])
READ_SCHEMA = pa.schema([("source", pa.string()), ("read", pa.int64())])
DOCUMENTS_DIR = "stats/documents"


def stats_row(record) -> dict:
    """The per-document stats row of a final outcome: a kept ``(doc, tokens)`` (or kept
    ``Document``), a ``Removal`` or a ``DeadLetter``."""
    if isinstance(record, DeadLetter):
        reason = record.error.split(":", 1)[0][:80] or "error"
        row = {"id": record.location, "source": record.source, "outcome": "dead_letter",
               "stage": "read", "reason": reason, "chars": 0, "words": 0, "lang": None,
               "lang_score": None, "quality_score": None, "tokens": None}
        row.update(score_columns(None))
        return row
    if isinstance(record, Removal):
        doc, outcome, stage, reason = record.doc, "removed", record.stage, record.reason
    else:
        doc = record[0] if isinstance(record, tuple) else record
        outcome, stage, reason = "kept", "tokenize", None
    row = {"id": doc.id, "source": doc.source, "outcome": outcome, "stage": stage,
           "reason": reason, "chars": len(doc.text), "words": count_words(doc.text),
           "lang": doc.lang, "lang_score": doc.lang_score, "quality_score": doc.quality_score,
           "tokens": doc.tokens}
    row.update(score_columns(doc.heuristic_scores))
    return row


class StageOutcomes(beam.PTransform):
    """A stage's final outcomes -> per-document stats rows, ``removed/``, ``dead_letter/`` files
    (all written where they are) and the stage's partial aggregates.

    Input: a dict with any of ``kept`` ((doc, tokens)), ``removed`` (Removal), ``dead_letter``
    (DeadLetter), ``read`` ((source, n) per reader work item).  Output: ``{"descriptors":
    writer descriptors, "aggregates": ((key), n)}``.
    """

    def __init__(self, out_dir: str, stage: str, removed_sample: str | int = "all",
                 label: str | None = None) -> None:
        super().__init__(label)
        self.out_dir, self.stage, self.removed_sample = out_dir, stage, removed_sample

    def expand(self, outcomes: dict):
        dest = f"{DOCUMENTS_DIR}/{self.stage}"
        descriptors, partials = [], []
        for name in ("kept", "removed", "dead_letter"):
            pcoll = outcomes.get(name)
            if pcoll is None:
                continue
            rows = pcoll | f"{name}Rows" >> beam.Map(stats_row)
            descriptors.append(rows
                               | f"{name}Dest" >> beam.Map(lambda r: (dest, r))
                               | f"{name}WriteRows" >> beam.ParDo(WriteRowsFn(self.out_dir, "parquet", ROW_SCHEMA)))
            partials.append(rows
                            | f"{name}Keys" >> beam.FlatMap(aggregate_keys)
                            | f"{name}Sum" >> beam.CombinePerKey(sum))
        if outcomes.get("removed") is not None:
            descriptors.append(outcomes["removed"] | "WriteRemoved" >> WriteRemoved(self.out_dir, self.removed_sample))
        if outcomes.get("dead_letter") is not None:
            descriptors.append(outcomes["dead_letter"] | "WriteDeadLetters" >> WriteDeadLetters(self.out_dir))
        if outcomes.get("read") is not None:
            partials.append(outcomes["read"]
                            | "ReadKey" >> beam.MapTuple(lambda s, n: (("read", s), n))
                            | "ReadSum" >> beam.CombinePerKey(sum))
        path = join(self.out_dir, "stages", self.stage, "aggregates.json")
        aggregates = (flatten_small(partials, "AllPartials")
                      | "SumPartials" >> beam.CombinePerKey(sum)
                      | "ListPartials" >> beam.combiners.ToList()
                      | "WritePartials" >> beam.Map(_write_partials, path))
        return {"descriptors": flatten_small(descriptors, "AllDescriptors"), "aggregates": aggregates}


def _write_partials(items: list, path: str) -> int:
    rows = sorted(([list(k), n] for k, n in items), key=lambda kv: json.dumps(kv[0], default=str))
    write_bytes(path, json.dumps(rows).encode())
    return len(rows)


AGGREGATE_TABLES = {"counts": ("counts.parquet", COUNT_SCHEMA),
                    "histograms": ("histograms.parquet", HIST_SCHEMA),
                    "languages": ("languages.parquet", LANGUAGE_SCHEMA),
                    "read": ("read_counts.parquet", READ_SCHEMA)}


CONTAMINATION_SCHEMA = pa.schema([
    ("task", pa.string()), ("source", pa.string()), ("action", pa.string()), ("documents", pa.int64()),
])
CONTAMINATION_TASK_SCHEMA = pa.schema([("task", pa.string())] + [(c, pa.int64()) for c in (
    "ngrams", "frequent_ngrams", "matches", "documents_split", "documents_removed", "pieces_dropped")])


def _single_parquet(path: str, schema: pa.Schema):
    return beam.io.WriteToParquet(path, schema, num_shards=1, shard_name_template="")


class WriteContaminationStats(beam.PTransform):
    """``Decontaminate``'s stats -> ``stats/contamination.parquet`` (task, source, action,
    documents; docs/stats-schema.md) and ``stats/contamination_tasks.parquet`` (one row per task:
    n-grams indexed, frequent n-grams ignored, matches, documents split/removed, pieces dropped).
    Both are small (one row per task and source)."""

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



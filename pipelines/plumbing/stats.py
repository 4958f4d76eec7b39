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
from curation.pii import KINDS as PII_KINDS
from curation.stats import aggregate_keys, count_words
from pipelines.plumbing.sinks import Gather, WriteDeadLetters, WriteRemoved, WriteRowsFn, flatten_small
from infra.storage.files import join, write_bytes
from pipelines.plumbing.id_index import SpoolEntriesFn, WriteIdIndex

ROW_SCHEMA = pa.schema([
    ("id", pa.string()), ("source", pa.string()), ("outcome", pa.string()), ("stage", pa.string()),
    ("reason", pa.string()), ("chars", pa.int64()), ("words", pa.int64()), ("lang", pa.string()),
    ("lang_score", pa.float64()), ("lang_share", pa.float64()), ("quality_score", pa.float64()),
    ("tokens", pa.int64()), ("url", pa.string()), ("boilerplate_chars", pa.int64()),
    ("detail", pa.string()),
    ("pii_spans", pa.list_(pa.struct([("kind", pa.string()), ("start", pa.int64()), ("end", pa.int64())]))),
] + [(f"pii_{k}", pa.int64()) for k in PII_KINDS] + [(c, pa.float64()) for c in SCORE_COLUMNS])
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
PII_SCHEMA = pa.schema([("source", pa.string()), ("outcome", pa.string()), ("kind", pa.string()),
                        ("documents", pa.int64()), ("matches", pa.int64())])
GRID_SCHEMA = pa.schema([("source", pa.string()), ("fate", pa.string()), ("cell", pa.string()),
                         ("documents", pa.int64()), ("tokens", pa.int64()), ("chars", pa.int64())])
GRID_FILE = "filter_grid.parquet"
GRID_SPEC_KEY = b"mtnlg.grid_spec"
"""``stats/filter_grid.parquet`` carries its ``curation.threshold_grid.GridSpec`` as JSON in
the Parquet schema metadata under this key."""
DOCUMENTS_DIR = "stats/documents"


def stats_row(record) -> dict:
    """The per-document stats row of a final outcome: a kept ``(doc, tokens)`` (or kept
    ``Document``), a ``Removal`` or a ``DeadLetter``."""
    if isinstance(record, DeadLetter):
        reason = record.error.split(":", 1)[0][:80] or "error"
        row = {"id": record.location, "source": record.source, "outcome": "dead_letter",
               "stage": "read", "reason": reason, "chars": 0, "words": 0, "lang": None,
               "lang_score": None, "lang_share": None, "quality_score": None, "tokens": None,
               "url": None, "boilerplate_chars": None}
        row.update(_pii_columns(None, None))
        row.update(score_columns(None))
        return row
    detail = None
    if isinstance(record, Removal):
        doc, outcome, stage, reason = record.doc, "removed", record.stage, record.reason
        detail = record.detail or None
    else:
        doc = record[0] if isinstance(record, tuple) else record
        outcome, stage, reason = "kept", "tokenize", None
    row = {"id": doc.id, "source": doc.source, "outcome": outcome, "stage": stage,
           "reason": reason, "chars": len(doc.text), "words": count_words(doc.text),
           "lang": doc.lang, "lang_score": doc.lang_score, "lang_share": doc.lang_share,
           "quality_score": doc.quality_score, "tokens": doc.tokens, "url": doc.url,
           "boilerplate_chars": doc.boilerplate_chars}
    row.update(_pii_columns(doc.pii_spans, detail))
    row.update(score_columns(doc.heuristic_scores))
    return row


def _pii_columns(spans: list[dict] | None, detail: dict | None) -> dict:
    """``detail`` (the removal's, as JSON), ``pii_spans`` and the per-kind match counts (null
    when the pii stage did not run)."""
    out = {"detail": json.dumps(detail, sort_keys=True, ensure_ascii=False, default=str)
           if detail else None,
           "pii_spans": None if spans is None else [
               {"kind": sp["kind"], "start": int(sp["start"]), "end": int(sp["end"])} for sp in spans]}
    for kind in PII_KINDS:
        out[f"pii_{kind}"] = None if spans is None else sum(1 for sp in spans if sp["kind"] == kind)
    return out


class StageOutcomes(beam.PTransform):
    """A stage's final outcomes -> per-document stats rows, ``removed/``, ``dead_letter/`` files
    (all written where they are) and the stage's partial aggregates.

    Input: a dict with any of ``kept`` ((doc, tokens)), ``removed`` (Removal; more producers as
    ``removed1``, ``removed2``, ...), ``dead_letter``
    (DeadLetter), ``read`` ((source, n) per reader work item), ``index`` (extra
    ``id_index_spool.entry`` tuples of the stage) or ``index_spools`` (the same, already spooled
    by the steps that made them: the dedup group rows).  With ``id_index`` the
    stage's rows are indexed by id and URL (``stats/id_index/``).  Output: ``{"descriptors":
    writer descriptors, "aggregates": ((key), n)}``.
    """

    def __init__(self, out_dir: str, stage: str, removed_sample: str | int = "all",
                 label: str | None = None, grid=None, id_index: bool = False) -> None:
        super().__init__(label)
        self.out_dir, self.stage, self.removed_sample = out_dir, stage, removed_sample
        self.grid, self.id_index = grid, id_index

    def expand(self, outcomes: dict):
        dest = f"{DOCUMENTS_DIR}/{self.stage}"
        descriptors, partials, spools = [], [], []
        # ``removed1``, ``removed2``...: more producers of removals, each written where it is
        # (a Flatten of them would pass every removed document through the local runner's driver).
        names = [n for n in ("kept", "removed", "dead_letter") if n in outcomes] + sorted(
            n for n in outcomes if n.startswith("removed") and n != "removed")
        for name in names:
            pcoll = outcomes.get(name)
            if pcoll is None:
                continue
            rows = pcoll | f"{name}Rows" >> beam.ParDo(RowsFn(dest, self.grid)).with_outputs(KEYS, main="rows")
            dest_rows = rows.rows
            if not self.id_index:
                descriptors.append(dest_rows | f"{name}WriteRows" >> beam.ParDo(
                    WriteRowsFn(self.out_dir, "parquet", ROW_SCHEMA)))
            else:
                written = dest_rows | f"{name}WriteRows" >> beam.ParDo(WriteRowsFn(
                    self.out_dir, "parquet", ROW_SCHEMA, index_keys=stats_index_keys, index_producer=name)
                ).with_outputs("index", main="descriptors")
                descriptors.append(written.descriptors)
                spools.append(written.index)
            partials.append(rows[KEYS])  # already one (key, n) per key and bundle: summed once below
        for name in (n for n in names if n.startswith("removed") and outcomes[n] is not None):
            label = "WriteRemoved" + name[len("removed"):]
            written = outcomes[name] | label >> WriteRemoved(
                self.out_dir, self.removed_sample, index=self.id_index)
            if self.id_index:
                written, entries = written
                spools.append(entries)
            descriptors.append(written)
        if self.id_index and outcomes.get("index") is not None:  # a stage's own entries (dedup groups)
            spools.append(outcomes["index"] | "SpoolStageIndex" >> beam.ParDo(SpoolEntriesFn(self.out_dir, "extra")))
        if self.id_index and outcomes.get("index_spools") is not None:  # ... already spooled ("extra")
            spools.append(outcomes["index_spools"])
        if spools:  # one index writer for every producer of the stage
            _ = flatten_small(spools, "AllSpools") | "Index" >> WriteIdIndex(self.out_dir, self.stage)
        if outcomes.get("dead_letter") is not None:
            descriptors.append(outcomes["dead_letter"] | "WriteDeadLetters" >> WriteDeadLetters(self.out_dir))
        if outcomes.get("read") is not None:
            partials.append(outcomes["read"] | "ReadKey" >> beam.MapTuple(lambda s, n: (("read", s), n)))
        path = join(self.out_dir, "stages", self.stage, "aggregates.json")
        aggregates = (flatten_small(partials, "AllPartials")
                      | "SumPartials" >> beam.CombinePerKey(sum)
                      | "ListPartials" >> Gather()
                      | "WritePartials" >> beam.Map(_write_partials, path))
        return {"descriptors": flatten_small(descriptors, "AllDescriptors"), "aggregates": aggregates}


KEYS = "keys"


class RowsFn(beam.DoFn):
    """A stage outcome -> ``(dest, stats_row)``; the rows' aggregate keys (``aggregate_keys``,
    about ten per document) are summed over the bundle and leave at its end on ``keys`` as
    ``(key, n)``: one element per distinct key and bundle instead of one per key and document
    through the runner's combine (what a key sums to does not change)."""

    def __init__(self, dest: str, grid=None) -> None:
        self.dest, self.grid = dest, grid
        self._sums: dict[tuple, int] = {}

    def start_bundle(self) -> None:
        self._sums = {}

    def process(self, record):
        row = stats_row(record)
        sums = self._sums
        for key, n in aggregate_keys(row, self.grid):
            sums[key] = sums.get(key, 0) + n
        yield self.dest, row

    def finish_bundle(self):
        from apache_beam.transforms.window import GlobalWindows

        sums, self._sums = self._sums, {}
        for key, n in sums.items():
            yield beam.pvalue.TaggedOutput(KEYS, GlobalWindows.windowed_value((key, n)))


def stats_index_keys(row: dict) -> list[tuple[str, str, str]]:
    """Index keys of a per-document stats row: its id, and its URL where it has one."""
    keys = [("stats", row["id"], row["id"])]
    if row.get("url"):
        keys.append(("url", row["url"], row["id"]))
    return keys


def _write_partials(items: list, path: str) -> int:
    rows = sorted(([list(k), n] for k, n in items), key=lambda kv: json.dumps(kv[0], default=str))
    write_bytes(path, json.dumps(rows).encode())
    return len(rows)


AGGREGATE_TABLES = {"counts": ("counts.parquet", COUNT_SCHEMA),
                    "histograms": ("histograms.parquet", HIST_SCHEMA),
                    "languages": ("languages.parquet", LANGUAGE_SCHEMA),
                    "read": ("read_counts.parquet", READ_SCHEMA),
                    "pii": ("pii.parquet", PII_SCHEMA)}


def grid_spec_of(cfg):
    """The filter-score grid of a ``CurateConfig`` (``curation.threshold_grid``)."""
    from curation.heuristics import HeuristicsConfig
    from curation.threshold_grid import GridSpec

    return GridSpec.from_config(cfg.language, HeuristicsConfig(**cfg.heuristics), cfg.quality,
                                cfg.skip_sources)


def grid_table_bytes(rows: list[dict], spec) -> bytes:
    """``stats/filter_grid.parquet``: the grid's cells with the spec in the schema metadata."""
    from curation.threshold_grid import spec_json
    from infra.storage.files import parquet_bytes

    return parquet_bytes(rows, GRID_SCHEMA.with_metadata({GRID_SPEC_KEY: spec_json(spec).encode()}))


def read_grid(table: pa.Table):
    """(spec, rows) of a ``stats/filter_grid.parquet`` table; spec None when it has none."""
    from curation.threshold_grid import GridSpec

    meta = table.schema.metadata or {}
    spec = GridSpec.from_json(json.loads(meta[GRID_SPEC_KEY])) if GRID_SPEC_KEY in meta else None
    return spec, table.to_pylist()


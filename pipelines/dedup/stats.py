"""Dedup outputs: ``RUN/dedup/`` group rows and the dedup tables under ``RUN/stats/``.

``group_row`` is the one row shape both dedup stages emit, one per member of a duplicate
cluster (kept member included).  ``WriteDedupOutputs`` writes

  dedup/groups-*.parquet              GROUP_SCHEMA rows (docs/stats-schema.md: dedup/)
  stats/dedup_clusters.parquet        kind, size, clusters         (cluster-size distribution)
  stats/dedup_matrix.parquet          kind, kept_source, removed_source, documents
  stats/dedup_sources.parquet         kind, source, documents, removed, rate (duplicate rate of
                                      the documents that entered that dedup stage)
  stats/dedup_top_clusters.parquet    kind, group, size, kept_source, sample_ids (JSON list)
  stats/dedup_buckets.parquet         band, bucket, size: LSH buckets over dedup.fuzzy.max_bucket
  stats/dedup_components.parquet      round, edges, done: the connected-components trace (edges
                                      each round shuffled, finished-star edges it routed out;
                                      rounds used = rounds with edges > 0)

Every aggregation is a combine (per key or global with a bounded accumulator), so no worker
holds more than one cluster's sample or one key's partial sums.

The curate job's file-backed dedup writes its group rows where a step decides them
(``group_outputs``: the rows of whole clusters, as files, with their id-index entries) and hands
on only per-step partial aggregates; ``WriteDedupStats`` sums those into the same tables.
"""
from __future__ import annotations

import heapq
import json
from collections import Counter

import apache_beam as beam
import pyarrow as pa

from infra.storage.files import join
from pipelines.plumbing.sinks import WriteSmallTable

GROUP_SCHEMA = pa.schema([
    ("kind", pa.string()), ("group", pa.string()), ("id", pa.string()), ("source", pa.string()),
    ("kept", pa.bool_()), ("kept_id", pa.string()), ("kept_source", pa.string()),
    ("cluster_size", pa.int64()), ("reason", pa.string()), ("similarity", pa.float64()),
])
CLUSTER_SCHEMA = pa.schema([("kind", pa.string()), ("size", pa.int64()), ("clusters", pa.int64())])
MATRIX_SCHEMA = pa.schema([("kind", pa.string()), ("kept_source", pa.string()),
                           ("removed_source", pa.string()), ("documents", pa.int64())])
SOURCE_SCHEMA = pa.schema([("kind", pa.string()), ("source", pa.string()), ("documents", pa.int64()),
                           ("removed", pa.int64()), ("rate", pa.float64())])
TOP_SCHEMA = pa.schema([("kind", pa.string()), ("group", pa.string()), ("size", pa.int64()),
                        ("kept_source", pa.string()), ("sample_ids", pa.string())])
BUCKET_SCHEMA = pa.schema([("band", pa.int64()), ("bucket", pa.string()), ("size", pa.int64())])
ROUND_SCHEMA = pa.schema([("round", pa.int64()), ("edges", pa.int64()), ("done", pa.int64())])

KEPT_REASON = "keep_rule"  # the kept member: highest source priority, quality, length, id
OLDER_KEPT_REASON = "older_run"  # the kept member is an older run's document (--dedup-against)
AGAINST_EXACT, AGAINST_FUZZY = "dedup_against/exact", "dedup_against/fuzzy"
"""Removal reasons of a document whose group's survivor is an older run's document."""
TOP_CLUSTERS = 20
SAMPLE_MEMBERS = 5


def group_row(kind: str, group: str, doc_id: str, source: str, kept_id: str, kept_source: str,
              size: int, reason: str, similarity: float | None = None, kept: bool | None = None) -> dict:
    """One member of a duplicate cluster; ``reason`` is KEPT_REASON (or OLDER_KEPT_REASON) for
    the kept member; ``kept`` defaults to ``doc_id == kept_id`` (pass it where an older run's
    document may share an id with one of this run's)."""
    return {"kind": kind, "group": group, "id": doc_id, "source": source,
            "kept": doc_id == kept_id if kept is None else kept, "kept_id": kept_id, "kept_source": kept_source,
            "cluster_size": size, "reason": reason, "similarity": similarity}


class _SampleCluster(beam.CombineFn):
    """Rows of one cluster -> (size, kept_source, smallest SAMPLE_MEMBERS ids): bounded state."""

    def create_accumulator(self):
        return 0, None, []

    def add_input(self, acc, row):
        n, kept_source, ids = acc
        if row["kept"]:
            kept_source = row["source"]
        return n + 1, kept_source, sorted(ids + [row["id"]])[:SAMPLE_MEMBERS]

    def merge_accumulators(self, accs):
        n, kept_source, ids = 0, None, []
        for a_n, a_src, a_ids in accs:
            n, kept_source, ids = n + a_n, kept_source or a_src, sorted(ids + a_ids)[:SAMPLE_MEMBERS]
        return n, kept_source, ids

    def extract_output(self, acc):
        return acc


def _write(pcoll, path: str, schema: pa.Schema, label: str):
    return pcoll | label >> WriteSmallTable(path, schema)


def _write_sources_and_trace(pcolls: dict, gone, stats: str) -> None:
    """The per-source table (``inputs``: documents in; ``gone``: ``((kind, source), (0, n))``
    removed) and the optional oversized-bucket and components-trace tables."""
    seen = pcolls["inputs"] | "SeenKey" >> beam.MapTuple(lambda ks, n: (ks, (n, 0)))
    per_source = ((seen, gone)
                  | "SeenAndGone" >> beam.Flatten()
                  | "SumSources" >> beam.CombinePerKey(lambda vs: tuple(map(sum, zip(*vs))) or (0, 0))
                  | "SourceRow" >> beam.MapTuple(lambda k, v: {
                      "kind": k[0], "source": k[1], "documents": v[0], "removed": v[1],
                      "rate": v[1] / v[0] if v[0] else 0.0}))
    _write(per_source, join(stats, "dedup_sources.parquet"), SOURCE_SCHEMA, "WriteSources")
    if "buckets" in pcolls:
        _write(pcolls["buckets"], join(stats, "dedup_buckets.parquet"), BUCKET_SCHEMA, "WriteBuckets")
    if "rounds" in pcolls:
        _write(pcolls["rounds"], join(stats, "dedup_components.parquet"), ROUND_SCHEMA, "WriteRounds")


class WriteDedupOutputs(beam.PTransform):
    """Write dedup group rows and the dedup stats tables.

    Inputs (a dict): ``groups`` rows from ``group_row``; ``inputs`` ``((kind, source), n)``:
    n documents entering that dedup stage (any number of partial counts per key); optional
    ``buckets`` (oversized LSH buckets) and ``rounds`` (components trace).
    """

    def __init__(self, run_dir: str, label: str | None = None) -> None:
        super().__init__(label)
        self.run_dir = run_dir

    def expand(self, pcolls):
        stats = join(self.run_dir, "stats")
        rows = pcolls["groups"]
        _ = rows | "WriteGroups" >> beam.io.WriteToParquet(
            join(self.run_dir, "dedup", "groups"), GROUP_SCHEMA, file_name_suffix=".parquet")
        clusters = (rows
                    | "ByCluster" >> beam.Map(lambda r: ((r["kind"], r["group"]), r))
                    | "SampleCluster" >> beam.CombinePerKey(_SampleCluster()))
        sizes = (clusters
                 | "SizeKey" >> beam.Map(lambda kv: ((kv[0][0], kv[1][0]), 1))
                 | "CountSizes" >> beam.CombinePerKey(sum)
                 | "SizeRow" >> beam.MapTuple(lambda k, n: {"kind": k[0], "size": k[1], "clusters": n}))
        _write(sizes, join(stats, "dedup_clusters.parquet"), CLUSTER_SCHEMA, "WriteClusters")
        top = (clusters
               | "TopKey" >> beam.Map(lambda kv: (kv[0][0], (kv[1][0], kv[0][1], kv[1][1], kv[1][2])))
               | "Top" >> beam.combiners.Top.LargestPerKey(TOP_CLUSTERS)
               | "TopRows" >> beam.FlatMap(lambda kv: [
                   {"kind": kv[0], "group": g, "size": n, "kept_source": src, "sample_ids": json.dumps(ids)}
                   for n, g, src, ids in kv[1]]))
        _write(top, join(stats, "dedup_top_clusters.parquet"), TOP_SCHEMA, "WriteTop")
        removed = rows | "Removed" >> beam.Filter(lambda r: not r["kept"])
        matrix = (removed
                  | "MatrixKey" >> beam.Map(lambda r: ((r["kind"], r["kept_source"], r["source"]), 1))
                  | "CountMatrix" >> beam.CombinePerKey(sum)
                  | "MatrixRow" >> beam.MapTuple(lambda k, n: {
                      "kind": k[0], "kept_source": k[1], "removed_source": k[2], "documents": n}))
        _write(matrix, join(stats, "dedup_matrix.parquet"), MATRIX_SCHEMA, "WriteMatrix")
        gone = removed | "GoneKey" >> beam.Map(lambda r: ((r["kind"], r["source"]), (0, 1)))
        _write_sources_and_trace(pcolls, gone, stats)
        return rows


GROUP_FILES, INDEX_SPOOLS, PARTIALS = "group_files", "index_spools", "partials"
"""Tagged outputs of a step that decides groups: the group files' writer descriptors, their
id-index spool descriptors, and partial aggregates ``(what, key), value``."""


def group_outputs(rows: list[dict], out_dir: str, id_index: bool):
    """Group rows holding WHOLE clusters (every row of each (kind, group)) -> tagged outputs: the
    rows as one ``dedup/groups-<token>.parquet`` writer file, their id-index entries (``dedup``,
    the row as detail) as one spool, and the partial aggregates ``WriteDedupStats`` sums: cluster
    sizes, the largest clusters, the kept x removed source matrix and the removed per source."""
    from pipelines.plumbing.id_index_spool import EntrySpool, detail_json, entry
    from pipelines.plumbing.sinks import write_table_file

    if not rows:
        return
    yield beam.pvalue.TaggedOutput(GROUP_FILES, write_table_file(
        out_dir, "dedup/groups", pa.Table.from_pylist(rows, schema=GROUP_SCHEMA)))
    if id_index:
        spool = EntrySpool(out_dir, "extra")  # the stage's own entries, as StageOutcomes names them
        for r in rows:
            spool.add(entry("dedup", r["id"], r["id"], None, detail_json(r)))
        yield beam.pvalue.TaggedOutput(INDEX_SPOOLS, spool.close())
    clusters: dict[tuple, tuple] = {}
    counts: Counter = Counter()
    for r in rows:
        key = (r["kind"], r["group"])
        clusters[key] = _SampleCluster().add_input(clusters.get(key, (0, None, [])), r)
        if not r["kept"]:
            counts["matrix", (r["kind"], r["kept_source"], r["source"])] += 1
            counts["gone", (r["kind"], r["source"])] += 1
    top: dict[str, list] = {}
    for (kind, group), (n, kept_source, ids) in clusters.items():
        counts["size", (kind, n)] += 1
        top.setdefault(kind, []).append((n, group, kept_source, ids))
    for kind, items in sorted(top.items()):  # a step's largest: the global largest are among them
        for item in heapq.nlargest(TOP_CLUSTERS, items):
            yield beam.pvalue.TaggedOutput(PARTIALS, (("top", kind), item))
    for key, n in sorted(counts.items()):
        yield beam.pvalue.TaggedOutput(PARTIALS, (key, n))


class WriteDedupStats(beam.PTransform):
    """The dedup stats tables of ``WriteDedupOutputs`` from partial aggregates.

    Inputs (a dict): ``partials`` from ``group_outputs``; ``inputs`` ``((kind, source), n)``;
    optional ``buckets`` and ``rounds`` rows.  The group rows themselves are already files."""

    def __init__(self, run_dir: str, label: str | None = None) -> None:
        super().__init__(label)
        self.run_dir = run_dir

    def expand(self, pcolls):
        stats = join(self.run_dir, "stats")
        partials = pcolls["partials"]
        tops = partials | "Tops" >> beam.Filter(lambda kv: kv[0][0] == "top")
        counts = (partials
                  | "Counts" >> beam.Filter(lambda kv: kv[0][0] != "top")
                  | "SumCounts" >> beam.CombinePerKey(sum))
        sizes = (counts
                 | "Sizes" >> beam.Filter(lambda kv: kv[0][0] == "size")
                 | "SizeRow" >> beam.MapTuple(lambda k, n: {"kind": k[1][0], "size": k[1][1], "clusters": n}))
        _write(sizes, join(stats, "dedup_clusters.parquet"), CLUSTER_SCHEMA, "WriteClusters")
        top = (tops
               | "TopKey" >> beam.MapTuple(lambda k, item: (k[1], item))
               | "Top" >> beam.combiners.Top.LargestPerKey(TOP_CLUSTERS)
               | "TopRows" >> beam.FlatMap(lambda kv: [
                   {"kind": kv[0], "group": g, "size": n, "kept_source": src, "sample_ids": json.dumps(ids)}
                   for n, g, src, ids in kv[1]]))
        _write(top, join(stats, "dedup_top_clusters.parquet"), TOP_SCHEMA, "WriteTop")
        matrix = (counts
                  | "Matrix" >> beam.Filter(lambda kv: kv[0][0] == "matrix")
                  | "MatrixRow" >> beam.MapTuple(lambda k, n: {
                      "kind": k[1][0], "kept_source": k[1][1], "removed_source": k[1][2], "documents": n}))
        _write(matrix, join(stats, "dedup_matrix.parquet"), MATRIX_SCHEMA, "WriteMatrix")
        gone = (counts
                | "Gone" >> beam.Filter(lambda kv: kv[0][0] == "gone")
                | "GoneKey" >> beam.MapTuple(lambda k, n: (k[1], (0, n))))
        _write_sources_and_trace(pcolls, gone, stats)
        return partials

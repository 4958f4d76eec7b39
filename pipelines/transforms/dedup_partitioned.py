"""The curate job's dedup: exact + fuzzy over the parts, file-backed, no per-document shuffle.

``ExactDedup`` / ``FuzzyDedup`` (``pipelines.transforms.dedup`` / ``.fuzzy``) express dedup as
Beam shuffles of one small record per document (and one per band).  On a cluster that is a
shuffle service's job; on the local FnApiRunner every element between steps passes through the
driver process and stays there until its consumer runs, so the driver grew by ~20 KB per
document.  ``PartitionedDedup`` makes the same decisions with the per-document data in files
(``pipelines.transforms.dedup_tables``) and only the rare duplicates' data in Beam:

1. ``PartFeaturesFn`` (per part, where it is read): the part's ``DedupRecord`` s -> its features
   file and its exact (text hash) and band entry files, partitioned by key into ``P`` batches.
   ``--dedup-against``: ``OlderFeaturesFn`` does the same for each older index part.
2. ``ExactPartitionFn`` (per partition): the groups of equal text hashes -> ``keep_best``:
   decisions (keyed by the part holding the document) and group rows.
3. ``BandPartitionFn`` (per partition): the LSH buckets of the exact survivors -> ``bucket_stars``:
   candidate pairs (nodes carry their reference, ``with_ref``) and oversized-bucket rows.
4. ``ShipFromPartFn``: each candidate's verification payload read from its features file, sent
   to its star's centre; ``VerifyStarFn`` -> edges; ``DecideFromEdges`` -> components, decisions.
5. ``ApplyPartFn`` (per part, with its decisions): the part's rows minus the removed ones,
   written as the stage's part column by column (no per-document objects), ``Removal`` s, this
   run's dedup index part (the features of the exact survivors + the decision), fuzzy inputs.

The group logic (``keep_best``, ``star``, ``bucket_stars``, ``VerifyStarFn``, components) is the
record-based transforms' own, so both give the same decisions (tested).  Temporary files live
under ``<out>/_tmp/dedup/`` and go away at commit.
"""
from __future__ import annotations

import uuid
from collections import Counter

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.pvalue import AsDict, AsList, AsSingleton, TaggedOutput

from curation.dedup_records import dedup_records, is_older, node_id, node_ref
from curation.document import STAGES
from curation.exact_dedup import priority_map
from curation.fuzzy_config import FuzzyDedupConfig
from pipelines.storage.files import join
from pipelines.transforms import dedup_tables as tables
from pipelines.transforms import progress
from pipelines.transforms.dedup import DECISIONS, GROUPS, INPUTS, keep_best
from pipelines.transforms.dedup_index import (INDEX_DIR, INDEX_SCHEMA, REDIRECTS, WriteIndexParams,
                                               read_index_part, redirects)
from pipelines.transforms.fuzzy import BUCKETS, CANDIDATES, DecideFromEdges, bucket_stars
from pipelines.transforms.fuzzy_verify import CENTRE, MEMBER, VerifyStarFn
from pipelines.transforms.outputs import REMOVED, count
from pipelines.transforms.parts import PART_SCHEMA, from_row, part_dest, read_columns
from pipelines.transforms.sinks import write_table_file
from pipelines.transforms.survivors import final_decisions
from pipelines.transforms.timing import timed

RECORD_BATCH = 128
"""Documents per ``dedup_records`` call (MinHash is vectorised over a batch)."""
EXACT_REMOVED, INDEX = "exact_removed", "index"


class PartFeaturesFn(beam.DoFn):
    """A part URL -> its features and entry files; yields their descriptor
    ``{key, part, features, exact, bands}``; ``(("exact", source), n)`` to ``inputs``."""

    def __init__(self, out_dir: str, exact: bool, fuzzy: FuzzyDedupConfig | None,
                 priority: list[str] | None) -> None:
        self.out_dir, self.exact, self.fuzzy = out_dir, exact, fuzzy
        self.priority = priority_map(priority)
        self.stage = "fuzzy_dedup" if fuzzy is not None else "exact_dedup"

    def setup(self) -> None:
        if self.fuzzy is not None:
            self.fuzzy.band_layout()  # derive (and cache) the layout once per worker

    def finish_bundle(self) -> None:
        progress.flush()

    @timed()
    def process(self, url: str, partitions: int):
        docs = read_columns(url, ("id", "source", "text", "quality_score"))  # what dedup reads
        count("dedup", "all", "part_documents_read", n=len(docs))
        progress.report(self.out_dir, "dedup", passes=len(docs))
        records = []
        for i in range(0, len(docs), RECORD_BATCH):
            records += dedup_records(docs[i:i + RECORD_BATCH], self.fuzzy, self.priority)
        del docs
        key, token = tables.part_key(url), uuid.uuid4().hex[:16]
        folder = join(self.out_dir, "_tmp", "dedup")
        desc = {"key": key, "part": url, "features": join(folder, f"features-{token}.parquet"),
                "exact": None, "bands": None}
        tables.write_features(desc["features"], tables.features_table(records))
        if self.exact:
            desc["exact"] = join(folder, f"exact-{token}.arrow")
            tables.write_partitioned(desc["exact"], tables.exact_entries(records, key), "text_hash",
                                     partitions)
            for source, n in sorted(Counter(r.source for r in records).items()):
                yield TaggedOutput(INPUTS, (("exact", source), n))
        if self.fuzzy is not None:
            desc["bands"] = join(folder, f"bands-{token}.arrow")
            tables.write_partitioned(desc["bands"], tables.band_entries(records, key), "digest",
                                     partitions)
        yield desc


class OlderFeaturesFn(beam.DoFn):
    """An older run's index part ``(URL, sha256)`` (checked) -> its entry files; the part is
    its own features file.  Older documents enter exact dedup by hash and fuzzy dedup with
    their band keys; they are never removed.  Where the older run removed a document, its link
    to that run's survivor goes to ``redirects`` (``pipelines.transforms.survivors``)."""

    def __init__(self, out_dir: str, exact: bool, fuzzy: bool) -> None:
        self.out_dir, self.exact, self.fuzzy = out_dir, exact, fuzzy

    def process(self, part: tuple[str, str], partitions: int):
        url = part[0]
        table = read_index_part(*part)
        records = tables.older_records_table(table)
        count("dedup_against", "all", "index_records_read", n=len(records))
        for link in redirects(table):
            yield TaggedOutput(REDIRECTS, link)
        key, token = tables.part_key(url), uuid.uuid4().hex[:16]
        folder = join(self.out_dir, "_tmp", "dedup")
        desc = {"key": key, "part": None, "features": url, "exact": None, "bands": None}
        if self.exact:
            desc["exact"] = join(folder, f"older-exact-{token}.arrow")
            tables.write_partitioned(desc["exact"], tables.exact_entries(records, key), "text_hash",
                                     partitions)
        if self.fuzzy:
            desc["bands"] = join(folder, f"older-bands-{token}.arrow")
            tables.write_partitioned(desc["bands"], tables.band_entries(records, key), "digest",
                                     partitions)
        yield desc


def _entry_batches(descriptors: list[dict], kind: str, p: int, drop: dict | None = None) -> list:
    """Batch ``p`` of every ``kind`` entry file; rows listed in ``drop[part key]`` left out."""
    out = []
    for d in descriptors:
        if not d.get(kind):
            continue
        with FileSystems.open(d[kind], compression_type=CompressionTypes.UNCOMPRESSED) as f:
            batch = pa.ipc.open_file(f).get_batch(p)
        gone = (drop or {}).get(d["key"])
        if gone is not None and batch.num_rows:
            batch = batch.filter(pa.array(~np.isin(batch.column("row").to_numpy(), gone)))
        out.append(batch)
    return out


class ExactPartitionFn(beam.DoFn):
    """Partition ``p`` of the exact entries -> ``(part key, Decision)`` (main), group rows
    (``groups``) and ``(part key, row)`` of each removed document (``exact_removed``)."""

    @timed("exact_dedup")
    def process(self, p: int, descriptors: list[dict]):
        t = pa.Table.from_batches(_entry_batches(descriptors, "exact", p), schema=tables.EXACT_SCHEMA)
        h = tables.digest_u64(t.column("text_hash"))
        _, runs = tables.equal_runs(h[:, 1], h[:, 0])
        for text_hash, nodes in tables.runs_nodes(t, runs, "text_hash"):
            refs = {node_id(n): node_ref(n) for n in nodes if not is_older(n)}
            for tag, value in keep_best(text_hash.hex(), [(n, None) for n in nodes]):
                if tag == DECISIONS:
                    key, row = refs[value.id]
                    yield key, value
                    yield TaggedOutput(EXACT_REMOVED, (key, row))
                elif tag == GROUPS:
                    yield TaggedOutput(GROUPS, value)


class BandPartitionFn(beam.DoFn):
    """Partition ``p`` of the band entries, exact duplicates left out -> candidate pairs
    ``(centre, member)`` (main) and oversized buckets (``buckets``)."""

    def __init__(self, max_bucket: int, shards: int) -> None:
        self.max_bucket, self.shards = max_bucket, shards

    @timed("fuzzy_dedup")
    def process(self, p: int, descriptors: list[dict], removed: dict):
        t = pa.Table.from_batches(_entry_batches(descriptors, "bands", p, removed),
                                  schema=tables.BAND_SCHEMA)
        digests = tables.digest_u64(t.column("digest"))[:, 0]
        bands = t.column("band").to_numpy()
        _, runs = tables.equal_runs(bands, digests)
        for rows, (digest, nodes) in zip(runs, tables.runs_nodes(t, runs, "digest")):
            for tag, value in bucket_stars(int(bands[int(rows[0])]), digest, nodes,
                                           self.max_bucket, self.shards):
                yield value if tag == CANDIDATES else TaggedOutput(tag, value)


def _roles(pair: tuple):
    """A candidate pair -> (part key, (row, node, centre)) for its member, (.., None) for its centre."""
    centre, member = pair
    yield node_ref(member)[0], (node_ref(member)[1], member, centre)
    yield node_ref(centre)[0], (node_ref(centre)[1], centre, None)


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


class ShipFromPartFn(beam.DoFn):
    """(part key, roles) -> each candidate's payload (shingle hashes or signature, read from the
    part's features file) to its centres, ``(centre, (MEMBER | CENTRE, node, payload))``: what
    ``fuzzy_verify``'s join ships, from the files instead of a join of every document."""

    def __init__(self, verify: str) -> None:
        self.column = "shingles" if verify == "exact" else "signature"

    def process(self, element, features: dict):
        key, roles = element
        by_row: dict[int, list] = {}
        for row, node, centre in roles:
            entry = by_row.setdefault(row, [node, set(), False])
            if centre is None:
                entry[2] = True
            else:
                entry[1].add(centre)
        payloads = read_rows(features[key], sorted(by_row), self.column)
        for row, (node, centres, is_centre) in sorted(by_row.items()):
            payload = payloads[row]
            if payload is None:
                continue
            for c in centres:
                yield c, (MEMBER, node, payload)
            if is_centre:
                yield node, (CENTRE, node, payload)


class ApplyPartFn(beam.DoFn):
    """(part key, [("part", descriptor) | ("decision", Decision)]) -> the part's documents not
    removed, written as this stage's part straight from the input's columns (main: the part's
    writer descriptor), a ``Removal`` per removed one (``removed``), this run's dedup index part
    (``index``: a writer descriptor) and ``(("fuzzy", source), n)`` (``inputs``).  Fails if a
    decision meets no document of its part: nothing may be lost silently."""

    def __init__(self, out_dir: str, kept_stages: tuple[str, ...], fuzzy: bool) -> None:
        self.out_dir, self.kept_stages, self.fuzzy = out_dir, tuple(kept_stages), fuzzy

    def process(self, element):
        key, values = element
        desc, pending = None, {}
        for kind, v in values:
            if kind == "part":
                desc = v
            else:  # stages apply in pipeline order: a document removed twice goes at the earlier
                old = pending.get(v.id)
                if old is None or (STAGES.index(v.stage), v.reason) < (STAGES.index(old.stage), old.reason):
                    pending[v.id] = v
        if desc is None:
            raise ValueError(f"{len(pending)} decision(s) for a part that was never read "
                             f"(0: the decision names an id that was never read): {sorted(pending)[:3]}")
        decided = dict(pending)
        table = _read_table(desc["part"])
        ids, sources = table.column("id").to_pylist(), table.column("source").to_pylist()
        removed = np.array([i in decided for i in ids], dtype=bool)
        for row in np.flatnonzero(removed):  # only the removed become documents
            doc = from_row(table.slice(int(row), 1).to_pylist()[0])
            yield TaggedOutput(REMOVED, pending.pop(doc.id).removal(doc))
        if pending:
            raise RuntimeError(f"{len(pending)} decision(s) for documents not in part {desc['part']}: "
                               f"{sorted(pending)[:3]}")
        passed: Counter = Counter()
        for i, source in zip(ids, sources):
            d = decided.get(i)
            for stage in self.kept_stages:
                if d is not None and stage == d.stage:
                    break
                passed[stage, source] += 1
        for (stage, source), n in sorted(passed.items()):
            count(stage, source, "kept", n=n)
        kept = table.filter(pa.array(~removed))
        progress.report(self.out_dir, "dedup", passes=len(ids), out=kept.num_rows)
        if kept.num_rows:
            yield write_table_file(self.out_dir, part_dest("dedup"), kept.cast(PART_SCHEMA), row_group=500)
        yield from self._index(desc, decided)

    def finish_bundle(self) -> None:
        progress.flush()

    def _index(self, desc: dict, decided: dict):
        """The index rows of the documents that entered fuzzy dedup (every exact survivor)."""
        features = _read_table(desc["features"])
        ids, sources = features.column("id").to_pylist(), features.column("source").to_pylist()
        member = np.array([decided.get(i) is None or decided[i].stage != "exact_dedup" for i in ids],
                          dtype=bool)
        if self.fuzzy:
            no_bands = features.column("band_keys").is_null().to_numpy(zero_copy_only=False)
            for source, n in sorted(Counter(s for s, m in zip(sources, member) if m).items()):
                yield TaggedOutput(INPUTS, (("fuzzy", source), n))
            for s, m, nb in zip(sources, member, no_bands):
                if m and nb:
                    count("fuzzy_dedup", s, "too_few_shingles")
        kept = features.filter(pa.array(member))
        fuzzy = [decided.get(i) for i, m in zip(ids, member) if m]
        kept = (kept.append_column("dedup_kept", pa.array([d is None for d in fuzzy], pa.bool_()))
                .append_column("kept_id", pa.array([d and d.detail.get("kept") for d in fuzzy], pa.string()))
                .append_column("kept_source", pa.array([d and d.detail.get("kept_source") for d in fuzzy],
                                                       pa.string())))
        if kept.num_rows:
            yield TaggedOutput(INDEX, write_table_file(self.out_dir, f"{INDEX_DIR}/part",
                                                       kept.cast(INDEX_SCHEMA), row_group=2000))


def _read_table(url: str) -> pa.Table:
    with FileSystems.open(url, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        return pq.read_table(f)


class PartitionedDedup(beam.PTransform):
    """Part URLs -> ``{"parts": this stage's part descriptors, "removed": Removals, "index":
    index part descriptors, "groups", "inputs", "buckets", "rounds"}`` (module docstring).

    ``older``: ``(URL, sha256)`` of every older run's index part (``--dedup-against``);
    ``older_documents``: their rows, to size the partitions.  Removals are counted where they
    are decided; ``kept`` counters per dedup step as ``ApplyDecisions``."""

    def __init__(self, out_dir: str, exact: bool, fuzzy: FuzzyDedupConfig | None,
                 priority: list[str] | None = None, older: list[tuple[str, str]] = (),
                 older_documents: int = 0, part_rows: int = 2000, label: str | None = None) -> None:
        super().__init__(label)
        self.out_dir, self.exact = out_dir, exact
        self.fuzzy = fuzzy if fuzzy is not None and fuzzy.enabled else None  # checked on load
        self.priority, self.older = priority, list(older)
        self.older_documents, self.part_rows = older_documents, part_rows

    def expand(self, urls):
        c, out_dir = self.fuzzy, self.out_dir
        extra, part_rows = self.older_documents, self.part_rows
        n_parts = (urls | "CountParts" >> beam.combiners.Count.Globally()
                   | "Partitions" >> beam.Map(lambda n: tables.partitions_for(n * part_rows + extra)))
        partitions = AsSingleton(n_parts)
        own = (urls
               | "SpreadParts" >> beam.Reshuffle()
               | "Features" >> beam.ParDo(PartFeaturesFn(out_dir, self.exact, c, self.priority), partitions)
               .with_outputs(INPUTS, main="descriptors"))
        descriptors, inputs, older_links = own.descriptors, [own[INPUTS]], None
        if self.older:
            older = (urls.pipeline
                     | "OlderParts" >> beam.Create(self.older)
                     | "SpreadOlder" >> beam.Reshuffle()
                     | "OlderFeatures" >> beam.ParDo(OlderFeaturesFn(out_dir, self.exact, c is not None),
                                                     partitions).with_outputs(REDIRECTS, main="descriptors"))
            older_links = older[REDIRECTS]
            descriptors = (descriptors, older.descriptors) | "AllFeatures" >> beam.Flatten()
        each = (n_parts
                | "PartitionIds" >> beam.FlatMap(lambda n: range(n))
                | "SpreadPartitions" >> beam.Reshuffle())
        listed = AsList(descriptors)
        decisions, groups, empty = {}, [], urls.pipeline | "NoRemovals" >> beam.Create([])
        removed_rows = empty
        if self.exact:
            ex = each | "Exact" >> beam.ParDo(ExactPartitionFn(), listed).with_outputs(
                GROUPS, EXACT_REMOVED, main="decisions")
            decisions["exact"] = ex.decisions
            groups.append(ex[GROUPS])
            removed_rows = ex[EXACT_REMOVED]
        buckets = rounds = None
        if c is not None:
            removed = (removed_rows
                       | "RemovedByPart" >> beam.GroupByKey()
                       | "RemovedRows" >> beam.MapTuple(lambda k, rows: (k, np.array(sorted(rows), np.int32))))
            stars = each | "Buckets" >> beam.ParDo(BandPartitionFn(c.max_bucket, c.bucket_shards),
                                                   listed, AsDict(removed)).with_outputs(BUCKETS, main="pairs")
            buckets = stars[BUCKETS]
            if c.verify == "none":
                edges = stars.pairs | "Unverified" >> beam.Map(lambda e: (e[0], e[1], None))
            else:
                features = AsDict(descriptors | "FeaturesByKey" >> beam.Map(lambda d: (d["key"], d["features"])))
                edges = (stars.pairs
                         | "Roles" >> beam.FlatMap(_roles)
                         | "ByPart" >> beam.GroupByKey()
                         | "Ship" >> beam.ParDo(ShipFromPartFn(c.verify), features)
                         | "GroupByCentre" >> beam.GroupByKey()
                         | "VerifyStars" >> beam.ParDo(VerifyStarFn(c.verify, c.threshold)))
            fz = edges | "FromEdges" >> DecideFromEdges(c.max_rounds, keyed=True)
            decisions["fuzzy"] = fz[DECISIONS]
            groups.append(fz[GROUPS])
            rounds = fz["rounds"]
        kept_stages = tuple(s for s, on in (("exact_dedup", self.exact), ("fuzzy_dedup", c is not None)) if on)
        parts = (own.descriptors
                 | "PartByKey" >> beam.Map(lambda d: (d["key"], ("part", d))))
        # Removals name the document that survives both steps (and the older runs' own dedup).
        decided = final_decisions(**decisions, older_links=older_links, keyed=True)
        keyed = [decided | "DecisionByPart" >> beam.MapTuple(lambda k, x: (k, ("decision", x)))] if decisions else []
        applied = ((parts, *keyed)
                   | "WithDecisions" >> beam.Flatten()
                   | "GroupByPart" >> beam.GroupByKey()
                   | "Apply" >> beam.ParDo(ApplyPartFn(out_dir, kept_stages, c is not None))
                   .with_outputs(REMOVED, INDEX, INPUTS, main="parts"))
        inputs.append(applied[INPUTS])
        index = applied[INDEX]
        _ = index | "IndexParams" >> WriteIndexParams(out_dir, self._params())
        return {"parts": applied.parts, "removed": applied[REMOVED], "index": index,
                "groups": groups, "inputs": inputs, "buckets": buckets, "rounds": rounds}

    def _params(self) -> dict:
        from pipelines.transforms.dedup_index import index_parameters

        return index_parameters(self.exact, self.fuzzy)

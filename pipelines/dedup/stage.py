"""The curate job's dedup stage: exact + fuzzy over the parts, file-backed, no per-document shuffle.

Dedup could be Beam shuffles of one small record per document (and one per band), as the
record-based reference the tests check this stage against does (tests/pipelines/dedup/
reference.py).  On a cluster that is a shuffle service's job; on the local FnApiRunner every
element between steps passes through the driver process and stays there until its consumer
runs, so the driver grew with the corpus (bench/RESULTS.md, "Scale").  ``PartitionedDedup``
makes the same decisions with every per-document and per-duplicate record in files; only file
descriptors (O(parts + partitions) per step) and small partial counts go through Beam:

1. ``PartFeaturesFn`` (per part, where it is read): the part's ``DedupRecord`` s -> its features
   file and its exact (text hash) and band entry files, partitioned by key into ``P`` batches
   (``tables``).  ``--dedup-against``: ``OlderFeaturesFn`` does the same for each older
   index part, and spills the older runs' own removals as survivor links.
2. Partition steps, one task per partition ``p`` of ``P``, each reading partition ``p`` of the
   files of the steps before it and writing one ``spill`` file split by the next step's key
   (``steps``, ``components``, ``decide``; what each group decides: ``groups``): Exact
   (``keep_best`` per text hash) -> Buckets (``bucket_stars`` per band key, exact duplicates
   left out) -> Ship (payloads from the features files, by part) -> Verify (``verify_star`` per
   star) -> Components (large-star / small-star rounds) -> Labels -> Clusters (group rows, fuzzy
   decisions) -> Follow (decisions naming final survivors).  Steps that decide groups write the
   group rows and their id-index entries as files and pass on partial stats
   (``stats.group_outputs``).
3. ``ApplyPartFn`` (per part, ``apply``): the part's own final decisions -> the part's rows
   minus the removed ones, written column by column, ``Removal`` s, this run's dedup index part
   (the features of the exact survivors + the decision), fuzzy inputs; every decision is
   checked to have met its part.

Both this stage and the reference decide with ``groups``, so both give the same decisions (tested).
Temporary files live under ``<out>/_tmp/dedup/`` and go away at commit.
"""
from __future__ import annotations

import uuid
from collections import Counter

import apache_beam as beam
from apache_beam.pvalue import AsList, AsSingleton, TaggedOutput

from curation.dedup_records import dedup_records
from curation.exact_dedup import priority_map
from curation.fuzzy_config import FuzzyDedupConfig
from infra.storage.files import join
from pipelines.dedup import tables
from pipelines.plumbing import progress
from pipelines.dedup.components import FileComponents, count_round, round_rows
from pipelines.dedup.groups import BUCKETS, INPUTS
from pipelines.dedup.apply import APPLIED, INDEX, ApplyPartFn, check_applied
from pipelines.dedup.decide import DECIDED, ClusterStepFn, FollowStepFn, LabelStepFn
from pipelines.dedup.index import WriteIndexParams, read_index_part, redirects
from pipelines.dedup.stats import GROUP_FILES, INDEX_SPOOLS, PARTIALS
from pipelines.dedup.steps import (BandStepFn, ExactStepFn, ShipStepFn, VerifyStepFn,
                                              key_partition)
from pipelines.plumbing.outputs import REMOVED, count
from pipelines.plumbing.parts import read_columns
from pipelines.plumbing.sinks import Gather, flatten_small
from pipelines.plumbing.spill import Spiller, spill_url
from pipelines.plumbing.timing import timed

RECORD_BATCH = 128
"""Documents per ``dedup_records`` call (MinHash is vectorised over a batch)."""
GROUP_OUTPUTS = (GROUP_FILES, INDEX_SPOOLS, PARTIALS)


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
    to that run's survivor goes to the descriptor's ``links`` spill (``decide.FollowStepFn``)."""

    def __init__(self, out_dir: str, exact: bool, fuzzy: bool) -> None:
        self.out_dir, self.exact, self.fuzzy = out_dir, exact, fuzzy

    def process(self, part: tuple[str, str], partitions: int):
        url = part[0]
        table = read_index_part(*part)
        records = tables.older_records_table(table)
        count("dedup_against", "all", "index_records_read", n=len(records))
        key, token = tables.part_key(url), uuid.uuid4().hex[:16]
        folder = join(self.out_dir, "_tmp", "dedup")
        links = Spiller(partitions, lambda kl: key_partition(kl[0], partitions)).extend(redirects(table))
        desc = {"key": key, "part": None, "features": url, "exact": None, "bands": None,
                "links": links.write(spill_url(self.out_dir, "older-links"))}
        if self.exact:
            desc["exact"] = join(folder, f"older-exact-{token}.arrow")
            tables.write_partitioned(desc["exact"], tables.exact_entries(records, key), "text_hash",
                                     partitions)
        if self.fuzzy:
            desc["bands"] = join(folder, f"older-bands-{token}.arrow")
            tables.write_partitioned(desc["bands"], tables.band_entries(records, key), "digest",
                                     partitions)
        yield desc


class PartitionedDedup(beam.PTransform):
    """Part URLs -> ``{"parts": this stage's part descriptors, "removed": Removals, "index":
    index part descriptors, "group_files": group file descriptors, "index_spools": their
    id-index spools, "partials": partial dedup stats, "inputs", "buckets", "rounds"}`` (the
    last five for ``stats.WriteDedupStats``; module docstring).

    ``older``: ``(URL, sha256)`` of every older run's index part (``--dedup-against``);
    ``older_documents``: their rows, to size the partitions; ``id_index``: also write the group
    rows' id-index entries.  Removals are counted where they are decided, the ``kept`` counters
    of each dedup step where the decisions meet the parts (``apply.ApplyPartFn``)."""

    def __init__(self, out_dir: str, exact: bool, fuzzy: FuzzyDedupConfig | None,
                 priority: list[str] | None = None, older: list[tuple[str, str]] = (),
                 older_documents: int = 0, part_rows: int = 2000, id_index: bool = False,
                 label: str | None = None) -> None:
        super().__init__(label)
        self.out_dir, self.exact = out_dir, exact
        self.fuzzy = fuzzy if fuzzy is not None and fuzzy.enabled else None  # checked on load
        self.priority, self.older = priority, list(older)
        self.older_documents, self.part_rows, self.id_index = older_documents, part_rows, id_index

    def expand(self, urls):
        c, out_dir, p = self.fuzzy, self.out_dir, urls.pipeline
        extra, part_rows = self.older_documents, self.part_rows
        n_parts = (urls | "CountParts" >> Gather()
                   | "Partitions" >> beam.Map(lambda us: tables.partitions_for(len(us) * part_rows + extra)))
        partitions = AsSingleton(n_parts)
        own = (urls
               | "SpreadParts" >> beam.Reshuffle()
               | "Features" >> beam.ParDo(PartFeaturesFn(out_dir, self.exact, c, self.priority), partitions)
               .with_outputs(INPUTS, main="descriptors"))
        descriptors, inputs, links = own.descriptors, [own[INPUTS]], []
        if self.older:
            older = (p
                     | "OlderParts" >> beam.Create(self.older, reshuffle=False)  # SpreadOlder spreads them
                     | "SpreadOlder" >> beam.Reshuffle()
                     | "OlderFeatures" >> beam.ParDo(OlderFeaturesFn(out_dir, self.exact, c is not None),
                                                     partitions))
            links = [AsList(older)]
            descriptors = (descriptors, older) | "AllFeatures" >> beam.Flatten()
        each = (n_parts
                | "PartitionIds" >> beam.FlatMap(lambda n: range(n))
                | "SpreadPartitions" >> beam.Reshuffle())
        listed = AsList(descriptors)
        out = {k: [] for k in GROUP_OUTPUTS}
        exact = fuzzy = buckets = rounds = None
        if self.exact:
            exact = each | "Exact" >> beam.ParDo(ExactStepFn(out_dir, self.id_index), partitions, listed
                                                 ).with_outputs(*GROUP_OUTPUTS, main="spills")
            for k in GROUP_OUTPUTS:
                out[k].append(exact[k])
        if c is not None:
            removed = AsList(exact.spills) if exact is not None else AsList(p | "NoExact" >> beam.Create([]))
            band = each | "Buckets" >> beam.ParDo(
                BandStepFn(out_dir, c.max_bucket, c.bucket_shards, c.verify), partitions, listed, removed
            ).with_outputs(BUCKETS, main="spills")
            buckets, first = band[BUCKETS], band.spills
            if c.verify != "none":
                ship = each | "Ship" >> beam.ParDo(ShipStepFn(out_dir, c.verify), partitions,
                                                   AsList(band.spills), listed)
                first = each | "Verify" >> beam.ParDo(
                    VerifyStepFn(out_dir, c.verify, c.threshold), partitions, AsList(ship))
            cc = first | "Components" >> FileComponents(out_dir, each, partitions, c.max_rounds)
            rounds = (round_rows(cc["tallies"], c.max_rounds, "RoundTrace")
                      | "CountRoundsUsed" >> beam.Map(count_round))
            # One side input per labelling step, not a Flatten: on the local runner a Flatten's
            # watermark waits for every consumer of the steps' shared input (``each``), this
            # step included, and the job would never finish.
            labelled = each | "Labels" >> beam.ParDo(
                LabelStepFn(out_dir), partitions, AsList(first), *(AsList(x) for x in cc["labels"]))
            clusters = each | "Clusters" >> beam.ParDo(
                ClusterStepFn(out_dir, self.id_index), partitions, AsList(labelled)
            ).with_outputs(*GROUP_OUTPUTS, main="spills")
            for k in GROUP_OUTPUTS:
                out[k].append(clusters[k])
            fuzzy = each | "FollowFuzzy" >> beam.ParDo(
                FollowStepFn(out_dir, emit_links=exact is not None), partitions, AsList(clusters.spills),
                *links).with_outputs(DECIDED, main="spills")
        follows = [fuzzy] if fuzzy is not None else []
        if exact is not None:
            onward = links + ([AsList(fuzzy.spills)] if fuzzy is not None else [])
            follows.append(each | "FollowExact" >> beam.ParDo(
                FollowStepFn(out_dir, emit_links=False), partitions, AsList(exact.spills), *onward
            ).with_outputs(DECIDED, main="spills"))
        finals = flatten_small([f.spills for f in follows], "AllFinal")
        kept_stages = tuple(s for s, on in (("exact_dedup", self.exact), ("fuzzy_dedup", c is not None)) if on)
        applied = (own.descriptors
                   | "Apply" >> beam.ParDo(ApplyPartFn(out_dir, kept_stages, c is not None), partitions,
                                           AsList(finals)).with_outputs(REMOVED, INDEX, INPUTS, APPLIED, main="parts"))
        _ = ((*(f[DECIDED] for f in follows), applied[APPLIED])
             | "DecisionsAndApplied" >> beam.Flatten()
             | "SumApplied" >> beam.CombinePerKey(sum)
             | "ListApplied" >> Gather()
             | "CheckApplied" >> beam.Map(check_applied))
        inputs.append(applied[INPUTS])
        index = applied[INDEX]
        _ = index | "IndexParams" >> WriteIndexParams(out_dir, self._params())
        return {"parts": applied.parts, "removed": applied[REMOVED], "index": index, **out,
                "inputs": inputs, "buckets": buckets, "rounds": rounds}

    def _params(self) -> dict:
        from pipelines.dedup.index import index_parameters

        return index_parameters(self.exact, self.fuzzy)

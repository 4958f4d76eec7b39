"""The reference the tests check the dedup stage against: exact and fuzzy dedup as Beam
shuffles of one small record per document (and one per band), with the stage's own group logic
(``pipelines.dedup.groups``).  Not used by the curate job.

The stage (``pipelines.dedup.stage.PartitionedDedup``) makes the same decisions with every
per-document record in files; here each step is a GroupByKey, which is what a shuffle service
does on a cluster and what the tests compare with.  Records are
``curation.dedup_records.DedupRecord`` s; nothing here reads text.

- ``DedupRecords``: documents -> records (one ParDo over batches, no shuffle).
- ``ExactDedup``: records keyed by text hash, grouped, ``keep_best`` per group -> decisions,
  group rows, and the survivors' (node, band keys) as ``kept`` (fuzzy dedup's members).
- ``FuzzyDedup``: (band key, node) grouped by band key -> ``bucket_stars`` (an oversized bucket
  streamed out under salted sub-keys, each sub-bucket starred, the centres starred in a second
  small group) -> ``VerifyCandidates`` -> ``ConnectedComponents`` -> decisions
  (``label_decision``) and group rows (``ClusterRows``).
- ``final_decisions``: the decisions naming final survivors (``follow``: one join per step).

With ``--dedup-against`` the older runs' index records join every step (key ``older``) as
members that always win and are never removed.
"""
from __future__ import annotations

import itertools
from typing import Iterable

import apache_beam as beam

from curation.dedup_records import DedupRecord, dedup_records, node_source, verification_payload
from curation.document import Document
from curation.exact_dedup import priority_map
from curation.fuzzy_config import FuzzyDedupConfig
from pipelines.dedup.components import count_round
from pipelines.dedup.groups import (BUCKETS, CENTRE, DECISIONS, GROUPS, INPUTS, KEPT, MEMBER,
                                    cluster_rows, followed, keep_best, label_decision, link_of,
                                    named_key, salt, star, verify_star)
from pipelines.plumbing.outputs import count
from pipelines.plumbing.sinks import flatten_small
from pipelines.plumbing.timing import timed
from dedup_reference_components import ConnectedComponents

OVERSIZED, CENTRES = "oversized", "centres"


# -- records and exact dedup ---------------------------------------------------------------------
class DedupRecordsFn(beam.DoFn):
    """A batch of documents -> their ``DedupRecord`` s (MinHash vectorised over the batch)."""

    def __init__(self, fuzzy: FuzzyDedupConfig | None, priority: dict[str, int] | None) -> None:
        self.fuzzy, self.priority = fuzzy, priority
        self.stage = "fuzzy_dedup" if fuzzy is not None and fuzzy.enabled else "exact_dedup"

    @timed()
    def process(self, docs: list[Document]):
        yield from dedup_records(docs, self.fuzzy, self.priority)


class DedupRecords(beam.PTransform):
    """docs -> ``DedupRecord`` per document (``fuzzy`` None or disabled: exact fields only)."""

    def __init__(self, fuzzy: FuzzyDedupConfig | None = None, priority: list[str] | None = None,
                 label: str | None = None) -> None:
        super().__init__(label)
        self.fuzzy, self.priority = fuzzy, priority_map(priority)

    def expand(self, docs):
        return (docs
                | "Batch" >> beam.BatchElements(min_batch_size=8, max_batch_size=128)
                | "Records" >> beam.ParDo(DedupRecordsFn(self.fuzzy, self.priority)))


class KeepBestFn(beam.DoFn):
    """(hash, [(node, bands)]) -> the best member's (node, bands); ``keep_best``'s decisions and
    group rows to the tagged outputs."""

    def process(self, element: tuple[bytes, Iterable[tuple]]):
        key, members = element
        for tag, value in keep_best(key.hex(), members):
            yield value if tag == KEPT else beam.pvalue.TaggedOutput(tag, value)


class ExactDedup(beam.PTransform):
    """records (or ``{"records", "older"}``) -> ``{"decisions", "kept", "groups", "inputs"}``;
    ``inputs``: ``(("exact", source), 1)`` per record (the dedup stats' denominators)."""

    def expand(self, pcolls):
        records, older = (pcolls["records"], pcolls.get("older")) if isinstance(pcolls, dict) \
            else (pcolls, None)
        keyed = records | "KeyByTextHash" >> beam.Map(lambda r: (r.text_hash, (r.node, r.bands)))
        if older is not None:  # only the hash and node: older survivors reach fuzzy from the index
            old = older | "KeyOlderByTextHash" >> beam.Map(lambda r: (r.text_hash, (r.node, None)))
            keyed = (keyed, old) | "WithOlder" >> beam.Flatten()
        out = (
            keyed
            | "GroupByHash" >> beam.GroupByKey()
            | "KeepBest" >> beam.ParDo(KeepBestFn()).with_outputs(DECISIONS, GROUPS, main="kept")
        )
        inputs = records | "InputSources" >> beam.Map(_input_source("exact"))
        return {"kept": out.kept, DECISIONS: out[DECISIONS], GROUPS: out[GROUPS], INPUTS: inputs}


def _input_source(kind: str):
    def source(record: DedupRecord) -> tuple[tuple[str, str], int]:
        return (kind, record.source), 1
    return source


# -- fuzzy dedup ----------------------------------------------------------------------------------
def band_elements(member: tuple):
    """(node, band keys) -> ((band, digest), node) per band; None band keys: counted, skipped."""
    node, bands = member
    if bands is None:
        count("fuzzy_dedup", node_source(node), "too_few_shingles")
        return
    for key in bands:
        yield key, node


class BucketStarFn(beam.DoFn):
    """A bucket -> star candidates; an oversized bucket -> its members under salted sub-keys
    (streamed: never more than ``max_bucket`` held)."""

    def __init__(self, max_bucket: int, shards: int) -> None:
        self.max_bucket, self.shards = max_bucket, shards

    def process(self, element):
        (band, digest), members = element
        it = iter(members)
        held = list(itertools.islice(it, self.max_bucket + 1))
        if len(held) <= self.max_bucket:
            yield from star(held)
            return
        size = 0
        for node in itertools.chain(held, it):
            size += 1
            yield beam.pvalue.TaggedOutput(OVERSIZED, ((band, digest, salt(node, self.shards)), node))
        count("fuzzy_dedup", "all", "oversized_bucket")
        yield beam.pvalue.TaggedOutput(BUCKETS, {"band": band, "bucket": digest.hex(), "size": size})


class SubBucketStarFn(beam.DoFn):
    """A salted sub-bucket -> star candidates, and its centre to ``centres`` keyed by the bucket."""

    def process(self, element):
        (band, digest, _), members = element
        members = list(members)
        yield from star(members)
        yield beam.pvalue.TaggedOutput(CENTRES, ((band, digest), min(members)))


class FuzzyDedup(beam.PTransform):
    """records -> ``{"decisions", "groups", "inputs", "buckets", "rounds", "edges"}``.

    Input: a PCollection of ``DedupRecord`` (all of them enter fuzzy dedup), or a dict
    ``{"records": ..., "members": ..., "older": ...}`` where ``members`` are the (node, band
    keys) of the documents that enter (e.g. ``ExactDedup``'s ``kept``), ``records`` supply the
    features for verification (a superset is fine) and ``older`` (optional) are older runs'
    index records, all of which enter.  ``edges``: verified (centre, member, similarity).
    """

    def __init__(self, cfg: FuzzyDedupConfig, label: str | None = None) -> None:
        super().__init__(label)
        self.cfg = cfg

    def expand(self, pcolls):
        c = self.cfg
        if isinstance(pcolls, dict):
            records, members, older = pcolls["records"], pcolls.get("members"), pcolls.get("older")
        else:
            records, members, older = pcolls, None, None
        if members is None:
            members = records | "Members" >> beam.Map(lambda r: (r.node, r.bands))
        banded = members | "BandKeys" >> beam.FlatMap(band_elements)
        if older is not None:
            old = older | "OlderBandKeys" >> beam.FlatMap(lambda r: band_elements((r.node, r.bands)))
            banded = (banded, old) | "WithOlder" >> beam.Flatten()
        buckets = (
            banded
            | "GroupBuckets" >> beam.GroupByKey()
            | "BucketStars" >> beam.ParDo(BucketStarFn(c.max_bucket, c.bucket_shards))
            .with_outputs(OVERSIZED, BUCKETS, main="candidates")
        )
        sub = (buckets[OVERSIZED]
               | "GroupSubBuckets" >> beam.GroupByKey()
               | "SubBucketStars" >> beam.ParDo(SubBucketStarFn()).with_outputs(CENTRES, main="candidates"))
        centre_pairs = (sub[CENTRES]
                        | "GroupCentres" >> beam.GroupByKey()
                        | "CentreStars" >> beam.FlatMap(lambda kv: star(kv[1])))
        candidates = (buckets.candidates, sub.candidates, centre_pairs) | "AllCandidates" >> beam.Flatten()
        if c.verify == "none":
            edges = candidates | "Unverified" >> beam.Map(lambda e: (e[0], e[1], None))
        else:
            inputs = {"records": records, "candidates": candidates}
            if older is not None:
                inputs["older"] = older
            edges = inputs | "Verify" >> VerifyCandidates(c.verify, c.threshold)
        cc = (edges
              | "Pairs" >> beam.Map(lambda e: (e[0], e[1]))
              | "Components" >> ConnectedComponents(c.max_rounds, round_counts=True))
        labels = cc["labels"]
        inputs = members | "InputSources" >> beam.Map(lambda m: (("fuzzy", node_source(m[0])), 1))
        return {DECISIONS: labels | "Decide" >> beam.FlatMap(label_decision),
                GROUPS: {"labels": labels, "edges": edges} | "GroupRows" >> ClusterRows(),
                INPUTS: inputs, BUCKETS: buckets[BUCKETS], "edges": edges,
                "rounds": cc["rounds"] | "CountRoundsUsed" >> beam.Map(count_round)}


# -- verification: each document's features joined to the pairs it is part of ---------------------
def _features(verify: str):
    def features(record: DedupRecord):
        payload = verification_payload(record, verify)
        if record.bands is not None and payload is not None:
            yield record.node, (record.node, payload)
    return features


def _roles(pair: tuple):
    centre, member = pair
    yield member, centre  # member of that centre
    yield centre, None  # a centre


def _ship(element):
    """(node, {"features": [(node, payload)], "roles": [centre | None]}) -> messages to centres:
    a member ships its features once to each distinct centre, a centre to itself."""
    _, grouped = element
    features = list(grouped["features"]) or list(grouped.get("older_features") or [])
    if not features:
        return
    node, payload = features[0]
    centres, is_centre = set(), False
    for role in grouped["roles"]:
        if role is None:
            is_centre = True
        else:
            centres.add(role)
    for c in centres:
        yield c, (MEMBER, node, payload)
    if is_centre:
        yield node, (CENTRE, node, payload)


class VerifyCandidates(beam.PTransform):
    """``{"records", "candidates": (centre node, member node)}`` -> (centre, member, similarity);
    optional ``older``: older runs' records (their features too).  Keyed by node, not id: an
    older run's document may carry the same id as one of this run's."""

    def __init__(self, verify: str, threshold: float, label: str | None = None) -> None:
        super().__init__(label)
        if verify not in ("exact", "estimated"):
            raise ValueError(f"verify: 'exact' or 'estimated', got {verify!r}")
        self.verify, self.threshold = verify, threshold

    def expand(self, pcolls):
        features = pcolls["records"] | "Features" >> beam.FlatMap(_features(self.verify))
        roles = pcolls["candidates"] | "Roles" >> beam.FlatMap(_roles)
        joined = {"features": features, "roles": roles}
        if pcolls.get("older") is not None:
            joined["older_features"] = pcolls["older"] | "OlderFeatures" >> beam.FlatMap(
                _features(self.verify))
        verify, threshold = self.verify, self.threshold
        return (
            joined
            | "JoinFeatures" >> beam.CoGroupByKey()
            | "ShipToCentres" >> beam.FlatMap(_ship)
            | "GroupByCentre" >> beam.GroupByKey()
            | "VerifyStars" >> beam.FlatMap(lambda kv: verify_star(list(kv[1]), verify, threshold)))


# -- group rows per cluster ------------------------------------------------------------------------
def _best(similarities) -> float:
    return max(similarities, default=-1.0)


def _by_root(element):
    """(node, {"root": [root], "sim": [best]}) -> (root, (node, best similarity or None))."""
    node, grouped = element
    roots, sims = list(grouped["root"]), list(grouped["sim"])
    best = sims[0] if sims and sims[0] >= 0 else None
    yield (roots[0] if roots else node), (node, best)


class ClusterRows(beam.PTransform):
    """``{"labels": (node, root), "edges": (u, v, similarity)}`` -> one group row per member of
    each cluster (``cluster_rows``), with its best verified similarity to another member."""

    def expand(self, pcolls):
        sims = (pcolls["edges"]
                | "EndpointSims" >> beam.FlatMap(
                    lambda e: [(e[0], -1.0 if e[2] is None else e[2]),
                               (e[1], -1.0 if e[2] is None else e[2])])
                | "BestSim" >> beam.CombinePerKey(_best))
        return (
            {"root": pcolls["labels"], "sim": sims}
            | "JoinSims" >> beam.CoGroupByKey()
            | "ByRoot" >> beam.FlatMap(_by_root)
            | "GroupClusters" >> beam.GroupByKey()
            | "Rows" >> beam.FlatMap(cluster_rows))


# -- survivors ------------------------------------------------------------------------------------
DECISION, LINK = "decision", "link"


class FollowFn(beam.DoFn):
    """(named document, [(tag, decision or link)]) -> the decisions, each naming where the link
    goes if the named document has one (the group read twice, never held)."""

    def process(self, element):
        _, values = element
        link = next((v for tag, v in values if tag == LINK), None)  # pass 1
        for tag, d in values:  # pass 2 over the re-iterable group
            if tag != DECISION:
                continue
            if link is not None:
                count(d.stage, d.source, "survivor_followed")
                d = followed(d, link)
            yield d


def follow(decisions, links, label: str):
    """``decisions`` with every named document that has a link in ``links`` replaced by its
    survivor (``links``: ``(key, (kept_id, kept_source, via))``, key as ``named_key``)."""
    keyed_by = decisions | f"{label}ByNamed" >> beam.Map(lambda d: (named_key(d), (DECISION, d)))
    tagged = links | f"{label}ByRemoved" >> beam.MapTuple(lambda key, link: (key, (LINK, link)))
    return ((keyed_by, tagged)
            | f"{label}Flatten" >> beam.Flatten()
            | f"{label}Group" >> beam.GroupByKey()
            | f"{label}Follow" >> beam.ParDo(FollowFn()))


def final_decisions(exact=None, fuzzy=None, older_links=None):
    """All dedup decisions, naming final survivors: ``exact`` / ``fuzzy`` are the two steps'
    decisions (either may be None), ``older_links`` the older runs' removals
    (``pipelines.dedup.index.redirects``), None without ``--dedup-against``.  Older links first,
    then fuzzy decisions (which may name older documents), then exact decisions (which may name
    fuzzy-removed documents or older ones), as ``pipelines.dedup.decide.FollowStepFn`` does."""
    if fuzzy is not None and older_links is not None:
        fuzzy = follow(fuzzy, older_links, "FuzzyToOlder")
    if exact is not None:
        links = [older_links]
        if fuzzy is not None:
            links.append(fuzzy | "FuzzyLinks" >> beam.Map(link_of))
        links = [x for x in links if x is not None]
        if links:
            exact = follow(exact, flatten_small(links, "AllLinks"), "ExactToSurvivor")
    return flatten_small([exact, fuzzy], "AllDecisions")

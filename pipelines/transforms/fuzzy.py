"""Fuzzy (near-duplicate) dedup across all sources: LSH buckets -> verified edges -> components.

Works on ``curation.dedup_records.DedupRecord`` s, never on text, and shuffles at each step only
what that step reads:

1. Banding: (band key, node) per band of each member -> group by band key.  ``BucketStarFn``
   links a bucket's members to ONE member (the keep rule's best: a star, never all pairs) as
   candidate pairs.  A bucket over ``max_bucket`` members (boilerplate) is not held: it is
   streamed out again under ``bucket_shards`` salted sub-keys, each sub-bucket makes its own
   star, and the sub-bucket centres are starred together in a second small group; such buckets
   are counted and listed in ``stats/dedup_buckets.parquet``.  Members without band keys (fewer
   than ``min_shingles`` shingles) are counted and skip fuzzy dedup.
2. Verification (``verify: exact`` or ``estimated``, ``pipelines.transforms.fuzzy_verify``): only now are
   the shingle-hash sets (or signatures) joined to the candidate pairs, and only pairs whose
   similarity reaches ``threshold`` become edges, with that similarity.
3. ``ConnectedComponents`` over the edges (node = keep rank + source, so each component's root
   is the document the keep rule keeps); every other member gets a ``Decision`` at stage
   ``fuzzy_dedup``, reason ``near_duplicate``, ``detail={"kept": <root id>, "kept_source": ...}``.

With ``--dedup-against`` (input key ``older``: the older runs' index records, every document
that entered their fuzzy dedup) the older documents are members of every step above, exactly
as in one joint run over old and new, except that pairs of two older documents are never
candidates (their edges cannot change what happens to a new document: every older node ranks
ahead of every new one).  Older documents are never removed; a new document whose component's
root is an older document is removed with reason ``dedup_against/fuzzy`` and that document's
id and source in ``detail``.
"""
from __future__ import annotations

import itertools

import apache_beam as beam
import xxhash

from curation.dedup_records import is_older, node_id, node_source
from curation.document import Decision
from curation.fuzzy_config import FuzzyDedupConfig
from pipelines.plumbing.outputs import count
from pipelines.transforms.components import ConnectedComponents
from pipelines.transforms.dedup import DECISIONS, GROUPS, INPUTS
from pipelines.dedup.stats import AGAINST_FUZZY
from pipelines.transforms.fuzzy_verify import ClusterRows, VerifyCandidates

OVERSIZED, CENTRES, BUCKETS, CANDIDATES = "oversized", "centres", "buckets", "candidates"


def band_elements(member: tuple):
    """(node, band keys) -> ((band, digest), node) per band; None band keys: counted, skipped."""
    node, bands = member
    if bands is None:
        count("fuzzy_dedup", node_source(node), "too_few_shingles")
        return
    for key in bands:
        yield key, node


def star(members):
    """Candidate pairs (best member, other) of a set of nodes, the best being the smallest;
    none between two older runs' documents."""
    members = sorted(set(members))
    for node in members[1:]:
        if is_older(node):  # then so is the best
            continue
        count("fuzzy_dedup", "all", "candidate_pair")
        yield members[0], node


def salt(node: tuple, shards: int) -> int:
    """The sub-bucket of an oversized bucket's member: a stable hash of its id."""
    return xxhash.xxh3_64_intdigest(node_id(node).encode("utf-8")) % shards


def bucket_stars(band: int, digest: bytes, members: list, max_bucket: int, shards: int):
    """One whole bucket held in memory -> what ``BucketStarFn``, ``SubBucketStarFn`` and the
    centre stars make of it together: ``(CANDIDATES, (centre, member))`` pairs and, for a bucket
    over ``max_bucket``, one ``(BUCKETS, row)``."""
    if len(members) <= max_bucket:
        for pair in star(members):
            yield CANDIDATES, pair
        return
    subs: dict[int, list] = {}
    for node in members:
        subs.setdefault(salt(node, shards), []).append(node)
    for sub in subs.values():
        for pair in star(sub):
            yield CANDIDATES, pair
    for pair in star([min(sub) for sub in subs.values()]):
        yield CANDIDATES, pair
    count("fuzzy_dedup", "all", "oversized_bucket")
    yield BUCKETS, {"band": band, "bucket": digest.hex(), "size": len(members)}


class BucketStarFn(beam.DoFn):
    """A bucket -> star candidates; an oversized bucket -> its members under salted sub-keys."""

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
        for node in itertools.chain(held, it):  # streamed: never more than max_bucket held
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


def label_decision(label: tuple):
    """A component label ``(node, root)`` -> the node's ``Decision`` (none for an older run's
    document, which is never removed)."""
    node, root = label
    if is_older(node):  # an older run's document: never removed
        return
    source = node_source(node)
    reason = AGAINST_FUZZY if is_older(root) else "near_duplicate"
    count("fuzzy_dedup", source, "removed", reason)
    yield Decision(node_id(node), source, "fuzzy_dedup", reason,
                   {"kept": node_id(root), "kept_source": node_source(root)})


def count_round(row: dict) -> dict:
    """Rounds used also as the ``curate`` counter fuzzy_dedup/all/component_rounds
    (``stats/counters.json``)."""
    if row["edges"]:
        count("fuzzy_dedup", "all", "component_rounds")
    return row


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
        out = edges | "FromEdges" >> DecideFromEdges(c.max_rounds)
        inputs = members | "InputSources" >> beam.Map(lambda m: (("fuzzy", node_source(m[0])), 1))
        return {DECISIONS: out[DECISIONS], GROUPS: out[GROUPS], INPUTS: inputs,
                BUCKETS: buckets[BUCKETS], "rounds": out["rounds"], "edges": edges}


class DecideFromEdges(beam.PTransform):
    """Verified edges ``(centre, member, similarity)`` -> ``{"decisions", "groups", "rounds",
    "labels"}``: connected components, a ``Decision`` for every member but the root, one group
    row per member of each cluster, the components trace."""

    def __init__(self, max_rounds: int, label: str | None = None) -> None:
        super().__init__(label)
        self.max_rounds = max_rounds

    def expand(self, edges):
        cc = (edges
              | "Pairs" >> beam.Map(lambda e: (e[0], e[1]))
              | "Components" >> ConnectedComponents(self.max_rounds, round_counts=True))
        labels = cc["labels"]
        return {DECISIONS: labels | "Decide" >> beam.FlatMap(label_decision),
                GROUPS: {"labels": labels, "edges": edges} | "GroupRows" >> ClusterRows(),
                "rounds": cc["rounds"] | "CountRoundsUsed" >> beam.Map(count_round),
                "labels": labels}

"""Fuzzy (near-duplicate) dedup across all sources: MinHash LSH -> verified edges -> components.

1. ``SignatureFn``: batches of texts -> MinHash signatures (``curation.minhash.text_signatures``, word
   5-grams by default) -> one key per LSH band.  Documents with fewer than
   ``dedup.fuzzy.min_shingles`` distinct shingles skip fuzzy dedup (counted, kept here; exact
   dedup still applied to them).
2. Group by (band, band digest).  ``BucketEdgesFn`` links a bucket's members to ONE member (the
   keep rule's best, a star: never all pairs), keeping an edge only when the estimated Jaccard
   reaches ``threshold`` (``verify``), which stops transitive chaining through false candidates.
   A bucket over ``max_bucket`` members (boilerplate) is not held: it is streamed out again
   under ``bucket_shards`` salted sub-keys, each sub-bucket makes its own star, and the
   sub-bucket centres are starred together in a second small group; such buckets are counted
   and listed in ``stats/dedup_buckets.parquet``.
3. ``ConnectedComponents`` (large-star/small-star rounds, convergence checked) with node =
   ``keep_rank`` tuple + source, so each component's root is the document the keep rule
   keeps; the others are removed at stage ``fuzzy_dedup`` with reason ``near_duplicate`` and
   ``detail={"kept": <root id>, "kept_source": <root source>}``.
"""
from __future__ import annotations

import itertools

import apache_beam as beam
import xxhash

from curation.document import Document, Removal
from curation.exact_dedup import keep_rank
from pipelines.common import REMOVED, count, timed
from pipelines.components import ConnectedComponents
from pipelines.config import FuzzyDedupConfig
from pipelines.dedup import GROUPS, INPUTS, priority_map
from pipelines.dedup_stats import KEPT_REASON, group_row

OVERSIZED, CENTRES, BUCKETS = "oversized", "centres", "buckets"


def band_layout(cfg: FuzzyDedupConfig) -> tuple[int, int]:
    """(bands, rows) from the config, or datasketch's optimal rule for (threshold, num_perm)."""
    from curation.minhash import lsh_params

    if cfg.bands is not None:
        return cfg.bands, cfg.rows
    return lsh_params(cfg.threshold, cfg.num_perm)


def node_id(node: tuple) -> str:
    return node[-2]


def node_source(node: tuple) -> str:
    return node[-1]


class SignatureFn(beam.DoFn):
    """doc -> ((band, digest), (node, signature)) per band."""

    def __init__(self, cfg: FuzzyDedupConfig, priority: dict[str, int] | None) -> None:
        self.cfg, self.priority = cfg, priority

    def setup(self) -> None:
        self.bands, self.rows = band_layout(self.cfg)

    @timed("fuzzy_dedup")
    def process(self, docs: list[Document]):
        """A batch of documents (``beam.BatchElements``): their signatures are computed together
        (``text_signatures``, bitwise ``text_signature`` per document, with a fraction of the
        per-document numpy calls)."""
        from curation.minhash import band_keys, text_signatures

        c = self.cfg
        sigs = text_signatures([d.text for d in docs], c.ngram, c.shingle, c.num_perm, c.seed,
                               min_shingles=c.min_shingles)
        for doc, sig in zip(docs, sigs):
            if sig is None:
                count("fuzzy_dedup", doc.source, "too_few_shingles")
                continue
            node = keep_rank(doc, self.priority) + (doc.source,)
            for key in band_keys(sig, self.bands, self.rows):
                yield key, (node, sig)


class _StarFn(beam.DoFn):
    def __init__(self, threshold: float, verify: bool) -> None:
        self.threshold, self.verify = threshold, verify

    def star(self, members):
        """Edges (best member, other) for the members whose signature verifies against it."""
        from curation.minhash import estimated_jaccard

        members = sorted({m[0]: m for m in members}.values(), key=lambda m: m[0])
        if len(members) < 2:
            return
        centre, centre_sig = members[0]
        for node, sig in members[1:]:
            if not self.verify or estimated_jaccard(centre_sig, sig) >= self.threshold:
                count("fuzzy_dedup", "all", "candidate_edge")
                yield centre, node
            else:
                count("fuzzy_dedup", "all", "candidate_rejected")


class BucketEdgesFn(_StarFn):
    """A bucket -> star edges; an oversized bucket -> its members under salted sub-keys."""

    def __init__(self, threshold: float, verify: bool, max_bucket: int, shards: int) -> None:
        super().__init__(threshold, verify)
        self.max_bucket, self.shards = max_bucket, shards

    def process(self, element):
        (band, digest), members = element
        it = iter(members)
        held = list(itertools.islice(it, self.max_bucket + 1))
        if len(held) <= self.max_bucket:
            yield from self.star(held)
            return
        size = 0
        for member in itertools.chain(held, it):  # streamed: never more than max_bucket held
            size += 1
            salt = xxhash.xxh3_64_intdigest(node_id(member[0]).encode("utf-8")) % self.shards
            yield beam.pvalue.TaggedOutput(OVERSIZED, ((band, digest, salt), member))
        count("fuzzy_dedup", "all", "oversized_bucket")
        yield beam.pvalue.TaggedOutput(BUCKETS, {"band": band, "bucket": digest.hex(), "size": size})


class SubBucketFn(_StarFn):
    """A salted sub-bucket -> star edges, and its centre to ``centres`` keyed by the bucket."""

    def process(self, element):
        (band, digest, _), members = element
        members = list(members)
        yield from self.star(members)
        yield beam.pvalue.TaggedOutput(CENTRES, ((band, digest), min(members, key=lambda m: m[0])))


class CentreStarFn(_StarFn):
    def process(self, element):
        yield from self.star(element[1])


class ApplyComponentsFn(beam.DoFn):
    """(id, {"doc": [doc], "root": [root node]}) -> kept doc, or a removal."""

    def process(self, element):
        _, grouped = element
        docs, roots = list(grouped["doc"]), list(grouped["root"])
        if not docs:
            return
        doc = docs[0]
        if not roots:
            count("fuzzy_dedup", doc.source, "kept")
            yield doc
            return
        root = roots[0]
        count("fuzzy_dedup", doc.source, "removed", "near_duplicate")
        yield beam.pvalue.TaggedOutput(REMOVED, Removal(
            doc, "fuzzy_dedup", "near_duplicate", {"kept": node_id(root), "kept_source": node_source(root)}))


def _root_row(root: tuple, children: int) -> dict:
    rid, src = node_id(root), node_source(root)
    return group_row("fuzzy", rid, rid, src, rid, src, children + 1, KEPT_REASON)


def _member_rows(element):
    """(root, {"member": nodes, "children": [n]}) -> one row per member, streamed."""
    root, grouped = element
    size = sum(grouped["children"]) + 1
    rid, src = node_id(root), node_source(root)
    for node in grouped["member"]:
        yield group_row("fuzzy", rid, node_id(node), node_source(node), rid, src, size, "near_duplicate")


class FuzzyDedup(beam.PTransform):
    """docs -> ``{"kept", "removed", "groups", "inputs", "buckets", "rounds"}``."""

    def __init__(self, cfg: FuzzyDedupConfig, priority: list[str] | None = None,
                 label: str | None = None) -> None:
        super().__init__(label)
        self.cfg = cfg
        self.priority = priority_map(priority)

    def expand(self, docs):
        c = self.cfg
        buckets = (
            docs
            | "BatchDocs" >> beam.BatchElements(min_batch_size=8, max_batch_size=128)
            | "Signatures" >> beam.ParDo(SignatureFn(c, self.priority))
            | "GroupBuckets" >> beam.GroupByKey()
            | "BucketEdges" >> beam.ParDo(BucketEdgesFn(c.threshold, c.verify, c.max_bucket, c.bucket_shards))
            .with_outputs(OVERSIZED, BUCKETS, main="edges")
        )
        sub = (buckets[OVERSIZED]
               | "GroupSubBuckets" >> beam.GroupByKey()
               | "SubBucketEdges" >> beam.ParDo(SubBucketFn(c.threshold, c.verify)).with_outputs(CENTRES, main="edges"))
        centre_edges = (sub[CENTRES]
                        | "GroupCentres" >> beam.GroupByKey()
                        | "CentreEdges" >> beam.ParDo(CentreStarFn(c.threshold, c.verify)))
        edges = (buckets.edges, sub.edges, centre_edges) | "AllEdges" >> beam.Flatten()
        cc = edges | "Components" >> ConnectedComponents(c.max_rounds, round_counts=True)
        labels = cc["labels"]
        roots_by_id = labels | "RootById" >> beam.Map(lambda nr: (node_id(nr[0]), nr[1]))
        docs_by_id = docs | "DocById" >> beam.Map(lambda d: (d.id, d))
        out = (
            {"doc": docs_by_id, "root": roots_by_id}
            | "JoinRoots" >> beam.CoGroupByKey()
            | "Decide" >> beam.ParDo(ApplyComponentsFn()).with_outputs(REMOVED, main="kept")
        )
        children = (labels
                    | "RootKey" >> beam.Map(lambda nr: (nr[1], 1))
                    | "CountChildren" >> beam.CombinePerKey(sum))
        root_rows = children | "RootRows" >> beam.MapTuple(_root_row)
        member_rows = (
            {"member": labels | "MemberByRoot" >> beam.Map(lambda nr: (nr[1], nr[0])), "children": children}
            | "JoinSizes" >> beam.CoGroupByKey()
            | "MemberRows" >> beam.FlatMap(_member_rows))
        groups = (root_rows, member_rows) | "AllGroupRows" >> beam.Flatten()
        inputs = docs | "InputSources" >> beam.Map(lambda d: ("fuzzy", d.source))
        return {"kept": out.kept, "removed": out[REMOVED], GROUPS: groups, INPUTS: inputs,
                BUCKETS: buckets[BUCKETS], "rounds": cc["rounds"]}

"""FROZEN COPY of the dedup transforms as they were before issue 16 (commit 775b1de:
pipelines/transforms/dedup.py, pipelines/transforms/components.py, pipelines/transforms/fuzzy.py, with imports adjusted), kept
only so ``bench_dedup_shuffle.py`` can run the old design side by side with the new one on the
same corpus.  Not used by the pipeline; do not extend.

The old design shuffled whole documents twice (exact dedup's group by hash, fuzzy dedup's join
of documents with roots), the whole signature once per LSH band, and ran every one of
``max_rounds`` component rounds (four shuffles each) whatever the graph.
"""
# flake8: noqa
from __future__ import annotations

import itertools
from typing import Any, Iterable

import apache_beam as beam
import xxhash

from curation.document import Document, Removal
from curation.exact_dedup import keep_rank, priority_map, text_hash
from curation.fuzzy_config import FuzzyDedupConfig
from pipelines.plumbing.outputs import REMOVED, count
from pipelines.plumbing.timing import timed
# unchanged since then: the baseline shares them with the live components
from pipelines.transforms.components import _CheckStar, _count
from pipelines.dedup.stats import KEPT_REASON, group_row

GROUPS = "groups"
INPUTS = "inputs"
OVERSIZED, CENTRES, BUCKETS = "oversized", "centres", "buckets"


def _band_keys16(sig, bands, rows):
    """The old band key: 16-byte xxh3-128 digest per band."""
    return [(i, xxhash.xxh3_128_digest(sig[i * rows : (i + 1) * rows].tobytes())) for i in range(bands)]


# ---- old pipelines/transforms/dedup.py ----------------------------------------------------------------
class KeepBestFn(beam.DoFn):
    """(hash, documents) -> the best document; the rest to ``removed``; group rows to ``groups``."""

    def __init__(self, priority: dict[str, int] | None, stage: str = "exact_dedup") -> None:
        self.priority = priority
        self.stage = stage

    @timed("exact_dedup")
    def process(self, element: tuple[str, Iterable[Document]]):
        key, docs = element
        best, best_rank, size = None, None, 0
        for d in docs:  # pass 1: the keep rule's winner and the group size
            size += 1
            rank = keep_rank(d, self.priority)
            if best is None or rank < best_rank:
                best, best_rank = d, rank
        count(self.stage, best.source, "kept")
        yield best
        if size == 1:
            return
        yield beam.pvalue.TaggedOutput(GROUPS, group_row(
            "exact", key, best.id, best.source, best.id, best.source, size, KEPT_REASON, 1.0))
        if size > 1000:
            count(self.stage, "all", "hot_group_over_1000")
        for d in docs:  # pass 2 over the re-iterable group
            if d.id == best.id:
                continue
            count(self.stage, d.source, "removed", "duplicate")
            yield beam.pvalue.TaggedOutput(GROUPS, group_row(
                "exact", key, d.id, d.source, best.id, best.source, size, "duplicate", 1.0))
            yield beam.pvalue.TaggedOutput(REMOVED, Removal(
                d, self.stage, "duplicate", {"kept": best.id, "kept_source": best.source}))


class ExactDedup(beam.PTransform):
    """docs -> ``{"kept", "removed", "groups", "inputs"}`` (inputs: ``("exact", source)`` per doc)."""

    def __init__(self, priority: list[str] | None = None, label: str | None = None) -> None:
        super().__init__(label)
        self.priority = priority_map(priority)

    def expand(self, docs):
        out = (
            docs
            | "KeyByTextHash" >> beam.Map(lambda d: (text_hash(d.text), d))
            | "GroupByHash" >> beam.GroupByKey()
            | "KeepBest" >> beam.ParDo(KeepBestFn(self.priority)).with_outputs(
                REMOVED, GROUPS, main="kept")
        )
        inputs = docs | "InputSources" >> beam.Map(lambda d: ("exact", d.source))
        return {"kept": out.kept, "removed": out[REMOVED], "groups": out[GROUPS], INPUTS: inputs}

# ---- old pipelines/transforms/components.py -----------------------------------------------------------
def _large_star(element: tuple[Any, Iterable[Any]]):
    """Connect every larger neighbour of u to the smallest node of u's closed neighbourhood."""
    u, nbrs = element
    nbrs = set(nbrs)
    m = min(min(nbrs), u)
    for v in nbrs:
        if v > u and v != m:
            yield (m, v)


def _small_star(element: tuple[Any, Iterable[Any]]):
    """u with its smaller neighbours N: connect N and u to min(N)."""
    u, smaller = element
    smaller = set(smaller)
    m = min(smaller)
    yield (m, u)
    for v in smaller:
        if v != m:
            yield (m, v)


class _Round(beam.PTransform):
    def expand(self, edges):
        large = (
            edges
            | "BothDirections" >> beam.FlatMap(lambda e: [(e[0], e[1]), (e[1], e[0])])
            | "GroupNeighbours" >> beam.GroupByKey()
            | "LargeStar" >> beam.FlatMap(_large_star)
            | "DistinctLarge" >> beam.Distinct()
        )
        return (
            large
            | "KeyByLarger" >> beam.Map(lambda e: (e[1], e[0]))
            | "GroupSmaller" >> beam.GroupByKey()
            | "SmallStar" >> beam.FlatMap(_small_star)
            | "DistinctSmall" >> beam.Distinct()
        )


class ConnectedComponents(beam.PTransform):
    """edges (u, v), u != v -> (node, root) for every non-root node of every component.

    With ``round_counts=True`` the result is ``{"labels": ..., "rounds": ...}`` where
    ``rounds`` holds one ``{"round": i, "edges": n}`` per round (round 0: the input edges), the
    convergence trace the dedup stats report; a component is a star once the count stops
    changing.  Every round's edge count also goes to the counter ``connected_components/round_XX``.
    """

    def __init__(self, rounds: int, setting: str = "dedup.fuzzy.max_rounds",
                 round_counts: bool = False, label: str | None = None) -> None:
        super().__init__(label)
        if rounds < 1:
            raise ValueError(f"{setting} must be >= 1")
        self.rounds, self.setting, self.round_counts = rounds, setting, round_counts

    def expand(self, edges):
        edges = (edges
                 | "Orient" >> beam.Map(lambda e: (min(e), max(e)))
                 | "DistinctInput" >> beam.Distinct())
        counts = []
        for i in range(self.rounds + 1):
            if i:
                edges = edges | f"Round{i:02d}" >> _Round()
            edges = edges | f"Count{i:02d}" >> beam.Map(_count(f"round_{i:02d}"))
            if self.round_counts:
                counts.append(edges
                              | f"Size{i:02d}" >> beam.combiners.Count.Globally()
                              | f"Row{i:02d}" >> beam.Map(lambda n, i=i: {"round": i, "edges": n}))
        labels = self._check(edges)
        if self.round_counts:
            return {"labels": labels, "rounds": counts | "AllRounds" >> beam.Flatten()}
        return labels

    def _check(self, edges):
        as_parent = edges | "ByParent" >> beam.Map(lambda e: (e[0], e[1]))
        as_child = edges | "ByChild" >> beam.Map(lambda e: (e[1], e[0]))
        return (
            {"child": as_parent, "parent": as_child}
            | "JoinRoles" >> beam.CoGroupByKey()
            | "CheckStars" >> beam.ParDo(_CheckStar(self.rounds, self.setting))
        )

# ---- old pipelines/transforms/fuzzy.py ----------------------------------------------------------------
def band_layout(cfg: FuzzyDedupConfig) -> tuple[int, int]:
    """(bands, rows) from the config, or datasketch's optimal rule for (threshold, num_perm)."""
    from curation.lsh import lsh_params

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
        from curation.minhash import text_signatures

        c = self.cfg
        sigs = text_signatures([d.text for d in docs], c.ngram, c.shingle, c.num_perm, c.seed,
                               min_shingles=c.min_shingles)
        for doc, sig in zip(docs, sigs):
            if sig is None:
                count("fuzzy_dedup", doc.source, "too_few_shingles")
                continue
            node = keep_rank(doc, self.priority) + (doc.source,)
            for key in _band_keys16(sig, self.bands, self.rows):
                yield key, (node, sig)


class _StarFn(beam.DoFn):
    def __init__(self, threshold: float, verify: bool) -> None:
        self.threshold, self.verify = threshold, verify

    def star(self, members):
        """Edges (best member, other) for the members whose signature verifies against it."""
        from curation.lsh import estimated_jaccard

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
            | "BucketEdges" >> beam.ParDo(BucketEdgesFn(c.threshold, c.verify != "none", c.max_bucket, c.bucket_shards))
            .with_outputs(OVERSIZED, BUCKETS, main="edges")
        )
        sub = (buckets[OVERSIZED]
               | "GroupSubBuckets" >> beam.GroupByKey()
               | "SubBucketEdges" >> beam.ParDo(SubBucketFn(c.threshold, c.verify != "none")).with_outputs(CENTRES, main="edges"))
        centre_edges = (sub[CENTRES]
                        | "GroupCentres" >> beam.GroupByKey()
                        | "CentreEdges" >> beam.ParDo(CentreStarFn(c.threshold, c.verify != "none")))
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

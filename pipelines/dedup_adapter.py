"""Today's exact and fuzzy dedup as ``docs -> Decision`` transforms shuffling no text.

TEMPORARY GLUE (replace at the merge with the dedup branch): the contract is that
``ExactDedup``/``FuzzyDedup`` take small per-document records and output
``curation.document.Decision`` records for the documents they remove, plus their group rows and
stats.  Until they do, these adapters give the pipeline that interface on top of the current
code: the exact key and keep rank are computed where the documents are read and only
``(hash, rank, id, source)`` is grouped; fuzzy dedup reuses ``pipelines.fuzzy``'s signature,
bucket and component steps (which shuffle signatures, never text) and turns the component
labels into decisions instead of joining the documents back.
"""
from __future__ import annotations

import apache_beam as beam
from apache_beam.pvalue import TaggedOutput

from curation.document import Decision
from curation.exact_dedup import keep_rank, text_hash
from pipelines.common import count, timed
from pipelines.components import ConnectedComponents
from pipelines.config import FuzzyDedupConfig
from pipelines.dedup import GROUPS, INPUTS, priority_map
from pipelines.dedup_stats import KEPT_REASON, group_row
from pipelines.fuzzy import (BUCKETS, CENTRES, OVERSIZED, BucketEdgesFn, CentreStarFn, SignatureFn,
                             SubBucketFn, _member_rows, _root_row, node_id, node_source)

DECISIONS = "decisions"


class ExactGroupFn(beam.DoFn):
    """(hash, [rank + (source,)]) -> a ``Decision`` per member but the keep rule's best; group rows."""

    @timed("exact_dedup")
    def process(self, element):
        key, members = element
        best, size = None, 0
        for m in members:  # pass 1: the winner and the group size (members are small tuples)
            size += 1
            if best is None or m < best:
                best = m
        if size == 1:
            return
        bid, bsrc = best[-2], best[-1]
        yield TaggedOutput(GROUPS, group_row("exact", key, bid, bsrc, bid, bsrc, size, KEPT_REASON, 1.0))
        if size > 1000:
            count("exact_dedup", "all", "hot_group_over_1000")
        for m in members:  # pass 2 over the re-iterable group
            if m == best:
                continue
            mid, msrc = m[-2], m[-1]
            yield TaggedOutput(GROUPS, group_row("exact", key, mid, msrc, bid, bsrc, size, "duplicate", 1.0))
            yield Decision(mid, msrc, "exact_dedup", "duplicate", {"kept": bid, "kept_source": bsrc})


class ExactDecisions(beam.PTransform):
    """docs -> ``{"decisions", "groups", "inputs"}``; only (hash, rank, id, source) is grouped."""

    def __init__(self, priority: list[str] | None = None, label: str | None = None) -> None:
        super().__init__(label)
        self.priority = priority_map(priority)

    def expand(self, docs):
        prio = self.priority
        out = (docs
               | "Key" >> beam.Map(lambda d: (text_hash(d.text), keep_rank(d, prio) + (d.source,)))
               | "GroupByHash" >> beam.GroupByKey()
               | "Decide" >> beam.ParDo(ExactGroupFn()).with_outputs(GROUPS, main=DECISIONS))
        inputs = docs | "InputSources" >> beam.Map(lambda d: ("exact", d.source))
        return {DECISIONS: out[DECISIONS], GROUPS: out[GROUPS], INPUTS: inputs}


def _label_decision(label) -> Decision:
    node, root = label
    return Decision(node_id(node), node_source(node), "fuzzy_dedup", "near_duplicate",
                    {"kept": node_id(root), "kept_source": node_source(root)})


class FuzzyDecisions(beam.PTransform):
    """docs -> ``{"decisions", "groups", "inputs", "buckets", "rounds"}`` (``pipelines.fuzzy``'s
    LSH and components; each non-root node of a component is a decision)."""

    def __init__(self, cfg: FuzzyDedupConfig, priority: list[str] | None = None,
                 label: str | None = None) -> None:
        super().__init__(label)
        self.cfg, self.priority = cfg, priority_map(priority)

    def expand(self, docs):
        c = self.cfg
        buckets = (
            docs
            | "BatchDocs" >> beam.BatchElements(min_batch_size=8, max_batch_size=128)
            | "Signatures" >> beam.ParDo(SignatureFn(c, self.priority))
            | "GroupBuckets" >> beam.GroupByKey()
            | "BucketEdges" >> beam.ParDo(BucketEdgesFn(c.threshold, c.verify, c.max_bucket,
                                                        c.bucket_shards))
            .with_outputs(OVERSIZED, BUCKETS, main="edges"))
        sub = (buckets[OVERSIZED]
               | "GroupSubBuckets" >> beam.GroupByKey()
               | "SubBucketEdges" >> beam.ParDo(SubBucketFn(c.threshold, c.verify)).with_outputs(
                   CENTRES, main="edges"))
        centre_edges = (sub[CENTRES]
                        | "GroupCentres" >> beam.GroupByKey()
                        | "CentreEdges" >> beam.ParDo(CentreStarFn(c.threshold, c.verify)))
        edges = (buckets.edges, sub.edges, centre_edges) | "AllEdges" >> beam.Flatten()
        cc = edges | "Components" >> ConnectedComponents(c.max_rounds, round_counts=True)
        labels = cc["labels"]
        decisions = labels | "Decisions" >> beam.Map(_label_decision)
        children = (labels
                    | "RootKey" >> beam.Map(lambda nr: (nr[1], 1))
                    | "CountChildren" >> beam.CombinePerKey(sum))
        root_rows = children | "RootRows" >> beam.MapTuple(_root_row)
        member_rows = (
            {"member": labels | "MemberByRoot" >> beam.Map(lambda nr: (nr[1], nr[0])),
             "children": children}
            | "JoinSizes" >> beam.CoGroupByKey()
            | "MemberRows" >> beam.FlatMap(_member_rows))
        groups = (root_rows, member_rows) | "AllGroupRows" >> beam.Flatten()
        inputs = docs | "InputSources" >> beam.Map(lambda d: ("fuzzy", d.source))
        return {DECISIONS: decisions, GROUPS: groups, INPUTS: inputs, BUCKETS: buckets[BUCKETS],
                "rounds": cc["rounds"]}



"""Fuzzy (near-duplicate) dedup across all sources: MinHash LSH -> verified edges -> components.

1. ``SignatureFn``: shingles -> MinHash signature -> one key per LSH band.  Documents with fewer
   than ``curation.minhash.MIN_SHINGLES`` shingles skip fuzzy dedup (kept here).
2. Group by (band, digest): each bucket links its members to ONE member (the smallest node,
   a star), verified by estimated Jaccard >= threshold.
3. ``ConnectedComponents`` (large-star/small-star rounds) with node = ``keep_rank`` tuple, so each
   component's root is the document the keep rule keeps; the others are removed at stage
   ``fuzzy_dedup`` with reason ``near_duplicate`` and ``detail={"kept": <root id>}``.
"""
from __future__ import annotations

from typing import Iterable

import apache_beam as beam

from curation.document import Document, Removal
from curation.exact_dedup import keep_rank
from pipelines.common import REMOVED, count
from pipelines.components import ConnectedComponents
from pipelines.config import FuzzyDedupConfig
from pipelines.dedup import GROUPS, priority_map


def _band_layout(cfg: FuzzyDedupConfig) -> tuple[int, int]:
    from curation.minhash import lsh_params

    if cfg.bands is not None:
        return cfg.bands, cfg.rows
    return lsh_params(cfg.threshold, cfg.num_perm)


class SignatureFn(beam.DoFn):
    """doc -> ((band, digest), (node, signature)) per band."""

    def __init__(self, cfg: FuzzyDedupConfig, priority: dict[str, int] | None) -> None:
        self.cfg, self.priority = cfg, priority

    def setup(self) -> None:
        self.bands, self.rows = _band_layout(self.cfg)

    def process(self, doc: Document):
        from curation.minhash import MIN_SHINGLES, band_keys, shingles, signature

        sh = shingles(doc.text, self.cfg.ngram, self.cfg.shingle)
        if len(sh) < MIN_SHINGLES:
            count("fuzzy_dedup", doc.source, "too_short_to_sign")
            return
        sig = signature(sh, self.cfg.num_perm, self.cfg.seed)
        node = keep_rank(doc, self.priority)
        for key in band_keys(sig, self.bands, self.rows):
            yield key, (node, sig)


class BucketEdgesFn(beam.DoFn):
    """A bucket's members -> verified edges (smallest member, other)."""

    def __init__(self, threshold: float) -> None:
        self.threshold = threshold

    def process(self, element):
        from curation.minhash import estimated_jaccard

        _, members = element
        members = sorted({m[0]: m for m in members}.values(), key=lambda m: m[0])
        if len(members) < 2:
            return
        center, center_sig = members[0]
        for node, sig in members[1:]:
            if estimated_jaccard(center_sig, sig) >= self.threshold:
                yield (center, node)
            else:
                count("fuzzy_dedup", "all", "candidate_rejected")


class ApplyComponentsFn(beam.DoFn):
    """(id, {"doc": [doc], "root": [root node]}) -> kept doc, or a removal + group rows."""

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
        kept_id = root[-1]
        count("fuzzy_dedup", doc.source, "removed", "near_duplicate")
        yield beam.pvalue.TaggedOutput(REMOVED, Removal(
            doc, "fuzzy_dedup", "near_duplicate", {"kept": kept_id}))
        yield beam.pvalue.TaggedOutput(GROUPS, {
            "kind": "fuzzy", "group": kept_id, "id": doc.id, "source": doc.source,
            "kept": False, "kept_id": kept_id, "similarity": None})


def _root_rows(root) -> dict:
    return {"kind": "fuzzy", "group": root[-1], "id": root[-1], "source": None,
            "kept": True, "kept_id": root[-1], "similarity": None}


class FuzzyDedup(beam.PTransform):
    """docs -> ``{"kept", "removed", "groups"}``."""

    def __init__(self, cfg: FuzzyDedupConfig, priority: list[str] | None = None,
                 label: str | None = None) -> None:
        super().__init__(label)
        self.cfg = cfg
        self.priority = priority_map(priority)

    def expand(self, docs):
        edges = (
            docs
            | "Signatures" >> beam.ParDo(SignatureFn(self.cfg, self.priority))
            | "GroupBuckets" >> beam.GroupByKey()
            | "VerifiedEdges" >> beam.ParDo(BucketEdgesFn(self.cfg.threshold))
        )
        labels = edges | "Components" >> ConnectedComponents(self.cfg.max_rounds)
        roots_by_id = labels | "RootById" >> beam.Map(lambda nr: (nr[0][-1], nr[1]))
        docs_by_id = docs | "DocById" >> beam.Map(lambda d: (d.id, d))
        out = (
            {"doc": docs_by_id, "root": roots_by_id}
            | "JoinRoots" >> beam.CoGroupByKey()
            | "Decide" >> beam.ParDo(ApplyComponentsFn()).with_outputs(REMOVED, GROUPS, main="kept")
        )
        root_rows = (
            labels
            | "Roots" >> beam.Map(lambda nr: nr[1])
            | "DistinctRoots" >> beam.Distinct()
            | "RootRows" >> beam.Map(_root_rows)
        )
        groups = (out[GROUPS], root_rows) | "AllGroupRows" >> beam.Flatten()
        return {"kept": out.kept, "removed": out[REMOVED], "groups": groups}

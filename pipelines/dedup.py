"""Exact deduplication across all sources: one survivor per canonical-text hash.

Documents are keyed by ``text_hash`` and grouped; the member with the smallest
``keep_rank`` (source priority, quality, length, id) is kept, the others are removed at stage
``exact_dedup`` with reason ``duplicate`` and ``detail={"kept": <kept id>}``.  Groups with more
than one member are also emitted as rows for ``dedup/`` (one row per member).
"""
from __future__ import annotations

from typing import Iterable

import apache_beam as beam

from curation.document import Document, Removal
from curation.exact_dedup import keep_rank, text_hash
from pipelines.common import REMOVED, count

GROUPS = "groups"


def priority_map(priority: list[str] | None) -> dict[str, int] | None:
    """Config's highest-first list of sources -> ``keep_rank``'s {source: priority}."""
    if priority is None:
        return None
    return {source: len(priority) - i for i, source in enumerate(priority)}


class KeepBestFn(beam.DoFn):
    """(hash, documents) -> the best document; the rest to ``removed``; group rows to ``groups``."""

    def __init__(self, priority: dict[str, int] | None, stage: str = "exact_dedup") -> None:
        self.priority = priority
        self.stage = stage

    def process(self, element: tuple[str, Iterable[Document]]):
        key, docs = element
        docs = sorted(docs, key=lambda d: keep_rank(d, self.priority))
        best = docs[0]
        count(self.stage, best.source, "kept")
        yield best
        if len(docs) == 1:
            return
        for d in docs:
            yield beam.pvalue.TaggedOutput(GROUPS, {
                "kind": "exact", "group": key, "id": d.id, "source": d.source,
                "kept": d is best, "kept_id": best.id, "similarity": 1.0})
        for d in docs[1:]:
            count(self.stage, d.source, "removed", "duplicate")
            yield beam.pvalue.TaggedOutput(REMOVED, Removal(
                d, self.stage, "duplicate", {"kept": best.id, "kept_source": best.source}))


class ExactDedup(beam.PTransform):
    """docs -> ``{"kept", "removed", "groups"}``."""

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
        return {"kept": out.kept, "removed": out[REMOVED], "groups": out[GROUPS]}

"""Exact deduplication across all sources: one survivor per canonical-text hash.

Documents are keyed by ``text_hash`` and grouped; the member with the smallest ``keep_rank``
(source priority, quality, length, id) is kept, the others are removed at stage
``exact_dedup`` with reason ``duplicate`` and ``detail={"kept": <id>, "kept_source": <source>}``.
Groups with more than one member are also emitted as ``dedup_stats.group_row`` rows.

A boilerplate text repeated a million times is one hot key: ``KeepBestFn`` streams over the
group twice (find the best, then decide each member) and never holds more than one document
besides the best, so a hot group costs one worker time, not memory.
"""
from __future__ import annotations

from typing import Iterable

import apache_beam as beam

from curation.document import Document, Removal
from curation.exact_dedup import keep_rank, text_hash
from pipelines.common import REMOVED, count, timed
from pipelines.dedup_stats import KEPT_REASON, group_row

GROUPS = "groups"
INPUTS = "inputs"


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

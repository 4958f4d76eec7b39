"""Dedup records, and exact deduplication across all sources: one survivor per canonical text.

``DedupRecords``: documents -> ``curation.dedup_records.DedupRecord`` (one ParDo over batches,
no shuffle): all that exact and fuzzy dedup read of a document.

``ExactDedup``: records -> decisions.  Records are keyed by ``text_hash`` and grouped, carrying
only (node, band keys); the member with the smallest node (the keep rule: source priority,
quality, length, id) survives, every other member gets a ``Decision`` at stage ``exact_dedup``
with reason ``duplicate`` and ``detail={"kept": <id>, "kept_source": <source>}``.  Groups with
more than one member are also emitted as ``dedup_stats.group_row`` rows.  The survivors'
(node, band keys) come out as ``kept``: the members of fuzzy dedup.

With ``--dedup-against`` the older runs' records join the groups (``{"records", "older"}``):
an older document ranks ahead of every new one, so a group holding one keeps it; its new
members are removed with reason ``dedup_against/exact`` and the older document's id and source
in the detail, and older members are never removed, counted or passed on (they enter fuzzy
dedup from the index directly).

A boilerplate text repeated a million times is one hot key: ``KeepBestFn`` streams over the
group twice (find the best, then decide each member) and holds nothing but the best, so a hot
group costs one worker time, not memory.
"""
from __future__ import annotations

from typing import Iterable

import apache_beam as beam

from curation.dedup_records import DedupRecord, dedup_records, is_older, node_id, node_source
from curation.document import Decision, Document
from curation.exact_dedup import priority_map
from curation.fuzzy_config import FuzzyDedupConfig
from pipelines.plumbing.outputs import count
from pipelines.plumbing.timing import timed
from pipelines.dedup.stats import AGAINST_EXACT, KEPT_REASON, OLDER_KEPT_REASON, group_row

GROUPS = "groups"
INPUTS = "inputs"
DECISIONS = "decisions"

__all__ = ["DedupRecords", "ExactDedup", "priority_map", "GROUPS", "INPUTS", "DECISIONS"]


class DedupRecordsFn(beam.DoFn):
    """A batch of documents -> their ``DedupRecord`` s (MinHash vectorised over the batch)."""

    def __init__(self, fuzzy: FuzzyDedupConfig | None, priority: dict[str, int] | None) -> None:
        self.fuzzy, self.priority = fuzzy, priority
        self.stage = "fuzzy_dedup" if fuzzy is not None and fuzzy.enabled else "exact_dedup"

    def setup(self) -> None:
        if self.fuzzy is not None and self.fuzzy.enabled:
            self.fuzzy.band_layout()  # derive (and cache) the layout once per worker

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


KEPT = "kept"


def keep_best(group: str, members: Iterable[tuple]):
    """One exact-duplicate group (``group``: the text hash, hex) -> ``(tag, value)`` pairs:
    ``(KEPT, best member)`` unless the best is an older run's document, and for a group of two
    or more ``(GROUPS, row)`` per member and ``(DECISIONS, Decision)`` per removed member.
    ``members``: a re-iterable of ``(node, anything)``; read twice, only the best is held."""
    best, new = None, 0
    for m in members:  # pass 1: the keep rule's winner and the group's new members
        new += not is_older(m[0])
        if best is None or m[0] < best[0]:
            best = m
    older = is_older(best[0])
    if not older:
        yield KEPT, best
    size = new + older  # the older survivor and the new members (other older ones: not ours)
    if size <= 1:
        return
    bid, bsrc = node_id(best[0]), node_source(best[0])
    reason = AGAINST_EXACT if older else "duplicate"
    yield GROUPS, group_row("exact", group, bid, bsrc, bid, bsrc, size,
                            OLDER_KEPT_REASON if older else KEPT_REASON, 1.0, True)
    if size > 1000:
        count("exact_dedup", "all", "hot_group_over_1000")
    for node, _ in members:  # pass 2 over the re-iterable group
        if node == best[0] or is_older(node):
            continue
        did, dsrc = node_id(node), node_source(node)
        count("exact_dedup", dsrc, "removed", reason)
        yield GROUPS, group_row("exact", group, did, dsrc, bid, bsrc, size, reason, 1.0, False)
        yield DECISIONS, Decision(did, dsrc, "exact_dedup", reason, {"kept": bid, "kept_source": bsrc})


class KeepBestFn(beam.DoFn):
    """(hash, [(node, bands)]) -> the best member's (node, bands); decisions for the rest to
    ``decisions``; group rows to ``groups`` (``keep_best``)."""

    stage = "exact_dedup"

    @timed()
    def process(self, element: tuple[bytes, Iterable[tuple]]):
        key, members = element
        for tag, value in keep_best(key.hex(), members):
            yield value if tag == KEPT else beam.pvalue.TaggedOutput(tag, value)


class ExactDedup(beam.PTransform):
    """records -> ``{"decisions", "kept", "groups", "inputs"}``.

    ``kept``: (node, band keys) of each survivor (fuzzy dedup's members); ``inputs``:
    ``(("exact", source), 1)`` per record (the dedup stats' denominators).  Input: records, or
    ``{"records": ..., "older": older runs' records}``.
    """

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

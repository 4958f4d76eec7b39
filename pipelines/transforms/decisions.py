"""Applying removal decisions to documents without shuffling a document's text.

Dedup decides on small records (hashes, keep ranks, signatures) and outputs a
``curation.document.Decision`` for every document it removes.  The documents stay in the
previous stage's parts; ``DecisionsByPart`` sends each decision to the part holding its document
(a join on the id with the ``(id, part)`` records read alongside the features: small records
only), and ``ApplyDecisionsFn`` re-reads each part and filters it with that part's decisions,
datatrove-style: the removed documents become ``Removal`` records, the rest go on.
"""
from __future__ import annotations

import apache_beam as beam
from apache_beam.pvalue import TaggedOutput

from curation.document import STAGES, Decision
from pipelines.transforms.outputs import REMOVED, count
from pipelines.transforms.parts import read_part


def _locate(element):
    """(id, {"part": [part], "decision": [Decision...]}) -> (part, the decision that wins)."""
    doc_id, grouped = element
    decisions = list(grouped["decision"])
    if not decisions:
        return
    parts = list(grouped["part"])
    if len(parts) != 1:
        raise ValueError(f"decision for document {doc_id!r} which is in {len(parts)} parts "
                         "(0: the decision names an id that was never read; >1: duplicate ids)")
    # Stages apply in pipeline order: a document removed twice is removed by the earlier stage.
    yield parts[0], min(decisions, key=lambda d: (STAGES.index(d.stage), d.reason))


class DecisionsByPart(beam.PTransform):
    """``{"parts": part URLs, "ids": (id, part URL), "decisions": Decision}`` ->
    ``(part URL, [Decision, ...])`` for EVERY part (an empty list where nothing is removed)."""

    def expand(self, inputs):
        keyed = inputs["decisions"] | "ById" >> beam.Map(lambda d: (d.id, d))
        located = ({"part": inputs["ids"], "decision": keyed}
                   | "JoinIds" >> beam.CoGroupByKey()
                   | "Locate" >> beam.FlatMap(_locate))
        every = inputs["parts"] | "EveryPart" >> beam.Map(lambda url: (url, None))
        return ((located, every)
                | "WithEveryPart" >> beam.Flatten()
                | "ByPart" >> beam.GroupByKey()
                | "Sorted" >> beam.MapTuple(lambda url, ds: (url, sorted(
                    (d for d in ds if d is not None), key=lambda d: d.id))))


class ApplyDecisionsFn(beam.DoFn):
    """``(part URL, decisions)`` -> the part's documents not removed (main output) and a
    ``Removal`` per removed document (``removed``; only with ``emit_removed``).  Fails if a
    decision meets no document of its part: nothing may be lost silently.  ``count_removed``:
    count each removal (off where the deciding transform already counted it).  ``kept_stages``:
    the deciding stages in order; a document counts as ``kept`` by each stage it passed (all of
    them if it is not removed, those before its decision's stage otherwise)."""

    def __init__(self, emit_removed: bool = True, count_removed: bool = True,
                 kept_stages: tuple[str, ...] = ()) -> None:
        self.emit_removed, self.count_removed = emit_removed, count_removed
        self.kept_stages = tuple(kept_stages)

    def process(self, element):
        url, decisions = element
        pending: dict[str, Decision] = {d.id: d for d in decisions}
        for doc in read_part(url):
            d = pending.pop(doc.id, None)
            for stage in self.kept_stages:
                if d is not None and stage == d.stage:
                    break
                count(stage, doc.source, "kept")
            if d is None:
                yield doc
            elif self.emit_removed:
                if self.count_removed:
                    count(d.stage, doc.source, "removed", d.reason)
                yield TaggedOutput(REMOVED, d.removal(doc))
        if pending:
            raise RuntimeError(f"{len(pending)} decision(s) for documents not in part {url}: "
                               f"{sorted(pending)[:3]}")


class ApplyDecisions(beam.PTransform):
    """``{"parts", "ids", "decisions"}`` -> ``{"kept": docs, "removed": Removals}``."""

    def __init__(self, emit_removed: bool = True, count_removed: bool = True,
                 kept_stages: tuple[str, ...] = (), label: str | None = None) -> None:
        super().__init__(label)
        self.emit_removed, self.count_removed = emit_removed, count_removed
        self.kept_stages = tuple(kept_stages)

    def expand(self, inputs):
        out = (inputs
               | "ByPart" >> DecisionsByPart()
               | "SpreadParts" >> beam.Reshuffle()
               | "Apply" >> beam.ParDo(ApplyDecisionsFn(self.emit_removed, self.count_removed, self.kept_stages)).with_outputs(
                   REMOVED, main="kept"))
        return {"kept": out.kept, "removed": out[REMOVED]}

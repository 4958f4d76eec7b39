"""ADAPTER (temporary): dedup on documents for today's single-job curate pipeline.

Dedup proper works on small records and outputs decisions (``pipelines.transforms.dedup``,
``pipelines.transforms.fuzzy``; contract 2).  Until the pipeline applies decisions to documents itself
(materialised stages), ``DedupDocuments`` keeps the old document-in / document-out shape:

    docs -> DedupRecords -> ExactDedup -> FuzzyDedup(members = exact survivors) -> decisions
    {docs by id, decisions by id} -> CoGroupByKey -> kept documents | Removal records

The join at the end is the only step here that shuffles documents (once; the previous
implementation shuffled them twice, in exact dedup's group and fuzzy dedup's root join).  To
remove the adapter: compute ``DedupRecords`` where documents are read, feed ``ExactDedup`` /
``FuzzyDedup`` with them, and apply the ``Decision`` s where the documents are (e.g. per
materialised part); then delete this module and its test.
"""
from __future__ import annotations

import apache_beam as beam

from curation.fuzzy_config import FuzzyDedupConfig
from pipelines.transforms.outputs import REMOVED, count
from pipelines.transforms.dedup import DECISIONS, GROUPS, INPUTS, DedupRecords, ExactDedup
from pipelines.transforms.fuzzy import BUCKETS, FuzzyDedup


class ApplyDecisionsFn(beam.DoFn):
    """(id, {"doc": [doc], "decision": [Decision]}) -> kept doc, or its ``Removal``."""

    def __init__(self, exact: bool, fuzzy: bool) -> None:
        self.exact, self.fuzzy = exact, fuzzy

    def process(self, element):
        _, grouped = element
        for doc in grouped["doc"]:
            decisions = list(grouped["decision"])
            if not decisions:
                for stage, on in (("exact_dedup", self.exact), ("fuzzy_dedup", self.fuzzy)):
                    if on:
                        count(stage, doc.source, "kept")
                yield doc
                continue
            decision = min(decisions, key=lambda d: d.stage != "exact_dedup")  # exact first
            if decision.stage == "fuzzy_dedup" and self.exact:
                count("exact_dedup", doc.source, "kept")
            yield beam.pvalue.TaggedOutput(REMOVED, decision.removal(doc))


class DedupDocuments(beam.PTransform):
    """docs -> ``{"kept", "removed", "groups", "inputs", "decisions"}`` (+ ``"buckets"``,
    ``"rounds"`` with fuzzy dedup): exact dedup, then fuzzy dedup of the exact survivors."""

    def __init__(self, exact: bool = True, fuzzy: FuzzyDedupConfig | None = None,
                 priority: list[str] | None = None, label: str | None = None) -> None:
        super().__init__(label)
        if not exact and (fuzzy is None or not fuzzy.enabled):
            raise ValueError("DedupDocuments: neither exact nor fuzzy dedup is enabled")
        self.exact = exact
        self.fuzzy = fuzzy if fuzzy is not None and fuzzy.enabled else None
        self.priority = priority

    def expand(self, docs):
        records = docs | "Records" >> DedupRecords(self.fuzzy, self.priority)
        decisions, groups, inputs, extra, members = [], [], [], {}, None
        if self.exact:
            ex = records | "Exact" >> ExactDedup()
            decisions.append(ex[DECISIONS])
            groups.append(ex[GROUPS])
            inputs.append(ex[INPUTS])
            members = ex["kept"]
        if self.fuzzy is not None:
            fuzzy_in = records if members is None else {"records": records, "members": members}
            fz = fuzzy_in | "Fuzzy" >> FuzzyDedup(self.fuzzy)
            decisions.append(fz[DECISIONS])
            groups.append(fz[GROUPS])
            inputs.append(fz[INPUTS])
            extra = {BUCKETS: fz[BUCKETS], "rounds": fz["rounds"]}
        all_decisions = decisions | "AllDecisions" >> beam.Flatten()
        out = (
            {"doc": docs | "DocById" >> beam.Map(lambda d: (d.id, d)),
             "decision": all_decisions | "DecisionById" >> beam.Map(lambda d: (d.id, d))}
            | "JoinDecisions" >> beam.CoGroupByKey()
            | "Apply" >> beam.ParDo(ApplyDecisionsFn(self.exact, self.fuzzy is not None))
            .with_outputs(REMOVED, main="kept"))
        return {"kept": out.kept, "removed": out[REMOVED], DECISIONS: all_decisions,
                GROUPS: groups | "AllGroups" >> beam.Flatten(),
                INPUTS: inputs | "AllInputs" >> beam.Flatten(), **extra}

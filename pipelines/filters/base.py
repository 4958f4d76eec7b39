"""The base of the per-document filter steps: keep, or remove with this step's reason.

A filter is configured in one place, its constructor: its config section and the sources it
passes through unchecked (``skip_sources`` in the config); ``chain.ChainFn`` runs it in the read
stage, a test runs it as ``beam.ParDo(fn).with_outputs(REMOVED, main="kept")``.
"""
from __future__ import annotations

from typing import Iterator

import apache_beam as beam

from curation.document import Document, FilterResult, Removal
from pipelines.plumbing.outputs import REMOVED, count
from pipelines.plumbing.timing import timed


class FilterDoFn(beam.DoFn):
    """Base of the per-document filter steps: subclasses implement ``check(doc) -> (doc, result)``.

    Kept documents go to the main output; drops go to ``removed`` as a ``Removal`` of this
    step with the filter's reason, and every outcome is counted.
    """

    stage: str = ""

    def __init__(self, skip_sources=()) -> None:
        self.skip_sources = frozenset(skip_sources)
        """Sources this step passes through unchecked (``skip_sources`` in the config)."""

    def check(self, doc: Document) -> tuple[Document, FilterResult]:
        raise NotImplementedError

    def applies_to(self, doc: Document) -> bool:
        """Whether this stage judges ``doc`` at all; others pass through, counted as skipped."""
        return doc.source not in self.skip_sources

    def removal_detail(self, doc: Document) -> dict:
        """Extra context stored with a removal (e.g. the score and the rule that decided)."""
        return {}

    @timed()
    def process(self, doc: Document) -> Iterator:
        if not self.applies_to(doc):
            count(self.stage, doc.source, "skipped")
            yield doc
            return
        doc, result = self.check(doc)
        if result.keep:
            count(self.stage, doc.source, "kept")
            yield doc
        else:
            count(self.stage, doc.source, "removed", result.reason)
            yield beam.pvalue.TaggedOutput(REMOVED, Removal(
                doc, self.stage, result.reason or "unknown", self.removal_detail(doc)))

